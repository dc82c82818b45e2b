"""Layer 4: the rollout worker, a Ray actor playing many episodes at once and pushing finished groups.

Each worker owns an inference engine (its own hf model, whose concurrent calls it batches, or a vllm
engine) and an :class:`EnvPool` per domain on the env servers it was given, each holding the sessions of
``groups_in_flight`` groups. ``run()`` keeps up to ``groups_in_flight`` groups going in each domain; a group
is G concurrent episodes of one task and seed. A group's env sessions are reset before it is admitted: at
the group's first model call the worker loads any newer published weights and asks the buffer to admit the
group at that version (admission control), so a sample's staleness counts from the call that made it, not
from an env reset that no weights influence. Every later model call (the next turns of an episode in flight,
the other episodes of the group) first loads any newer weights too, and each turn records the version it
was sampled at. A finished group is pushed to the buffer and the worker moves on without
waiting for the trainer. The version each worker loaded is acknowledged to the weight transport, where
the trainer reads it.

Training sequences come from the engine calls themselves (:mod:`mintgym.rollout.recording`): the sample
pushed is the episode record, its turns views of its steps; each episode's agent is made by
:func:`mintgym.rollout.agents.make_episode_agent`. The images travel as arrays in the pushed group; a
buffer made with ``own_images=True`` stores each in the object store under its own ownership, so a group
pushed just before this worker dies still reaches the trainer whole.

A worker that dies is restarted by Ray (``max_restarts``); on its next ``run()`` it registers again and
the buffer counts the reservations it held as lost. An env server that dies is restarted by the run, which
hands the worker its replacement's URL (``use_env_servers``).

An episode that fails through the agent's own doing (too many steps, an agent-made fault, a context
overflow, unparseable answers, a timeout while the agent was acting: :func:`mintgym.rollout.episode.drop_cause`)
is pushed and trained on as a failure with its reward, counted as ``agent_failures`` where it ended other than
by the task's own verdict. Only an infrastructure fault (an ``env_fault``, ``reset_failed``, ``env_stall``,
``policy_error``, an episode with no model call, an exception) drops its group: such episodes are counted in
``status()`` by kind (their error's first line), and the groups lost per cause (``drop_causes``, the cause of
the group's first failed episode), so the run reports them each step and fails when nothing but failures
comes back. A slot whose group pushed nothing waits before its next one
(0.1 s, doubling to 5 s), so a dead env server or a broken agent is not retried in a busy loop, and loads
any newer weights meanwhile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import random
import re
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mintgym.allocator import tune_malloc
from mintgym.buffer.types import Group, Sample
from mintgym.config import RunConfig, engine_kwargs
from mintgym.errors import first_line
from mintgym.inference import InferenceEngine
from mintgym.rollout.agents import make_episode_agent
from mintgym.rollout.engines import open_engine
from mintgym.rollout.recording import RecordingEngine


@dataclass
class WorkerSpec:
    """What one worker plays, picklable: the run's spec itself (its tasks, engine, agent and rollout sections),
    the worker's share of the env servers and the seed of its task stream."""

    worker_id: int
    run: RunConfig
    #: This worker's env server URLs per domain (its share: ``mintgym.rl.wiring.servers_of_worker``); its
    #: pool of each domain spreads its sessions over them.
    env_urls: dict[str, list[str]]
    #: The checkpoint the engine opens first (None: ``run.model.path``).
    model_path: str | None = None
    #: Seed of the worker's task and seed stream (the run's, moved on at each restart of the workers).
    seed: int = 0
    #: Seconds between polls when admission is denied.
    admission_poll: float = 0.02

    @property
    def schedule(self) -> list[tuple[str, list[int] | None, str]]:
        """(task id, seeds or None, env domain) in turn, each task ``weight`` times."""
        return [(t.id, t.seeds, t.domain) for t in self.run.tasks for _ in range(t.weight)]

    @property
    def eval_seeds(self) -> dict[str, list[int]]:
        """The held-out seeds per task id, never drawn by a task without training seeds."""
        return {t.id: t.eval_seeds for t in self.run.tasks if t.eval_seeds}


#: Distinct kinds of failed episodes a worker counts apart; the rest count as ``(other errors)``.
MAX_ERROR_KINDS = 32
#: An env session's id (``uuid4().hex``), as error messages quote it.
_SESSION_ID = re.compile(r"\b[0-9a-f]{32}\b")


def error_kind(error: str, episode_id: str = "") -> str:
    """A failed episode's kind: the first line of its error, at most 300 characters, with the episode's own id
    and any session id left out, so that one cause counts as one kind."""
    first = first_line(error, "(no message)")
    if episode_id:
        first = first.replace(episode_id, "<episode>")
    return _SESSION_ID.sub("<session>", first)[:300]


class _GroupAdmission:
    """A training group's admission, asked for at the first model call of any of its episodes (their env
    sessions are reset by then); every call waits for it, then loads any newer weights."""

    def __init__(self, worker: RolloutWorker, domain: str):
        self.worker, self.domain = worker, domain
        self._admitting: asyncio.Future | None = None
        #: The worker's count of its groups before admission no longer holds this one.
        self.counted_out = False

    async def before_call(self) -> None:
        if self._admitting is None:
            self._admitting = asyncio.ensure_future(self.worker._admit(self.domain))
            self._admitting.add_done_callback(lambda _future: self.count_out())
        if await asyncio.shield(self._admitting) is None:
            raise RuntimeError("the rollout worker stopped before this group was admitted")
        await self.worker.refresh_weights()

    def count_out(self) -> None:
        """The group is admitted, denied for good, or over: no longer counted as choosing its domain."""
        if not self.counted_out:
            self.counted_out = True
            self.worker._choosing[self.domain] -= 1

    async def settled(self) -> int | None:
        """The reservation once every episode ended (None if the group was never admitted)."""
        return None if self._admitting is None else await self._admitting


def load_weights(engine: InferenceEngine, version: int, state: dict[str, Any] | Path) -> None:
    """Load what a weight transport gave into ``engine``: a file's path as is (vLLM loads it in place), a
    received state (numpy arrays, bf16 as torch tensors) as tensors over the same memory."""
    import torch

    if isinstance(state, Path):
        engine.update_weights(version, state)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # arrays from the object store are read-only
        tensors = {k: v if isinstance(v, torch.Tensor) else torch.from_numpy(v) for k, v in state.items()}
    engine.update_weights(version, tensors)


class RolloutWorker:
    """The actor body (``ray.remote(RolloutWorker)`` at the call site); see the module docstring."""

    def __init__(self, spec: WorkerSpec, buffer: Any, weights: Any):
        """``buffer``: the trajectory buffer actor; ``weights``: the run's ``WeightBroadcast`` (received from
        and acknowledged to)."""
        #: A worker moves a screenshot per env step: keep freed frame buffers mapped (mintgym.allocator).
        self.malloc = tune_malloc()
        self.spec = spec
        self.buffer = buffer
        self.weights = weights
        self.engine: InferenceEngine | None = None
        #: What the episodes call: the engine, with concurrent calls batched where it runs in this process.
        self.sampler: InferenceEngine | None = None
        self.pools: dict[str, Any] = {}
        self.clients: list[Any] = []
        self.version: int = -1
        self.stats = {"groups": 0, "episodes": 0, "errors": 0, "lost_groups": 0, "denied": 0, "weight_loads": 0,
                      "agent_failures": 0}
        #: Failed episodes per kind: the error's type and first line (``error_kind``).
        self.error_kinds: dict[str, int] = {}
        #: Groups lost per cause (``drop_cause``'s, ``no_model_call``, ``exception``).
        self.drop_causes: dict[str, int] = {}
        #: Tells this actor's counts from those of the actor Ray restarts in its place (which start at 0).
        self.instance = uuid.uuid4().hex
        self._rng = random.Random(spec.seed * 7919 + spec.worker_id)
        #: The tasks' domains in turn (a domain once per task) and each domain's own tasks in turn.
        self._domain_turns = [domain for _, _, domain in spec.schedule]
        self._next_turn = 0
        self._tasks_of = {d: itertools.cycle([t for t in spec.schedule if t[2] == d]) for d in self._domain_turns}
        #: Groups whose domain is chosen and whose admission is not settled yet, per domain.
        self._choosing: dict[str, int] = {}
        #: Groups going (domain chosen, not ended yet) per domain: at most ``groups_in_flight`` each.
        self._going: dict[str, int] = dict.fromkeys(self._domain_turns, 0)
        self._weights_lock: asyncio.Lock | None = None
        #: Per domain, seconds from an episode's first model answer to its end (moving average).
        self._after_answer: dict[str, float] = {}
        self._stop = False
        self._ready = False

    # -- setup ----------------------------------------------------------------------------------------

    async def _setup(self) -> None:
        if self._ready:
            return
        import torch

        from mintgym.client.aio import AsyncEnvClient
        from mintgym.runtime.pool import EnvPool

        run, rollout = self.spec.run, self.spec.run.rollout
        torch.set_num_threads(rollout.torch_threads)
        self._weights_lock = asyncio.Lock()
        options = engine_kwargs(run.engine)
        if "seed" not in options:
            options["seed"] = self.spec.seed * 1000 + self.spec.worker_id
        # The G episodes of a group call the model at once, one request each: an hf engine gathers their calls
        # into generate calls of up to its max_batch_size (see mintgym.rollout.engines).
        self.engine, self.sampler = open_engine(run.engine.name, batch=run.engine.options.max_batch_size,
                                                model_path=self.spec.model_path or run.model.path, **options)
        size = rollout.group_size * rollout.groups_in_flight
        for domain, urls in self.spec.env_urls.items():
            clients = [AsyncEnvClient(url, encoding="raw") for url in urls]
            self.clients += clients
            self.pools[domain] = await EnvPool(clients, size, env_options=run.env_for(domain).session_options,
                                              max_steps=run.agent.max_turns, observe=tuple(run.agent.observe)).start()
        await self.buffer.register_worker.remote(self.spec.worker_id)
        await self.refresh_weights()
        self._ready = True

    async def refresh_weights(self) -> int:
        """Load the newest published weights if newer than the engine's; ack the version to the transport."""
        assert self._weights_lock is not None and self.engine is not None
        if self._weights_lock.locked():  # a refresh is under way (many episodes call at once): share it
            async with self._weights_lock:
                return self.version
        async with self._weights_lock:
            after = self.engine.policy_version
            got = None
            if self.spec.run.engine.name == "vllm":  # a file vLLM loads in place, where the transport has one
                got = await asyncio.to_thread(self.weights.receive_file, after)
            if got is None:
                got = await self.weights.areceive(after)
            if got is not None:
                version, state = got
                await asyncio.to_thread(load_weights, self.engine, version, state)
                self.stats["weight_loads"] += 1
            current = self.engine.policy_version
            if current is not None and current != self.version:
                self.version = int(current)
                await self.weights.aack(self.spec.worker_id, self.version)
            return self.version

    # -- the loop -------------------------------------------------------------------------------------

    async def run(self, max_groups: int | None = None) -> dict[str, Any]:
        """Play groups until ``stop()`` (or ``max_groups`` groups were pushed); returns the worker's stats."""
        await self._setup()
        self._stop = False
        budget = [max_groups]

        async def slot() -> None:
            misses = 0  # groups in a row that pushed nothing
            while not self._stop:
                if budget[0] is not None:
                    if budget[0] <= 0:
                        return
                    budget[0] -= 1
                if misses:
                    await asyncio.sleep(min(5.0, 0.1 * 2 ** (misses - 1)))
                    # episodes that fail before their first model call load no weights: load them here, so a
                    # failing worker is reported by its errors, not as one behind on the weights
                    await self.refresh_weights()
                misses = 0 if await self._one_group() else misses + 1

        await asyncio.gather(*(slot() for _ in range(self.spec.run.rollout.groups_in_flight * len(self._going))))
        return self.status()

    @property
    def in_flight(self) -> int:
        """Episodes of the groups going."""
        return self.spec.run.rollout.group_size * sum(self._going.values())

    def stop(self) -> None:
        self._stop = True

    def status(self) -> dict[str, Any]:
        return {"worker_id": self.spec.worker_id, "instance": self.instance, "version": self.version,
                "in_flight": self.in_flight, "malloc": self.malloc.applied, "error_kinds": dict(self.error_kinds),
                "drop_causes": dict(self.drop_causes), **self.stats}

    async def use_env_servers(self, env_urls: dict[str, list[str]]) -> None:
        """Play on these env servers (per domain, in the order given before) from now on: the run restarted a
        dead one at a new URL. Each pool opens its sessions on the replacement in place of the dead server."""
        from mintgym.client.aio import AsyncEnvClient

        self.spec = dataclasses.replace(self.spec, env_urls=env_urls)  # what a setup still to come uses
        for domain, pool in self.pools.items():
            # a domain the new list leaves out keeps its servers (strict=False: no URLs, no replacement)
            for old, url in zip(list(pool.clients), env_urls.get(domain, []), strict=False):
                if old.base_url != url.rstrip("/"):
                    new = AsyncEnvClient(url, encoding="raw")
                    self.clients.append(new)
                    await pool.replace_client(old, new)

    async def sync_weights(self) -> int:
        """Load the newest weights now (sync mode) and return the version in use."""
        await self._setup()
        return await self.refresh_weights()

    async def _admit(self, domain: str) -> int | None:
        """A buffer reservation for a group of ``domain`` sampled with the newest weights (loaded first),
        asked again after each denial; None if the worker is stopped meanwhile."""
        while True:
            version = await self.refresh_weights()
            reservation = await self.buffer.admit.remote(self.spec.worker_id, version, domain)
            if reservation is not None:
                return reservation
            self.stats["denied"] += 1
            if self._stop:
                return None
            await asyncio.sleep(self.spec.admission_poll)

    async def _next_task(self) -> tuple[str, list[int] | None, str]:
        """The next task of the domain with the most room in the buffer at the newest weights (after this
        worker's groups still before admission; ties in turn); with no room anywhere, of the domain with the
        most room at the version after (the group's resets are done by the time those weights come, and it
        starts at once); else of the next domain in turn. Room is what the domain's coming batches lack, so
        slots go to the slow domain that holds the batches back, not to a fast one whose versions are full."""
        turns = self._domain_turns
        if not turns:
            raise RuntimeError("this rollout worker was given no tasks to play")
        rooms = []
        if len(set(turns)) > 1:
            version = await self.refresh_weights()
            rooms = await asyncio.gather(self.buffer.room.remote(version), self.buffer.room.remote(version + 1))
        open_turns = self._open_turns()  # after the wait: other slots may have chosen meanwhile
        pick = open_turns[0]
        for room in rooms:
            free = {i: self._free(room, turns[i]) for i in open_turns}
            best = max(free.values())
            if best > 0:
                pick = next(i for i, f in free.items() if f == best)
                break
        self._next_turn = (pick + 1) % len(turns)
        self._going[turns[pick]] += 1
        return next(self._tasks_of[turns[pick]])

    def _open_turns(self) -> list[int]:
        """The turns, from the next one on, whose domain has fewer than ``groups_in_flight`` groups going (its
        env pool holds that many groups' sessions); the slots are as many as all domains hold, so one has room."""
        n = len(self._domain_turns)
        return [i for i in ((self._next_turn + k) % n for k in range(n))
                if self._going[self._domain_turns[i]] < self.spec.run.rollout.groups_in_flight]

    def _free(self, room: dict[str, int | None], domain: str) -> float:
        free = room.get(domain)
        return math.inf if free is None else free - self._choosing.get(domain, 0)

    def _any_seed_but(self, held_out: Iterable[int]) -> int:
        """A seed from the worker's stream that is not one of the task's held-out evaluation seeds."""
        held_out = set(held_out)
        while (seed := self._rng.randrange(2**31)) in held_out:
            pass
        return seed

    async def _one_group(self) -> bool:
        """Play one group and push it; False when it was not (an episode failed, or the worker stopped)."""
        task_id, seeds, domain = await self._next_task()
        seed = self._rng.choice(seeds) if seeds else self._any_seed_but(self.spec.eval_seeds.get(task_id, ()))
        group_id = f"{task_id}-{seed}-{uuid.uuid4().hex[:8]}"
        admission = _GroupAdmission(self, domain)
        self._choosing[domain] = self._choosing.get(domain, 0) + 1
        try:
            samples = await asyncio.gather(*(self._episode(domain, task_id, seed, group_id, i,
                                                           before_call=admission.before_call)
                                             for i in range(self.spec.run.rollout.group_size)), return_exceptions=True)
        finally:
            self._going[domain] -= 1
            admission.count_out()
        reservation = await admission.settled()
        good = [s for s in samples if isinstance(s, Sample)]
        if len(good) < len(samples) and not self._stop:
            self.stats["lost_groups"] += 1
            cause = next(s if isinstance(s, str) else "exception" for s in samples if not isinstance(s, Sample))
            self.drop_causes[cause] = self.drop_causes.get(cause, 0) + 1
        if reservation is None:
            return False  # never admitted (stopped, or every episode failed before its first model call)
        if len(good) < len(samples):
            await self.buffer.release.remote(reservation)
            return False
        group = Group(group_id, task_id, domain, seed, good, reservation=reservation)
        await self.buffer.push.remote(group)
        self.stats["groups"] += 1
        return True

    async def _episode(self, domain: str, task_id: str, seed: int, group_id: str, index: int,
                       before_call: Callable[[], Awaitable[None]] | None = None) -> Sample | str:
        """The episode's sample, or the cause for which its group cannot be trained on (counted as failed)."""
        from mintgym.rollout.episode import drop_cause, play_pooled

        run = self.spec.run
        recorder = RecordingEngine(self.sampler, before_call, priority=lambda: self.model_call_priority(domain))
        simulated = run.rollout.simulated_step_seconds
        agent = recorder.marking(make_episode_agent(
            run.agent.kind, run.agent.options, recorder, max_new_tokens=run.rollout.max_new_tokens,
            temperature=run.rollout.temperature, simulated_step_seconds=tuple(simulated) if simulated else None,
            rng=self._rng))
        episode_id = f"{group_id}-{index}"
        try:
            traj = await play_pooled(self.pools[domain], agent, task_id, seed, episode_id,
                                     max_seconds=self.spec.run.rollout.episode_timeout, group_id=group_id)
            cause = drop_cause(traj)
            if cause is not None:
                self._failed(traj.error or traj.status, episode_id)
                return cause
            recorder.attach(traj)
            if not any(step.response_token_ids is not None for step in traj.steps):
                # nothing sampled to push down (an overflow or a timeout in the first turn): no gradient
                self._failed(f"the episode ended before its first model call ({traj.status})", episode_id)
                return "no_model_call"
            sample = Sample.from_episode(traj, domain, self.spec.worker_id)
            if traj.status == "timeout" or traj.extra.get("fault") in ("context", "agent_action"):
                self.stats["agent_failures"] += 1
        except Exception as err:
            self._failed(f"{type(err).__name__}: {err}", episode_id)
            raise
        self.stats["episodes"] += 1
        after = sample.seconds_after_first_answer
        if after is not None:
            self.note_after_answer(domain, after)
        return sample

    def _failed(self, error: str, episode_id: str) -> None:
        """Count a failed episode under its kind (``error_kind``)."""
        self.stats["episodes"] += 1
        self.stats["errors"] += 1
        kind = error_kind(error, episode_id)
        if kind not in self.error_kinds and len(self.error_kinds) >= MAX_ERROR_KINDS:
            kind = "(other errors)"
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1

    def note_after_answer(self, domain: str, seconds: float) -> None:
        """An episode of ``domain`` ran ``seconds`` after its first model answer (a moving average per domain)."""
        before = self._after_answer.get(domain)
        self._after_answer[domain] = seconds if before is None else before + 0.1 * (seconds - before)

    def model_call_priority(self, domain: str) -> int:
        """The model calls of the domain whose episodes run on longest after their first answer go first
        (lower is sooner): its groups are the last to fill a batch, so their answers are on its critical path."""
        return -round(1000 * self._after_answer.get(domain, 0.0))

    async def close(self) -> None:
        for pool in self.pools.values():
            await pool.close()
        for client in self.clients:
            await client.aclose()
        if self.sampler is not None:
            self.sampler.close()  # the engine, and its batching where it has one
