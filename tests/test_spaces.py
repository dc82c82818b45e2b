"""The spaces: an env made for a task keeps its observation space; a domain env follows a new viewport; action
samples are actions each domain's set accepts on the env's screen; volatile info fields leave gymnasium's info."""

from types import SimpleNamespace

import numpy as np
import pytest

from mintgym.action_spaces import DOMAIN_SETS, ActionSet, Click, Done, Python, Wait
from mintgym.spaces import ActionText, FreeText, action_space, fit_screen, gym_info, observation_space
from mintgym.types import Observation


def _env(task_id, size=(160, 210)):
    return SimpleNamespace(screen_size=size, side_channels=("text",), task_id=task_id,
                           observation_space=observation_space(size, ("text",)),
                           action_space=action_space(DOMAIN_SETS["web"], size))


def _frame(width, height):
    return Observation(screenshot=np.zeros((height, width, 3), np.uint8), instruction="", domain="web", step=0,
                       frame_id="e-0")


def test_a_domain_env_follows_a_new_viewport():
    env = _env(None)
    before = env.observation_space
    fit_screen(env, _frame(160, 210))
    assert env.observation_space is before  # same size: untouched
    fit_screen(env, _frame(1280, 720))
    assert env.screen_size == (1280, 720)
    assert env.observation_space["screenshot"].shape == (720, 1280, 3)
    assert "text" in env.observation_space.spaces
    assert env.action_space.screen_size == (1280, 720)


def test_an_env_made_for_a_task_refuses_another_screen():
    env = _env("miniwob/click-test")
    with pytest.raises(ValueError, match="1280x720 frame does not fit the observation space of the env made for "
                                         "'miniwob/click-test' \\(160x210 frames\\)"):
        fit_screen(env, _frame(1280, 720))
    assert env.observation_space["screenshot"].shape == (210, 160, 3)


@pytest.mark.parametrize("name", sorted(DOMAIN_SETS))
def test_samples_are_actions_the_set_accepts_on_the_screen(name):
    action_set = DOMAIN_SETS[name]
    space = ActionText(action_set, (7, 5), seed=3)
    kinds = set()
    for _ in range(300):
        text = space.sample()
        assert space.contains(text) and len(text) < 100
        kinds.add(action_set.parse(text, screen_size=(7, 5)).type)  # parses, every point on the 7x5 screen
    assert kinds and "done" not in kinds
    first, second = ActionText(action_set, (7, 5), seed=3), ActionText(action_set, (7, 5), seed=3)
    assert [first.sample() for _ in range(5)] == [second.sample() for _ in range(5)]  # seeded like any space


def test_a_set_without_pointer_actions_samples_a_wait_or_says_it_cannot():
    assert ActionText(ActionSet("answers", (Python, Wait, Done)), (10, 10), seed=0).sample() == "wait(seconds=0.0)"
    with pytest.raises(ValueError, match="action set 'code' has no action to sample"):
        ActionText(ActionSet("code", (Python, Done)), (10, 10), seed=0).sample()
    assert ActionText(ActionSet("clicks", (Click, Done)), (10, 10), seed=0).sample().startswith("click(")


def test_without_a_set_the_action_space_is_free_text():
    space = action_space()
    assert isinstance(space, FreeText) and not isinstance(space, ActionText)
    assert space.contains("anything") and not space.contains("")
    with pytest.raises(ValueError, match="no mask"):
        ActionText(DOMAIN_SETS["web"], (10, 10)).sample(mask=(None, None))


def test_volatile_info_fields_leave_and_the_callers_info_keeps_them():
    info = {"frame_id": "f-1", "seed": 3, "miniwob": {"env_reward": 0.97, "raw_reward": 1.0}}
    assert gym_info(info, ("miniwob.env_reward", "absent.path")) == {"seed": 3, "miniwob": {"raw_reward": 1.0}}
    assert info["miniwob"]["env_reward"] == 0.97
