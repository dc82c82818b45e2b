"""Layer 7: the live parts of one RL run, built from the typed config in order, closed in one place.

:class:`Run` starts (or joins) Ray, the weight transport, reserves the pods that pair rollout workers with
their ``provider: ray`` env servers on one node (:mod:`mintgym.rl.placement`), starts the env servers, the
trajectory buffer actor, the learner (resumed from the run's last checkpoint) and the rollout worker actors.
It supervises the workers (restarts, sync-mode collection) and the env servers it started (a dead one is
restarted, in its pod, and the workers moved to it; one that cannot be restarted fails the run, naming it),
reports what the workers' episodes did each step (failures by kind, groups lost), checkpoints, and
``close()`` stops everything it started. Under torchrun it is rank 0's: its learner's calls are run by every
rank on its shard (:mod:`mintgym.rl.lockstep`). The loop that drives it is :func:`mintgym.rl.run.train`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from mintgym.buffer.store import TrajectoryBuffer
from mintgym.config import RunConfig
from mintgym.errors import BackendError, MintGymError
from mintgym.rl import wiring
from mintgym.rl.lockstep import LockstepLearner, Ranks
from mintgym.rl.placement import Placement
from mintgym.rl.sync import WeightSync, worker_doing
from mintgym.runtime.fleet import ServerGroup
from mintgym.runtime.providers import ServerHandle
from mintgym.trainer.ckpt import seed_all


@dataclass
class EpisodeReport:
    """What the workers' episodes did since the previous report."""

    #: Episodes that ended (a sample, or a failure).
    episodes: int = 0
    #: Episodes that failed by an infrastructure fault (``mintgym.rollout.episode.drop_cause``), or raised.
    errors: int = 0
    #: Groups pushed to the buffer.
    groups: int = 0
    #: Groups not pushed because an episode of theirs failed.
    lost_groups: int = 0
    #: Failed episodes per kind (the error's first line).
    kinds: dict[str, int] = field(default_factory=dict)
    #: Lost groups per cause (``env_fault``, ``reset_failed``, ``env_stall``, ``policy_error``, ...).
    drop_causes: dict[str, int] = field(default_factory=dict)
    #: Episodes that failed by the agent's own doing other than by the task's verdict (a timeout while it
    #: acted, a context overflow, an agent-made fault): pushed and trained on with their reward.
    agent_failures: int = 0

    @property
    def all_failed(self) -> bool:
        """Episodes ended and every one of them failed."""
        return self.errors > 0 and self.errors >= self.episodes

    def most_frequent(self) -> tuple[str, int]:
        """The kind of failure seen most often, and how often."""
        return max(self.kinds.items(), key=lambda kv: kv[1], default=("(no message)", self.errors))

    def metrics(self) -> dict[str, float]:
        """Counts since the last report; ``rollout/drop_rate/<cause>``: that cause's lost groups over all the
        groups that ended (pushed or lost)."""
        ended = max(1, self.groups + self.lost_groups)
        return {"rollout/episodes": float(self.episodes), "rollout/episode_errors": float(self.errors),
                "rollout/lost_groups": float(self.lost_groups), "rollout/agent_failures": float(self.agent_failures),
                **{f"rollout/drop_rate/{cause}": count / ended for cause, count in sorted(self.drop_causes.items())}}

    def summary(self) -> str:
        """The progress line's part: empty when no episode failed."""
        if not self.errors:
            return ""
        kind, count = self.most_frequent()
        return (f" | {self.errors}/{self.episodes} episodes failed, {self.lost_groups} groups lost "
                f"(most: {count}x {kind[:120]})")


class Run:
    """The live parts of one run; ``close()`` stops all of them."""

    def __init__(self, cfg: RunConfig, out: Path, log: Callable[[str], None], ranks: Ranks | None = None):
        self.cfg, self.out, self.log, self.ranks = cfg, out, log, ranks
        seed_all(cfg.train.seed)  # a resume then sets them as its checkpoint saved them
        torch.set_num_threads(cfg.rollout.torch_threads)
        self.model_path = wiring.model_path(cfg, log)
        self.workers: list[Any] = []
        self.buffer = None
        #: Env servers started here, one group per domain.
        self.servers: list[ServerGroup] = []
        #: The placement groups pairing workers with their ray env servers (None: nothing to pair).
        self.placement: Placement | None = None
        self.run_refs: dict[int, Any] = {}
        self.restarts = 0
        #: Env servers restarted after they died.
        self.server_restarts = 0
        #: Each worker's last ``status()`` seen by ``episode_report``.
        self._seen: dict[int, dict[str, Any]] = {}
        self._own_ray = wiring.start_ray(cfg, out)
        wiring.interrupt_on_sigterm()  # over the handler ray.init installed
        try:
            self._start()
        except BaseException:
            self.close(fast=True)
            raise

    @property
    def handles(self) -> list[ServerHandle]:
        return [h for group in self.servers for h in group.handles]

    def _start(self) -> None:
        cfg = self.cfg
        self.weights = wiring.weight_transport(cfg, self.out)
        self.placement = Placement.reserve(cfg, self.log)
        self.log(f"starting env servers: {', '.join(cfg.domains)}")
        self.env_urls = wiring.env_servers(cfg, self.servers, self.placement)
        self.buffer = self._build_buffer()
        self.log(f"loading the model into the learner: {self.model_path}")
        self.step = self._build_learner()
        if self.step == 0 and self.learner.warm_start(cfg, self.env_urls, self.out, self.log) is not None:
            # A new version: the engines start from the checkpoint on disk (version 0) and load only newer weights.
            self.learner.restored(self.learner.version + 1)
        self.sync = WeightSync(self.weights, cfg.train, self.workers)
        self.sync.send_first(self.learner.version, self.learner.state_dict())
        self.log(f"starting {cfg.rollout.workers} rollout worker(s); each loads the model into its engine")
        self._build_workers()

    def _build_buffer(self) -> Any:
        import ray

        train = self.cfg.train
        return ray.remote(TrajectoryBuffer).options(num_cpus=0, max_concurrency=64).remote(
            self.cfg.domains, groups_per_step=train.groups_per_step,
            max_lag=0 if train.mode == "sync" else train.max_lag, weights=train.domain_weights, own_images=True)

    def _build_learner(self) -> int:
        """The learner, resumed from the run's last checkpoint if there is one; returns the step reached.
        What it holds when this returns is what the workers start from (the first weights sent)."""
        import ray

        self.learner = LockstepLearner.build(self.cfg, self.model_path, self.ranks)
        loaded = self.learner.load_latest(self.out, self.log)
        if loaded is None:
            return 0
        resume, state = loaded
        self.learner.restored(int(state["version"]))
        ray.get(self.buffer.load_state_dict.remote(state["buffer"]))
        self.log(f"resumed from {resume} at step {int(state['step'])} (version {self.learner.version})")
        return int(state["step"])

    def _build_workers(self) -> None:
        import ray

        from mintgym.rollout.ray_worker import RolloutWorker, WorkerSpec

        cfg, ro = self.cfg, self.cfg.rollout
        actor = ray.remote(RolloutWorker)
        options = {"max_restarts": ro.max_restarts, "max_task_retries": 0, "num_cpus": ro.worker_num_cpus,
                   "num_gpus": ro.worker_num_gpus, "resources": ro.worker_resources or None, "max_concurrency": 1000}
        for i in range(ro.workers):
            spec = WorkerSpec(worker_id=i, run=cfg, env_urls=wiring.servers_of_worker(self.env_urls, i, ro.workers),
                              model_path=self.model_path, seed=cfg.train.seed * 1000 + self.step)
            placed = self.placement.worker_options(i) if self.placement else {}
            with wiring.ray_quiet(self.out, not cfg.log.ray):
                self.workers.append(actor.options(**options, **placed).remote(spec, self.buffer, self.weights))

    # -- workers --------------------------------------------------------------------------------------

    def start_workers(self) -> None:
        for i in range(len(self.workers)):
            self.run_refs[i] = self._play(i)

    def _play(self, i: int, max_groups: int | None = None) -> Any:
        """Start worker ``i``'s run loop, on the env servers of now (an actor Ray restarted was made with the
        URLs of the start, some of which may be dead servers' since)."""
        if self.server_restarts:
            self.workers[i].use_env_servers.remote(self._urls_of(i))
        return self.workers[i].run.remote(max_groups=max_groups)

    def _urls_of(self, i: int) -> dict[str, list[str]]:
        return wiring.servers_of_worker(self.env_urls, i, len(self.workers))

    def check_workers(self) -> None:
        """Restart the run loop of any worker whose actor died (Ray restarted it)."""
        import ray
        from ray.exceptions import RayActorError

        for i, ref in list(self.run_refs.items()):
            done, _ = ray.wait([ref], timeout=0)
            if not done:
                continue
            try:
                ray.get(ref)
            except RayActorError as err:
                self.restarts += 1
                self.log(f"rollout worker {i} died ({type(err).__name__}); Ray restarts it, its in-flight "
                         "episodes are counted lost")
                if self.restarts > self.cfg.rollout.max_restarts * len(self.workers):
                    raise
            self.run_refs[i] = self._play(i)

    def check_servers(self) -> None:
        """Restart every env server started here that died and move the workers to its replacement (their
        episodes on it are lost); a server that cannot be restarted fails the run with BackendError naming it."""
        moved = False
        for group in self.servers:
            for change in group.check():
                where = f"env server {group.domain!r} at {change.old.base_url}"
                if change.new is None:
                    raise BackendError(f"{where} died and could not be restarted: "
                                       + (change.error or "").strip().split("\n")[0])
                self.server_restarts += 1
                self.log(f"{where} died; restarted at {change.new.base_url}, its episodes in flight are lost")
                moved = True
        if moved:
            self.env_urls = {**self.env_urls, **{group.domain: group.urls for group in self.servers}}
            for i, w in enumerate(self.workers):
                w.use_env_servers.remote(self._urls_of(i))

    def collect(self, n_groups: int, timeout: float) -> None:
        """Sync mode: play ``n_groups`` groups over the workers (a group lost to a failed episode counts), then
        return; env servers and workers are checked meanwhile. MintGymError naming the workers not done, and
        what they were doing, after ``timeout`` s."""
        import ray
        from ray.exceptions import RayActorError

        n = len(self.workers)
        shares = [n_groups // n + (i < n_groups % n) for i in range(n)]
        self.check_servers()
        refs = {i: self._play(i, max_groups=s) for i, s in enumerate(shares) if s}
        deadline = time.monotonic() + timeout
        while refs:
            done, _ = ray.wait(list(refs.values()), num_returns=len(refs),
                               timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            for i in [i for i, ref in refs.items() if ref in done]:
                try:
                    ray.get(refs.pop(i))
                except RayActorError:
                    self.restarts += 1
                    self.log(f"rollout worker {i} died during collection; its groups are counted lost")
            if refs and time.monotonic() >= deadline:
                raise MintGymError(f"sync mode: the workers did not play the step's {n_groups} groups within "
                                   f"{timeout:.0f}s (train.batch_timeout): " + "; ".join(
                                       f"worker {i} ({worker_doing(self.workers[i])})" for i in refs))
            if refs:
                self.check_servers()

    def episode_report(self) -> EpisodeReport:
        """What the workers' episodes did since the previous report (a worker that does not answer within 5 s
        is counted at the next one; one Ray restarted counts from 0 again)."""
        import ray
        from ray.exceptions import RayError

        refs = {w.status.remote(): i for i, w in enumerate(self.workers)}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=5)
        report = EpisodeReport()
        for ref in ready:
            i = refs[ref]
            try:
                now = ray.get(ref)
            except RayError:  # a worker that died: check_workers restarts it, its counts start over
                continue
            before = self._seen.get(i)
            if before is None or before.get("instance") != now.get("instance"):
                before = {}
            report.episodes += now["episodes"] - before.get("episodes", 0)
            report.errors += now["errors"] - before.get("errors", 0)
            report.lost_groups += now["lost_groups"] - before.get("lost_groups", 0)
            report.groups += now["groups"] - before.get("groups", 0)
            report.agent_failures += now["agent_failures"] - before.get("agent_failures", 0)
            for counts, seen, into in ((now["error_kinds"], before.get("error_kinds", {}), report.kinds),
                                       (now["drop_causes"], before.get("drop_causes", {}), report.drop_causes)):
                for kind, count in counts.items():
                    new = count - seen.get(kind, 0)
                    if new:
                        into[kind] = into.get(kind, 0) + new
            self._seen[i] = now
        return report

    def stop_play(self) -> None:
        """Stop the workers' continuous play and wait (bounded) for their loops to end."""
        import ray

        for w in self.workers:
            w.stop.remote()
        if self.run_refs:
            ray.wait(list(self.run_refs.values()), num_returns=len(self.run_refs),
                     timeout=self.cfg.rollout.episode_timeout + 60)

    # -- weights and checkpoints ----------------------------------------------------------------------

    def publish(self, final: bool = False) -> None:
        """Send the learner's weights to the engines (see :meth:`WeightSync.publish`)."""
        self.sync.publish(self.learner.version, self.learner.state_dict(), final=final)

    def checkpoint(self) -> Path:
        import ray

        buffer_state = ray.get(self.buffer.state_dict.remote())
        return self.learner.checkpoint(self.out, self.step, {"version": self.learner.version, "buffer": buffer_state})

    # -- end ------------------------------------------------------------------------------------------

    def close(self, fast: bool = False) -> None:
        """Stop workers, buffer and env servers. ``fast`` (after Ctrl-C): kill the workers without closing
        their env sessions (the servers started here go anyway) and give the servers 2 s, not 10; a
        further Ctrl-C meanwhile is ignored so that no server is left behind."""
        import ray

        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if fast and main else None
        try:
            for w in self.workers:
                if not fast:
                    try:
                        w.stop.remote()
                        ray.get(w.close.remote(), timeout=20)
                    except Exception:  # the worker may be dead already; killing it below is what matters
                        pass
                ray.kill(w, no_restart=True)
            if self.buffer is not None:
                ray.kill(self.buffer, no_restart=True)
            for group in self.servers:
                group.stop(grace=2.0 if fast else 10.0)
            self.servers = []
            if self.placement is not None:
                self.placement.release()
                self.placement = None
            if self._own_ray:
                ray.shutdown()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
