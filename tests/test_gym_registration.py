"""MintGym's tasks are gymnasium ids right after ``import mintgym``, in either import order, without listing them
at import; ``gymnasium.make`` of one task per domain passes gymnasium's own env checker."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import mintgym  # noqa: F401  (puts MintGym's tasks in gymnasium's registry)
from mintgym.env import declarations, registration
from mintgym.environments.null import EchoTask
from mintgym.gym_registration import LazyRegistry, gym_id, lazy_registry


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("order", ["mintgym, gymnasium", "gymnasium, mintgym"])
def test_ids_resolve_after_import_in_either_order_and_import_lists_no_task(order):
    found = _fresh(f"""
import json, sys
import {order}
from mintgym.env import registration
listed_at_import = registration._tasks is not None
cartpole = gymnasium.make("CartPole-v1")  # another namespace's make lists no MintGym task either
listed_by_other_make = registration._tasks is not None
spec = gymnasium.spec("mintgym/miniwob.click-test")
shown = gymnasium.pprint_registry(disable_print=True)
print(json.dumps({{"lazy": type(gymnasium.registry).__name__, "same": gymnasium.registry is gymnasium.envs.registry
                   is sys.modules["gymnasium.envs.registration"].registry, "at_import": listed_at_import,
                   "other_make": listed_by_other_make, "steps": spec.max_episode_steps, "kwargs": spec.kwargs,
                   "shown": "mintgym/miniwob.click-test" in shown.split(),
                   "cartpole": "CartPole-v1" in gymnasium.registry}}))
""")
    assert found == {"lazy": "LazyRegistry", "same": True, "at_import": False, "other_make": False, "steps": 25,
                     "kwargs": {"task_id": "miniwob/click-test"}, "shown": True, "cartpole": True}


def test_import_mintgym_imports_no_gymnasium():
    found = _fresh("import json, sys, mintgym; print(json.dumps(sorted(m for m in sys.modules if "
                   "m.startswith('gymnasium'))))")
    assert found == []


def test_every_task_is_listed_under_the_mintgym_namespace():
    ids = [k for k in gymnasium.registry if k.startswith("mintgym/")]
    assert len(ids) == len(registration.tasks())
    assert "mintgym/pytool.count-shapes-0" in ids and "mintgym/desktop.terminal-file-v0" in ids
    assert any(i.startswith("mintgym/osworld.chrome.") for i in ids)
    spec = gymnasium.spec("mintgym/desktop.terminal-file-v0")
    assert (spec.namespace, spec.name, spec.version) == ("mintgym", "desktop.terminal-file", 0)
    assert spec.vector_entry_point == "mintgym.gym_registration:make_vector_env"


def test_gym_ids_join_pack_and_name_with_dots():
    assert gym_id("miniwob/click-test") == "mintgym/miniwob.click-test"
    assert gym_id("web/mine/sign-up-v2") == "mintgym/mine.sign-up-v2"
    assert gym_id("osworld/gimp/7a4deb26") == "mintgym/osworld.gimp.7a4deb26"


@pytest.fixture
def late_pack():
    """A pack registered after gymnasium's registry was first listed; forgotten afterwards."""
    registration.register_tasks("test-gymcheck", lambda: [EchoTask(id="null/echo-late", instruction="x", max_steps=3)])
    yield
    registration._pack_refs.pop("test-gymcheck")
    registration._tasks.pop("null/echo-late", None)
    gymnasium.registry.pop("mintgym/null.echo-late", None)


def test_a_pack_added_later_is_found_on_its_first_lookup(late_pack):
    assert "mintgym/null.echo-late" in gymnasium.registry  # a miss in the namespace looks again
    assert gymnasium.spec("mintgym/null.echo-late").max_episode_steps == 3


def test_the_replaced_dict_stays_equal_and_collisions_are_reported():
    old = {"Other-v0": "spec"}
    lazy = LazyRegistry(old, mirror=old)
    lazy["Mine-v1"] = "mine"
    assert old == {"Other-v0": "spec", "Mine-v1": "mine"}
    del lazy["Mine-v1"]
    assert "Mine-v1" not in old
    lazy.sync()
    assert old.keys() == dict.keys(lazy) and "mintgym/null.echo" in old
    taken = LazyRegistry({})
    dict.__setitem__(taken, "mintgym/null.echo", gymnasium.spec("mintgym/pytool.count-shapes-0"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        taken.sync()
    assert taken.collisions["mintgym/null.echo"] == ("pytool/count-shapes-0", "null/echo")
    assert any("null/echo" in str(w.message) for w in caught)
    assert lazy_registry() is gymnasium.registry  # installing twice keeps the one registry


def test_render_mode_other_than_rgb_array_is_refused():
    with pytest.raises(ValueError, match="render 'rgb_array'"):
        gymnasium.make("mintgym/null.echo", render_mode="human_list")


@pytest.mark.parametrize("env_id, shape", [
    ("mintgym/null.echo", (720, 1280, 3)),
    ("mintgym/pytool.count-shapes-0", (768, 1024, 3)),
    pytest.param("mintgym/miniwob.click-test", (210, 160, 3), marks=pytest.mark.web),
    pytest.param("mintgym/webapps.shop-cart-kettle", (600, 800, 3), marks=pytest.mark.web),
    pytest.param("mintgym/desktop.terminal-file-v0", (720, 1280, 3), marks=pytest.mark.desktop),
    pytest.param("mintgym/android.ClockAlarmCreate", None, marks=pytest.mark.skipif(
        declarations.unavailable("android") is not None, reason=f"android: {declarations.unavailable('android')}")),
])
def test_gymnasium_make_passes_the_env_checker(env_id, shape):
    env = gymnasium.make(env_id)
    try:
        task = registration.task(env.spec.kwargs["task_id"])
        assert env.spec.id == env_id and env.spec.max_episode_steps == task.max_steps
        assert env.render_mode == "rgb_array"
        before = env.observation_space
        if shape is not None:  # declared before any reset: the task's screen
            assert before["screenshot"].shape == shape
        check_env(env.unwrapped)  # resets, steps with action_space samples, makes from the spec
        obs, _ = env.reset(seed=0)
        assert env.observation_space is before and before.contains(obs)
        assert env.render().shape == obs["screenshot"].shape
    finally:
        env.close()
