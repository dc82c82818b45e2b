"""The rollout worker body against a real null env server, a real tiny-model engine and a buffer actor.

Checks what the trainer relies on: the turns hold the engine's own prompt and sampled token ids (nothing
re-tokenized), the screenshots travel as object-store references, weights published through the
filesystem broadcast are loaded and acknowledged before the next group, and admission is enforced; a
group is admitted at its first model call (after its resets), and every call samples with the newest weights.
"""

import dataclasses
import time

import numpy as np
import pytest
import ray
import torch

from mintgym.buffer.store import TrajectoryBuffer
from mintgym.config import HFEngineConfig
from mintgym.rollout.ray_worker import RolloutWorker
from mintgym.runtime.local import LocalProvider
from mintgym.weights import FilesystemBroadcast


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from mintgym.models.tiny import build_tiny_vlm

    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    provider = LocalProvider()
    handle = provider.start("null")
    provider.wait_ready(handle, 120)
    path = build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "m", vocab_size=256)
    yield path, handle.base_url
    provider.stop(handle)
    ray.shutdown()


async def test_worker_pushes_exact_turns_and_loads_published_weights(setup, tmp_path, worker_spec):
    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0,
                                                                     own_images=True)
    weights = FilesystemBroadcast(tmp_path / "w")
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]},
                       agent={"options": {"choices": {"null": ["no", "ok"]}}},
                       rollout={"group_size": 3, "groups_in_flight": 1, "max_new_tokens": 2})
    worker = RolloutWorker(spec, buffer, weights)
    try:
        await worker.run(max_groups=1)
        batch = await buffer.get_batch.remote(1, 0, 5.0)
        [group] = batch.groups
        assert group.seed == 3 and len(group.samples) == 3 and group.policy_version == 0
        engine = worker.engine
        for sample in group.samples:
            [turn] = sample.turns
            assert len(turn.logprobs) == len(turn.response_token_ids) <= 2
            [ref] = turn.images
            assert isinstance(ref, ray.ObjectRef)
            image = ray.get(ref)
            assert isinstance(image, np.ndarray) and image.shape == (112, 112, 3)
            image_tokens = sum(t == engine.model.config.image_token_id for t in turn.prompt_token_ids)
            assert image_tokens == 16  # 112x112 -> 8x8 patches -> 16 merged tokens
            # the response ids are the sampled ones: decoding them gives the agent's text
            assert sample.reward in (0.0, 1.0)
        # admission: at max_lag 0 with the trainer still at version 0 and one group queued-and-consumed,
        # the next group is planned for version 1, which version-0 weights may not serve
        assert await buffer.admit.remote(0, 0) is None
        # publish version 1: the worker loads it before its next group and acknowledges it
        state = {k: v + 0.01 for k, v in engine.model.state_dict().items()}
        weights.send(1, state)
        await buffer.set_trainer_version.remote(1)
        await worker.run(max_groups=1)
        assert engine.policy_version == 1 and worker.stats["weight_loads"] == 1
        assert weights.acks()[0][0] == 1
        batch = await buffer.get_batch.remote(1, 1, 5.0)
        assert batch.groups[0].policy_version == 1
        first = next(iter(engine.model.state_dict().values()))
        assert torch.equal(first, next(iter(state.values())))
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_the_model_calls_of_a_groups_episodes_share_generate_calls(setup, tmp_path, worker_spec):
    """The G episodes of a group ask for their decision at once, one request each; with the hf engine they
    are run as one batch (up to its max_batch_size), not G generate calls one after another (which put
    G forward passes on every group's critical path)."""
    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=None)
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]},
                       agent={"options": {"choices": {"null": ["no", "ok"]}}},
                       rollout={"group_size": 6, "groups_in_flight": 1, "max_new_tokens": 1},
                       engine={"options": {"max_batch_size": 4}})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        await worker._setup()
        sizes = []
        generate = worker.engine.generate

        def slow_generate(requests):
            # a generate that takes 0.5 s, as a real model's does: calls arriving meanwhile queue for the next
            # batch, so the test does not hang on the 10 ms batching window of a loaded CI box (it flaked there)
            sizes.append(len(requests))
            time.sleep(0.5)
            return generate(requests)

        worker.engine.generate = slow_generate
        await worker.run(max_groups=1)
        assert sum(sizes) == 6 and max(sizes) == 4 and len(sizes) <= 3, sizes  # 4 + 2 (or 1 + 4 + 1)
        batch = await buffer.get_batch.remote(1, 0, 5.0)
        assert len(batch.groups[0].samples) == 6
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_pushed_images_outlive_the_worker_that_made_them(setup, tmp_path, worker_spec):
    """A group pushed just before its worker dies still resolves: its images are owned by the buffer.

    (Regression: CI lost a run to OwnerDiedError when the worker itself had put the images.)
    """
    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=None,
                                                                     own_images=True)
    spec = worker_spec(path, [("null/echo", [1], "null")], {"null": [url]},
                       agent={"options": {"choices": {"null": ["no", "ok"]}}},
                       rollout={"group_size": 2, "groups_in_flight": 1, "max_new_tokens": 1})
    actor = ray.remote(RolloutWorker).options(num_cpus=0, max_restarts=0).remote(
        spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        await actor.run.remote(max_groups=1)
        ray.kill(actor, no_restart=True)
        batch = await buffer.get_batch.remote(1, 0, 5.0)
        for sample in batch.groups[0].samples:
            [ref] = sample.turns[0].images
            assert ray.get(ref, timeout=30).shape == (112, 112, 3)
    finally:
        ray.kill(buffer)


def test_a_worker_actor_tunes_its_own_allocator(setup, tmp_path, worker_spec):
    from mintgym.allocator import MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES

    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0)
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]})
    actor = ray.remote(RolloutWorker).options(num_cpus=0).remote(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        status = ray.get(actor.status.remote(), timeout=60)
        assert status["malloc"] == {"MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD_BYTES,
                                    "MALLOC_TRIM_THRESHOLD_": TRIM_THRESHOLD_BYTES}
    finally:
        ray.kill(actor)
        ray.kill(buffer)


class _PublishOnAdmit(TrajectoryBuffer):
    """A buffer that, right after granting an admission, publishes weights ``version`` (a trainer step
    ending between a group's admission and its model calls)."""

    def __init__(self, *args, folder, version, state, **kwargs):
        super().__init__(*args, **kwargs)
        self.folder, self.version, self.state = folder, version, state

    async def admit(self, worker_id, policy_version, domain=None):
        reservation = await super().admit(worker_id, policy_version, domain)
        if reservation is not None and self.version is not None:
            FilesystemBroadcast(self.folder).send(self.version, self.state)
            self.version = None
        return reservation


async def test_a_group_samples_with_weights_published_after_its_admission(setup, tmp_path, worker_spec):
    """The turn's version is the one its model call used: weights that arrive between the group's
    admission and its calls are loaded first, so the group's staleness counts from the call."""
    path, url = setup
    from mintgym.inference import make_engine

    folder = tmp_path / "w"
    weights = FilesystemBroadcast(folder)
    state = {k: (v + 0.01).numpy() for k, v in make_engine("hf", model_path=path).model.state_dict().items()}
    buffer = ray.remote(_PublishOnAdmit).options(num_cpus=0).remote(
        ["null"], groups_per_step=1, max_lag=None, own_images=True, folder=str(folder), version=1, state=state)
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]},
                       agent={"options": {"choices": {"null": ["no", "ok"]}}},
                       rollout={"group_size": 2, "groups_in_flight": 1, "max_new_tokens": 1})
    worker = RolloutWorker(spec, buffer, weights)
    try:
        await worker.run(max_groups=1)
        batch = await buffer.get_batch.remote(1, 1, 5.0)
        [group] = batch.groups
        assert [t.policy_version for s in group.samples for t in s.turns] == [1, 1]
        assert worker.engine.policy_version == 1 and weights.acks()[0][0] == 1
        counts = (await buffer.stats.remote())["counts"]
        assert counts["admitted"] == 1 and counts["pushed"] == 1
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_a_group_whose_resets_fail_takes_no_reservation(setup, tmp_path, worker_spec):
    """Admission is asked at the group's first model call, after its env resets: a group that never
    reaches one (an unknown task here) holds no reservation and loses none."""
    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0)
    spec = worker_spec(path, [("null/no-such-task", [3], "null")], {"null": [url]},
                       rollout={"group_size": 2, "groups_in_flight": 1})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        await worker.run(max_groups=1)
        counts = (await buffer.stats.remote())["counts"]
        assert counts["admitted"] == 0 and counts["lost"] == 0 and counts["pushed"] == 0
        assert worker.stats["errors"] >= 2 and worker.stats["groups"] == 0 and worker.stats["lost_groups"] == 1
        [(kind, count)] = worker.status()["error_kinds"].items()
        assert kind.startswith("reset failed: RegistrationError:") and "no-such-task" in kind and count == 2
        assert worker.status()["drop_causes"] == {"reset_failed": 1}  # an infrastructure fault: dropped, by cause
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_episodes_whose_prompts_outgrew_the_context_are_pushed_and_trained_on_as_failures(setup, tmp_path,
                                                                                                worker_spec):
    """The vlm agent's second prompt (its first answer summarized) does not fit ``max_model_len``: each
    episode is the agent's failure, reward 0, its first turn kept, and the group is pushed, not dropped."""
    path, url = setup
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]},
                       agent={"kind": "vlm", "options": {"actions": ["click"]}, "max_turns": 3},
                       rollout={"group_size": 2, "groups_in_flight": 1, "max_new_tokens": 4},
                       envs=[{"domain": "null", "session_options": {"width": 32, "height": 32}}])
    prompt = None
    for limit in (None, "first prompt + 1"):
        buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0)
        options = {} if limit is None else {"max_model_len": prompt + 1}
        run = spec.run.model_copy(update={
            "engine": HFEngineConfig(options=options),
            "agent": spec.run.agent.model_copy(update={"max_turns": 1 if limit is None else 3})})
        worker = RolloutWorker(dataclasses.replace(spec, run=run), buffer, FilesystemBroadcast(tmp_path / f"w{prompt}"))
        try:
            await worker.run(max_groups=1)
            [group] = (await buffer.get_batch.remote(1, 0, 30.0)).groups
        finally:
            await worker.close()
            ray.kill(buffer)
        if limit is None:  # the first turn's prompt, the same for every episode of the task and seed
            prompt = len(group.samples[0].turns[0].prompt_token_ids)
            continue
        for sample in group.samples:
            [turn] = sample.turns
            assert sample.status == "failure" and sample.reward == 0.0
            assert sample.episode.extra["fault"] == "context" and len(sample.episode.steps) == 1
            assert len(turn.prompt_token_ids) == prompt and len(turn.response_token_ids) == 1
        status = worker.status()
        assert status["agent_failures"] == 2 and status["errors"] == status["lost_groups"] == 0
        assert status["drop_causes"] == {} and status["groups"] == 1


async def test_a_worker_stopped_while_denied_ends_its_group_unpushed(setup, tmp_path, worker_spec):
    """Stopping a worker whose group waits for admission ends the group without a push or a reservation."""
    import asyncio

    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=0,
                                                                     admission_hold=0.0)
    assert await buffer.admit.remote(9, 0) is not None  # another worker's group fills version 0
    spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [url]},
                       agent={"options": {"choices": {"null": ["no", "ok"]}}},
                       rollout={"group_size": 2, "groups_in_flight": 1})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        run = asyncio.ensure_future(worker.run(max_groups=1))
        while worker.stats["denied"] < 3:
            await asyncio.sleep(0.05)
        worker.stop()
        status = await asyncio.wait_for(run, 30)
        assert status["groups"] == 0 and status["errors"] >= 2
        counts = (await buffer.stats.remote())["counts"]
        assert counts["admitted"] == 1 and counts["pushed"] == 0 and counts["lost"] == 0
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_a_worker_starts_its_next_group_in_a_domain_with_room(setup, tmp_path, worker_spec):
    """Domain "a" comes first in turn but its version is full (another worker's group holds it): the slot
    plays domain "b", whose batch lacks a group, instead of sitting in admission for "a"."""
    import asyncio

    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["a", "b"], groups_per_step=2, max_lag=0,
                                                                     admission_hold=0.0)
    assert await buffer.admit.remote(9, 0, "a") is not None
    assert await buffer.room.remote(0) == {"a": 0, "b": 1}
    spec = worker_spec(path, [("null/echo", [3], "a"), ("null/echo", [4], "b")], {"a": [url], "b": [url]},
                       agent={"options": {"choices": {"a": ["ok"], "b": ["ok"]}}},
                       rollout={"group_size": 2, "groups_in_flight": 1})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    try:
        status = await asyncio.wait_for(worker.run(max_groups=1), 60)
        assert status["groups"] == 1 and status["denied"] == 0
        stats = await buffer.stats.remote()
        assert stats["queued"] == {"a": 0, "b": 1}
        assert await buffer.room.remote(0) == {"a": 0, "b": 0}
    finally:
        await worker.close()
        ray.kill(buffer)


async def test_a_worker_plays_groups_in_flight_groups_in_each_domain_at_once(setup, tmp_path, worker_spec):
    """Each domain's env pool holds ``groups_in_flight`` groups' sessions, so each domain plays that many at
    once: one slot in all left one of the two pools idle while the other domain's group played (and at lag 1
    the groups a batch needed started late, behind slots the other domain held)."""
    import asyncio

    path, url = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["a", "b"], groups_per_step=2, max_lag=None)
    spec = worker_spec(path, [("null/echo", [3], "a"), ("null/echo", [4], "b")], {"a": [url], "b": [url]},
                       agent={"options": {"choices": {"a": ["ok"], "b": ["ok"]}}},
                       rollout={"group_size": 2, "groups_in_flight": 1, "simulated_step_seconds": (0.5, 0.0)})
    worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
    playing: dict[str, set[str]] = {"a": set(), "b": set()}
    most: dict[str, int] = {"a": 0, "b": 0}
    both_at_once = []
    episode = worker._episode

    async def watched(domain, task_id, seed, group_id, index, *args, **kwargs):
        playing[domain].add(group_id)
        most[domain] = max(most[domain], len(playing[domain]))
        both_at_once.append(all(playing.values()))
        try:
            return await episode(domain, task_id, seed, group_id, index, *args, **kwargs)
        finally:
            playing[domain].discard(group_id)

    worker._episode = watched
    try:
        status = await asyncio.wait_for(worker.run(max_groups=4), 120)
        assert status["groups"] == 4
        assert most == {"a": 1, "b": 1} and any(both_at_once)
        assert (await buffer.stats.remote())["queued"] == {"a": 2, "b": 2}
    finally:
        await worker.close()
        ray.kill(buffer)


def test_the_domain_whose_episodes_run_longest_after_their_answer_is_answered_first(setup, tmp_path, worker_spec):
    """Its groups are the last to fill a batch, so its model calls go before the others' (lower priority
    first); a domain not measured yet has priority 0, after any measured one."""
    path, url = setup
    spec = worker_spec(path, [("null/echo", [3], "web"), ("null/echo", [4], "pytool")], {"web": [url], "pytool": [url]},
                       agent={"options": {}})
    worker = RolloutWorker(spec, None, None)
    assert worker.model_call_priority("web") == worker.model_call_priority("pytool") == 0
    worker.note_after_answer("web", 4.0)
    assert worker.model_call_priority("web") == -4000 < worker.model_call_priority("pytool") == 0
    worker.note_after_answer("pytool", 2.0)
    worker.note_after_answer("web", 1.0)  # one short episode moves the average a tenth of the way
    assert worker.model_call_priority("web") == -3700 < worker.model_call_priority("pytool") == -2000


def test_a_task_without_training_seeds_never_draws_a_held_out_eval_seed(worker_spec):
    import random

    spec = worker_spec("/m", [("null/echo", None, "null")], {"null": ["u"]}, eval_seeds={"null/echo": [1]})
    worker = RolloutWorker(spec, buffer=None, weights=None)
    worker._rng = random.Random(0)
    next_draw = random.Random(0).randrange(2**31)  # what the worker's stream draws first
    assert worker._any_seed_but([next_draw]) != next_draw
    worker._rng = random.Random(0)
    assert worker._any_seed_but([]) == next_draw


async def test_a_worker_moves_to_the_replacement_of_a_dead_env_server(setup, tmp_path, worker_spec):
    """The run restarts a dead env server at a new URL and hands it over (``use_env_servers``): the worker's
    pool retires the sessions of the dead one and plays its next groups on the replacement."""
    from mintgym.environments.null import NullHost
    from mintgym.server.app import create_app
    from mintgym.testing import serve_asgi

    path, _ = setup
    buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0).remote(["null"], groups_per_step=1, max_lag=None)
    with serve_asgi(create_app(NullHost())) as dead:
        spec = worker_spec(path, [("null/echo", [3], "null")], {"null": [dead]},
                           agent={"options": {"choices": {"null": ["ok"]}}},
                           rollout={"group_size": 2, "groups_in_flight": 1, "max_new_tokens": 1})
        worker = RolloutWorker(spec, buffer, FilesystemBroadcast(tmp_path / "w"))
        await worker.run(max_groups=1)
    try:
        with serve_asgi(create_app(NullHost())) as replacement:
            await worker.use_env_servers({"null": [replacement]})
            status = await worker.run(max_groups=1)
            assert status["groups"] == 2 and status["errors"] == 0
            assert worker.pools["null"].clients[0].base_url == replacement
            assert worker.spec.env_urls == {"null": [replacement]}
    finally:
        await worker.close()
        ray.kill(buffer)
