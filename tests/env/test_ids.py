"""One task-id scheme, ``[domain/]pack/name[-vN]``: parsed by one function, every registered id fits it,
and an unknown id is one line with close matches and why its pack may be missing."""

from __future__ import annotations

import json
import warnings

import pytest

from mintgym.env import registration
from mintgym.env.ids import TaskId, parse_task_id
from mintgym.errors import RegistrationError

DOMAINS = ("web", "desktop", "pytool", "null", "android")


@pytest.mark.parametrize("text, parsed", [
    ("web/mine/sign-up-v2", TaskId("web", "mine", "sign-up", 2)),
    ("miniwob/click-button", TaskId(None, "miniwob", "click-button", None)),
    ("osworld/gimp/7a4deb26-1c19", TaskId(None, "osworld", "gimp/7a4deb26-1c19", None)),
    ("desktop/osworld/gimp/7a4deb26", TaskId("desktop", "osworld", "gimp/7a4deb26", None)),
    ("desktop/terminal-file-v0", TaskId(None, "desktop", "terminal-file", 0)),
    ("pytool/count-shapes-0", TaskId(None, "pytool", "count-shapes-0", None)),
    ("android/OpenAppTaskEval-camera", TaskId(None, "android", "OpenAppTaskEval-camera", None)),
])
def test_parse(text, parsed):
    assert parse_task_id(text, DOMAINS) == parsed


def test_spellings():
    parsed = parse_task_id("miniwob/click-button", DOMAINS)
    assert parsed.canonical("web") == "web/miniwob/click-button" and parsed.short() == "miniwob/click-button"
    versioned = parse_task_id("web/mine/form-v3", DOMAINS)
    assert versioned.unversioned() == "web/mine/form" and versioned.short() == "mine/form-v3"


@pytest.mark.parametrize("text, said", [
    ("", "non-empty string"),
    ("click-button", "has no pack"),
    ("web//x", "segment ''"),
    ("web/mine/sign up", "segment 'sign up'"),
    ("web/-x/y", "segment '-x'"),
])
def test_malformed_ids_are_one_line(text, said):
    with pytest.raises(RegistrationError, match=said) as err:
        parse_task_id(text, DOMAINS)
    assert "\n" not in str(err.value)


def test_every_registered_id_fits_the_scheme_and_has_one_canonical_form():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = registration.tasks()
    canonical = [registration.canonical_id(t) for t in every]
    assert len(set(canonical)) == len(every)
    for task, long in zip(every, canonical, strict=True):
        assert long.startswith(task.domain + "/")
        assert registration.task(long) is task


def test_unknown_ids_say_what_is_close_and_why_a_pack_may_be_missing(monkeypatch):
    with pytest.raises(RegistrationError) as err:
        registration.task("miniwob/click-buton")
    assert "did you mean miniwob/click-button" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(RegistrationError) as err:
        registration.task("mine/green-button")
    message = str(err.value)
    assert "no registered pack has ids under 'mine'" in message and "--packs" in message
    assert "register_tasks() in another process" in message and "\n" not in message
    monkeypatch.setenv(registration.UNFORWARDED_ENV, json.dumps({"mine": "a lambda cannot be imported"}))
    with pytest.raises(RegistrationError, match="could not be forwarded: mine: a lambda cannot be imported"):
        registration.task("mine/green-button")


def test_a_pack_with_an_id_outside_the_scheme_does_not_load():
    from mintgym.environments.null import EchoTask

    with pytest.warns(UserWarning, match="has no pack"):
        registration.register_tasks("test-bad-id", lambda: [EchoTask(id="echo-without-pack", instruction="x")])
    try:
        assert "has no pack" in registration.broken_packs["test-bad-id"]
        with pytest.raises(RegistrationError):
            registration.task("echo-without-pack")
    finally:
        registration._pack_refs.pop("test-bad-id")
        registration._runtime_packs.discard("test-bad-id")
        registration.broken_packs.pop("test-bad-id")
