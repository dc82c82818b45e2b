"""One episode record from the rollout to the learner: an episode played by the RL agent through a real env
server, written by the trajectory writer, read back and turned into learner input has the same token ids,
logprobs and pixels, and the inspector shows it."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from mintgym.buffer.types import Sample
from mintgym.client.aio import AsyncEnvClient
from mintgym.inference import make_engine
from mintgym.rollout.agents import make_episode_agent
from mintgym.rollout.episode import run_episode
from mintgym.rollout.recording import RecordingEngine
from mintgym.runtime.fleet import start_env_servers
from mintgym.runtime.local import LocalProvider
from mintgym.trajectory.store import load_trajectory, write_trajectory
from mintgym.trajectory.types import StepRecord


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    path = build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)
    with start_env_servers(LocalProvider(), "null", 1) as servers:
        yield str(path), servers.urls[0]


async def test_a_played_episode_reaches_the_learner_unchanged_through_its_file(served, tmp_path):
    from mintgym.config import RunConfig
    from mintgym.models.loading import load_model, load_processor
    from mintgym.trainer.learner import Learner

    path, url = served
    recorder = RecordingEngine(make_engine("hf", model_path=path, seed=5))
    agent = recorder.marking(make_episode_agent("answer", {"choices": {"null": ["no", "ok"]}}, recorder,
                                                max_new_tokens=3, rng=random.Random(0)))
    async with AsyncEnvClient(url, encoding="raw") as client:
        session = await client.session()
        episode = await run_episode(session, agent, "null/echo", seed=3, trajectory_id="ep-0")
        await session.close()
    recorder.attach(episode)
    played = Sample.from_episode(episode, worker_id=0)
    [turn] = played.turns
    assert turn.step is episode.steps[0]  # a view of the record, not a copy
    assert turn.response_token_ids and len(turn.logprobs) == len(turn.response_token_ids)
    assert turn.policy_version == recorder.policy_version
    [image] = turn.images
    assert isinstance(image, np.ndarray) and image.shape == (112, 112, 3)
    step = episode.steps[0]
    assert step.action is not None and step.terminated and not step.truncated
    assert step.reward == played.reward == episode.total_reward

    folder = write_trajectory(tmp_path / "run", episode)
    loaded = load_trajectory(folder)
    [on_disk] = loaded.steps
    assert on_disk.prompt_images == ["frames/0000.png"] and on_disk.temperature == turn.temperature
    back = Sample.from_episode(loaded, folder=folder)
    [again] = back.turns
    assert (again.prompt_token_ids, again.response_token_ids, again.logprobs, again.policy_version) == (
        turn.prompt_token_ids, turn.response_token_ids, turn.logprobs, turn.policy_version)
    assert (on_disk.action, on_disk.error, on_disk.reward, on_disk.terminated, on_disk.truncated) == (
        step.action, step.error, step.reward, step.terminated, step.truncated)
    assert (back.reward, back.status, back.task_id, back.seed) == (played.reward, played.status, "null/echo", 3)

    learner = Learner(load_model(path), load_processor(path),
                      RunConfig.from_dict({"model": {"path": path}, "tasks": [{"id": "null/echo"}]}).train)
    live, read = learner.sequence_input(turn, "live"), learner.sequence_input(again, "read back")
    assert live.token_ids == read.token_ids and live.prompt_length == read.prompt_length
    assert torch.equal(live.pixel_values, read.pixel_values) and torch.equal(live.image_grid_thw, read.image_grid_thw)

    from mintgym.trajectory.inspector import write_run_pages

    page = write_run_pages(tmp_path / "run")
    assert page.exists()


async def test_a_step_records_when_its_model_answer_came(served):
    """``timings["answered"]``: seconds from the episode's start to the answer; the simulated step time of
    the benchmarks waits after it, so the episode runs on at least that long after its first answer."""
    path, url = served
    recorder = RecordingEngine(make_engine("hf", model_path=path, seed=5))
    agent = recorder.marking(make_episode_agent("answer", {"choices": {"null": ["no", "ok"]}}, recorder,
                                                simulated_step_seconds=(0.3, 0.0), rng=random.Random(0)))
    async with AsyncEnvClient(url, encoding="raw") as client:
        session = await client.session()
        episode = await run_episode(session, agent, "null/echo", seed=3, trajectory_id="ep-1")
        await session.close()
    recorder.attach(episode)
    answered = episode.steps[0].timings["answered"]
    assert 0 < answered < episode.wall_seconds
    assert 0.3 <= Sample.from_episode(episode).seconds_after_first_answer <= episode.wall_seconds - answered + 1e-6


def test_a_step_with_pixels_is_written_by_the_writer_only(tmp_path):
    record = StepRecord(index=2, frame_id="f", screenshot="", screen_size=(4, 4), action=None,
                        prompt_images=[np.zeros((4, 4, 3), np.uint8)])
    with pytest.raises(ValueError, match="step 2: prompt images are still pixels"):
        record.to_json()


def test_an_episode_without_a_model_call_is_not_a_sample():
    from mintgym.trajectory.types import Trajectory

    episode = Trajectory(id="scripted", task_id="null/echo", domain="null", instruction="", agent="oracle",
                         steps=[StepRecord(index=0, frame_id="f", screenshot="", screen_size=(4, 4), action=None)])
    with pytest.raises(ValueError, match="episode scripted: no step made a model call"):
        Sample.from_episode(episode)


async def test_a_step_with_two_engine_calls_is_refused_and_one_without_is_kept(served):
    from mintgym.inference import GenerationRequest, SamplingParams
    from mintgym.trajectory.types import Trajectory

    path, _url = served
    recorder = RecordingEngine(make_engine("hf", model_path=path, seed=1))
    request = GenerationRequest([{"role": "user", "content": "hi"}], SamplingParams(max_new_tokens=2))
    steps = [StepRecord(index=i, frame_id=f"f{i}", screenshot="", screen_size=(4, 4), action=None) for i in range(2)]
    recorder.begin_step()
    [gen] = await recorder.agenerate([request])
    recorder.begin_step()  # step 1: a scripted done(), no model call
    episode = Trajectory(id="e", task_id="null/echo", domain="null", instruction="", agent="answer", steps=steps)
    recorder.attach(episode)
    assert steps[0].response_token_ids == list(gen.response_token_ids) and steps[0].prompt_images == []
    assert steps[1].response_token_ids is None
    assert len(Sample.from_episode(episode).turns) == 1
    retried = RecordingEngine(recorder.inner)
    retried.begin_step()
    await retried.agenerate([request])
    await retried.agenerate([request])  # an agent that asked again on the same step
    with pytest.raises(ValueError, match="episode e step 0: 2 engine calls; RL trains one call per step"):
        retried.attach(episode)
