"""The observation space follows the frame size when a reset lands on a task with another viewport."""

from types import SimpleNamespace

import numpy as np

from mintgym.spaces import follow_screen, observation_space


def test_space_follows_a_new_viewport():
    env = SimpleNamespace(screen_size=(160, 210), side_channels=("text",),
                          observation_space=observation_space((160, 210), ("text",)))
    before = env.observation_space
    follow_screen(env, (160, 210))
    assert env.observation_space is before  # same size: untouched
    follow_screen(env, (1280, 720))
    assert env.screen_size == (1280, 720)
    assert env.observation_space["screenshot"].shape == (720, 1280, 3)
    assert "text" in env.observation_space.spaces
    assert env.observation_space["screenshot"].contains(np.zeros((720, 1280, 3), dtype=np.uint8))
