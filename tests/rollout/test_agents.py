"""mintgym.rollout.agents: the agent each episode gets, by kind, and the benchmarks' simulated step time."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from mintgym.rollout.agents import SimulatedLatency, agent_factory, make_episode_agent


def test_answer_agent_takes_the_rollout_sampling_unless_its_options_set_it():
    agent = make_episode_agent("answer", {"choices": {"pytool": ["0", "1"]}}, None, max_new_tokens=2,
                               temperature=0.7)
    assert agent.sampling.max_new_tokens == 2 and agent.sampling.temperature == 0.7
    own = make_episode_agent("answer", {"choices": {"pytool": ["0", "1"]}, "max_new_tokens": 5}, None,
                             max_new_tokens=2)
    assert own.sampling.max_new_tokens == 5


def test_vlm_agent_in_training_samples_apart_and_never_retries(tmp_path):
    from mintgym.inference import make_engine
    from mintgym.models.tiny import build_tiny_vlm

    engine = make_engine("hf", model_path=build_tiny_vlm(tmp_path / "tiny", seed=0))
    agent = make_episode_agent("vlm", {}, engine, max_new_tokens=32, temperature=1.0)
    assert agent.sampling.max_new_tokens == 32 and agent.sampling.temperature == 1.0
    assert agent.retries == 0 and agent.seeded is False  # the G episodes of a group share their task's seed
    assert make_episode_agent("vlm", {"retries": 2}, engine).retries == 2
    # its options may set its own sampling, as the answer agent's may (they used to clash with the rollout's)
    own = make_episode_agent("vlm", {"temperature": 0.5, "max_new_tokens": 8, "top_p": 0.9}, engine,
                             max_new_tokens=32, temperature=1.0)
    assert (own.sampling.max_new_tokens, own.sampling.temperature, own.sampling.top_p) == (8, 0.5, 0.9)
    assert make_episode_agent("vlm", {"temperature": 0.0}, engine, max_new_tokens=32).sampling.max_new_tokens == 32


def test_an_unknown_kind_is_one_clear_error_naming_the_registered_ones():
    with pytest.raises(ValueError,
                       match=r"unknown agent 'planner'; choose one of answer, mistaken-oracle, random, scripted, vlm"):
        make_episode_agent("planner", {}, None)


def test_a_registered_agent_of_a_package_is_found_by_name_as_a_built_in_is(monkeypatch):
    """The ``mintgym.agents`` entry points are the one list of agents: one added there (as an installed
    package's is) is made by the rollout's factory by name, with the rollout's sampling."""
    import importlib.metadata

    import mintgym.agents

    real = importlib.metadata.entry_points

    def with_mine(**kwargs):
        found = list(real(**kwargs))
        if kwargs.get("group") == mintgym.agents.AGENT_GROUP:
            found.append(importlib.metadata.EntryPoint("echoer", "tests.rollout.test_agents:Echoer",
                                                       mintgym.agents.AGENT_GROUP))
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", with_mine)
    agent = make_episode_agent("echoer", {"word": "hi"}, None, max_new_tokens=3, temperature=0.5)
    assert isinstance(agent, Echoer) and (agent.word, agent.max_new_tokens, agent.temperature) == ("hi", 3, 0.5)


class Echoer:
    """A user's agent, registered under the mintgym.agents entry points by the test above."""

    name = "echoer"

    def __init__(self, engine=None, *, word: str, max_new_tokens: int, temperature: float):
        self.word, self.max_new_tokens, self.temperature = word, max_new_tokens, temperature

    async def start(self, context):
        pass

    async def act(self, observation):
        raise NotImplementedError


def test_simulated_latency_has_the_mean_it_was_given():
    inner = make_episode_agent("answer", {"choices": {"pytool": ["0"]}}, None)
    wrapped = make_episode_agent("answer", {"choices": {"pytool": ["0"]}}, None, simulated_step_seconds=(2.0, 0.5),
                                 rng=random.Random(0))
    assert isinstance(wrapped, SimulatedLatency) and wrapped.name == inner.name
    # lognormal mean exp(mu + sigma^2 / 2)
    assert math.isclose(math.exp(wrapped.mu + wrapped.sigma ** 2 / 2), 2.0)


def test_simulated_latency_waits_after_the_inner_action(monkeypatch):
    class Inner:
        name = "inner"

        async def start(self, context):
            pass

        async def act(self, observation):
            order.append("act")
            return "step"

    order: list = []
    real_sleep = asyncio.sleep

    async def record(seconds):
        order.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", record)
    wrapper = SimulatedLatency(Inner(), 0.01, 0.0, random.Random(0))
    assert asyncio.run(wrapper.act(None)) == "step"
    assert order[0] == "act" and len(order) == 2 and math.isclose(order[1], 0.01)


def test_agent_factory_makes_a_new_agent_each_call():
    make = agent_factory("answer", {"choices": {"pytool": ["0", "1"]}}, None, max_new_tokens=1)
    first, second = make(), make()
    assert first is not second and first.sampling.max_new_tokens == 1


def test_an_evaluation_samples_at_its_own_temperature_whatever_the_agent_options_say():
    """``eval.temperature: 0`` with ``agent.options.temperature: 1`` played sampled episodes while
    final_eval.json reported greedy ones: the options' temperature won."""
    from mintgym.inference import SamplingParams
    from mintgym.rollout.agents import with_temperature

    choices = {"choices": {"pytool": ["0", "1"]}}
    answer = make_episode_agent("answer", with_temperature({**choices, "temperature": 1.0}, 0.0), None,
                                temperature=0.0)
    assert answer.sampling.temperature == 0.0
    sampling = SamplingParams(max_new_tokens=8, temperature=0.9)
    assert with_temperature({"sampling": sampling}, 0.0)["sampling"] == SamplingParams(max_new_tokens=8,
                                                                                     temperature=0.0)
    assert with_temperature({"sampling": {"temperature": 0.9, "top_p": 0.5}}, 0.2)["sampling"] == {
        "temperature": 0.2, "top_p": 0.5}
    assert with_temperature({"retries": 0}, 0.0) == {"retries": 0}
