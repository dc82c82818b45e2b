"""Layer 7: the live parts of one RL run, built from the typed config in order, closed in one place.

:class:`Run` starts (or joins) Ray, the weight transport, the env servers, the trajectory buffer actor,
the learner (resumed from the run's last checkpoint) and the rollout worker actors. It supervises the
workers (restarts, sync-mode collection), checkpoints, and ``close()`` stops everything it started. The
loop that drives it is :func:`mintgym.rl.run.train`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mintgym.buffer.store import TrajectoryBuffer
from mintgym.rl import wiring
from mintgym.rl.sync import WeightSync
from mintgym.rl.warm_start import warm_start
from mintgym.runtime.fleet import ServerGroup
from mintgym.runtime.providers import ServerHandle
from mintgym.trainer.ckpt import latest_checkpoint, load_checkpoint, save_checkpoint
from mintgym.trainer.config import RunConfig
from mintgym.trainer.learner import Learner


class Run:
    """The live parts of one run; ``close()`` stops all of them."""

    def __init__(self, cfg: RunConfig, out: Path, log: Callable[[str], None]):
        self.cfg, self.out, self.log = cfg, out, log
        torch.manual_seed(cfg.train.seed)
        torch.set_num_threads(cfg.rollout.torch_threads)
        self.model_path = wiring.model_path(cfg)
        self.workers: list[Any] = []
        self.buffer = None
        #: Env servers started here, one group per domain.
        self.servers: list[ServerGroup] = []
        self.run_refs: dict[int, Any] = {}
        self.restarts = 0
        self._own_ray = wiring.start_ray(cfg, out)
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
        self.env_urls = wiring.env_servers(cfg, self.servers)
        self.buffer = self._build_buffer()
        self.step = self._build_learner()
        if self.step == 0 and warm_start(cfg, self.learner.model, self.learner.processor, self.env_urls, self.out,
                                         self.log) is not None:
            # A new version: the engines start from the checkpoint on disk (version 0) and load only newer weights.
            self.learner.restored(self.learner.version + 1)
        self.sync = WeightSync(self.weights, cfg.train, self.workers)
        self.sync.send_first(self.learner.version, self.learner.state_dict())
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

        from mintgym.models.loading import load_model, load_processor

        cfg = self.cfg
        dtype = getattr(torch, cfg.model.dtype) if cfg.model.dtype else None
        self.learner = Learner(load_model(self.model_path, dtype=dtype, device=cfg.model.device),
                               load_processor(self.model_path), cfg.train)
        resume = latest_checkpoint(self.out)
        if resume is None:
            return 0
        state = load_checkpoint(resume, self.learner.model, self.learner.optimizer)
        self.learner.restored(int(state["version"]))
        ray.get(self.buffer.load_state_dict.remote(state["buffer"]))
        self.log(f"resumed from {resume} at step {int(state['step'])} (version {self.learner.version})")
        return int(state["step"])

    def _build_workers(self) -> None:
        import ray

        from mintgym.rollout.ray_worker import RolloutWorker, WorkerSpec

        cfg, ro = self.cfg, self.cfg.rollout
        actor = ray.remote(RolloutWorker).options(max_restarts=ro.max_restarts, max_task_retries=0,
                                                  num_cpus=ro.worker_num_cpus, num_gpus=ro.worker_num_gpus,
                                                  resources=ro.worker_resources or None, max_concurrency=1000)
        tasks = [(t.id, t.seeds, t.domain) for t in cfg.tasks for _ in range(t.weight)]
        for i in range(ro.workers):
            spec = WorkerSpec(worker_id=i, model_path=self.model_path, tasks=tasks,
                              env_urls=wiring.servers_of_worker(self.env_urls, i, ro.workers),
                              eval_seeds={t.id: t.eval_seeds for t in cfg.tasks if t.eval_seeds},
                              session_options={d: cfg.env_for(d).session_options for d in cfg.domains},
                              engine=cfg.engine.name, engine_options=cfg.engine.options,
                              agent=cfg.agent.kind, agent_options=cfg.agent.options, max_turns=cfg.agent.max_turns,
                              group_size=ro.group_size, groups_in_flight=ro.groups_in_flight,
                              temperature=ro.temperature, max_new_tokens=ro.max_new_tokens,
                              episode_timeout=ro.episode_timeout, torch_threads=ro.torch_threads,
                              simulated_step_seconds=tuple(ro.simulated_step_seconds)
                              if ro.simulated_step_seconds else None,
                              seed=cfg.train.seed * 1000 + self.step)
            with wiring.ray_quiet(self.out, not cfg.log.ray):
                self.workers.append(actor.remote(spec, self.buffer, self.weights))

    # -- workers --------------------------------------------------------------------------------------

    def start_workers(self) -> None:
        for i, w in enumerate(self.workers):
            self.run_refs[i] = w.run.remote()

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
            self.run_refs[i] = self.workers[i].run.remote()

    def collect(self, n_groups: int) -> None:
        """Sync mode: play exactly ``n_groups`` groups over the workers, then return."""
        import ray
        from ray.exceptions import RayActorError

        n = len(self.workers)
        shares = [n_groups // n + (i < n_groups % n) for i in range(n)]
        refs = {i: self.workers[i].run.remote(max_groups=s) for i, s in enumerate(shares) if s}
        for i, ref in refs.items():
            try:
                ray.get(ref)
            except RayActorError:
                self.restarts += 1
                self.log(f"rollout worker {i} died during collection; its groups are counted lost")

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
        return save_checkpoint(self.out, self.step, self.learner.model, self.learner.optimizer,
                               {"version": self.learner.version, "buffer": buffer_state})

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
            if self._own_ray:
                ray.shutdown()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
