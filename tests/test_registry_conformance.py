"""Every registered task, across every pack: loadable, well-formed, and oracle coverage where the issue
asks for it. The oracles themselves run in each domain's tests (mintgym.testing.check_task)."""

import re
import warnings

import pytest

from mintgym.env import registration

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ALL = registration.tasks()


def test_no_pack_is_broken():
    assert registration.broken_packs == {}


def test_every_domain_has_tasks():
    domains = {t.domain for t in ALL}
    for domain in ("pytool", "web", "desktop", "android", "null"):
        assert domain in domains


@pytest.mark.parametrize("task", ALL, ids=lambda t: t.id)
def test_task_is_well_formed(task):
    assert re.fullmatch(r"[a-z0-9_-]+(/[A-Za-z0-9_.-]+)+", task.id), task.id
    assert task.domain in registration.domains()
    assert task.instruction.strip()
    assert task.max_steps >= 1
    reason = task.unavailable()
    assert reason is None or (isinstance(reason, str) and reason.strip())


@pytest.mark.parametrize("prefix, minimum", [("pytool/", 40), ("webapps/", 25), ("miniwob/", 20),
                                             ("android/", 15)])
def test_oracle_coverage(prefix, minimum):
    with_oracle = [t for t in ALL if t.id.startswith(prefix) and t.has_oracle()]
    assert len(with_oracle) >= minimum, f"{prefix}: {len(with_oracle)} tasks ship an oracle"


def test_osworld_runnable_tasks_ship_oracles():
    runnable = [t for t in ALL if t.id.startswith("osworld/") and t.unavailable() is None]
    assert len(runnable) >= 15
    assert all(t.has_oracle() for t in runnable)
    assert len({t.id.split("/")[1] for t in runnable}) >= 3  # at least three apps
