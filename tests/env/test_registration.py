"""The registry: entry points, run-time registration, clear lookup errors, broken packs reported."""

import pytest

from mintgym.env import registration
from mintgym.environments.null import EchoTask
from mintgym.errors import RegistrationError


def test_domain_and_task_resolution():
    assert registration.resolve("null") == ("null", None)
    domain, task = registration.resolve("null/echo")
    assert domain == "null" and task.id == "null/echo"


def test_unknown_domain_lists_registered():
    with pytest.raises(RegistrationError, match="registered: .*null"):
        registration.host_class("nope")


def test_runtime_pack_and_duplicate_ids():
    registration.register_tasks("test-pack", lambda: [EchoTask(id="null/echo-test", instruction="x")])
    assert registration.task("null/echo-test").instruction == "x"
    with pytest.raises(RegistrationError, match="task id 'null/echo' registered twice"):
        registration.register_tasks("test-dup", lambda: [EchoTask(id="null/echo", instruction="again")])
    assert registration.task("null/echo").instruction != "again"


@pytest.fixture(autouse=True)
def forget_test_packs():
    """Packs registered here are removed afterwards, so other tests see the real registry."""
    yield
    for pack in [p for p in registration._pack_refs if p.startswith("test-")]:
        registration._pack_refs.pop(pack)
        registration.broken_packs.pop(pack, None)
    if registration._tasks is not None:
        registration._tasks.pop("null/echo-test", None)


def test_a_pack_whose_extra_is_not_installed_is_recorded_quietly(recwarn):
    def needs_xlib():
        raise ModuleNotFoundError("No module named 'Xlib'", name="Xlib")

    registration.register_tasks("test-no-extra", needs_xlib)
    registration.tasks()
    assert "Xlib" in registration.broken_packs["test-no-extra"]
    assert not [w for w in recwarn if "test-no-extra" in str(w.message)]  # `mintgym envs` says it, no warning


def test_broken_pack_is_recorded_not_fatal():
    def broken():
        raise ImportError("needs an extra")

    with pytest.warns(UserWarning, match="failed to load: needs an extra"):
        registration.register_tasks("test-broken", broken)
    assert "needs an extra" in registration.broken_packs["test-broken"]
    assert registration.task("null/echo")  # others still work
    with pytest.raises(RegistrationError, match="test-broken"):
        registration.task("does/not-exist")
