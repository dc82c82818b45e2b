"""Layer 6 entry: the RL loop, async (the default) or sync, on one code path.

Wires every part together (the only module that knows them all): env servers started by each domain's
provider (``envs[].provider``: local, docker, ray, or given URLs), a trajectory buffer actor, rollout worker
actors (placed by ``rollout.worker_resources``), the weight transport (``weights.transport``) and the learner.

- ``async``: workers play continuously and push groups; each step the trainer takes a mixed batch from
  the buffer, trains, and publishes weights every ``sync_every`` steps. Workers load them before their
  next group; a publication not loaded by every worker within ``sync_timeout`` fails the run with who is
  behind and what it was doing.
- ``sync``: each step the workers play exactly one batch with the current weights, the trainer trains,
  publishes, and waits (``sync_timeout``) until every worker has loaded the new weights.

A run whose last checkpoint is at ``train.steps`` is finished: calling it again returns at once (raise
``train.steps`` to continue it).

Launch with ``mintgym train --config examples/quickstart.yaml --out runs/q``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from mintgym.buffer.store import TrajectoryBuffer
from mintgym.errors import MintGymError
from mintgym.runtime.providers import Provider, ServerHandle
from mintgym.trainer.ckpt import checkpoint_step, latest_checkpoint, load_checkpoint, save_checkpoint
from mintgym.trainer.config import EnvConfig, RunConfig
from mintgym.trainer.learner import Learner
from mintgym.trainer.runlog import clock
from mintgym.weights.base import WeightBroadcast, WeightSyncTimeout


@dataclass
class RunResult:
    out_dir: Path
    steps: int
    #: The checkpoint step this call resumed from (0: a fresh run).
    resumed_from: int = 0
    #: Metrics of every step of this process (resumed runs: from the resume on).
    history: list[dict[str, float]] = field(default_factory=list)
    buffer: dict[str, Any] = field(default_factory=dict)
    worker_restarts: int = 0
    seconds: float = 0.0
    #: ``train.eval_groups``: the final weights' rewards per domain (see ``_Run.evaluate``).
    final_eval: dict[str, Any] | None = None
    #: The run had reached ``train.steps`` already: nothing was started.
    finished: bool = False

    def mean_reward(self, first: bool, k: int = 3) -> float:
        rows = [h["reward/mean"] for h in self.history if not math.isnan(h.get("reward/mean", math.nan))]
        rows = rows[:k] if first else rows[-k:]
        return sum(rows) / len(rows) if rows else math.nan


# -- setup ------------------------------------------------------------------------------------------------

def _model_path(cfg: RunConfig) -> str:
    path = Path(cfg.model.path).expanduser()
    if cfg.model.build_tiny and not (path / "config.json").exists():
        from mintgym.models.tiny import build_tiny_vlm

        build_tiny_vlm(path, seed=cfg.model.tiny_seed, **cfg.model.tiny_options)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no model at {path} (set model.build_tiny: true to build the tiny one)")
    return str(path)


def _provider(env: EnvConfig) -> Provider:
    """The provider that runs ``env``'s servers. Rollout workers reach env servers without a bearer token,
    so servers are bound on loopback: ray servers on their node's 127.0.0.1 (place the workers on the same
    nodes by resources), docker containers on the host network."""
    from mintgym.runtime.make import provider
    from mintgym.server.serve import is_loopback

    options = dict(env.provider_options)
    if env.provider == "ray":
        options.setdefault("bind", "127.0.0.1")
        if not is_loopback(options["bind"]):
            raise MintGymError(f"envs[{env.domain}]: ray env servers bound on {options['bind']} need a bearer "
                               "token, which rollout workers cannot send yet; bind 127.0.0.1 and place the "
                               "workers on the servers' nodes (rollout.worker_resources)")
        options.update(num_cpus=env.num_cpus or 0.0, resources=env.resources)
    elif env.provider == "docker":
        options.setdefault("network", "host")
        if options["network"] != "host":
            raise MintGymError(f"envs[{env.domain}]: docker network {options['network']!r} needs a bearer token, "
                               "which rollout workers cannot send yet; use provider_options: {network: host}")
    return provider(env.provider, **options)


def _start_env_servers(cfg: RunConfig, started: list[tuple[Provider, ServerHandle]]) -> dict[str, list[str]]:
    """Start every domain's servers (appending to ``started`` as they come up, so a failure stops the ones
    before it) and return their URLs per domain."""
    urls: dict[str, list[str]] = {}
    for domain in cfg.domains:
        env = cfg.env_for(domain)
        if env.urls:
            urls[domain] = list(env.urls)
            continue
        provider = _provider(env)
        handles = []
        for _ in range(env.servers):
            handles.append(provider.start(domain, options={"host_options": env.host_options}))
            started.append((provider, handles[-1]))
        for h in handles:
            provider.wait_ready(h, 180.0)
        urls[domain] = [h.base_url for h in handles]
    return urls


def _weight_transport(cfg: RunConfig, out: Path) -> WeightBroadcast:
    transport = cfg.weights.transport
    if transport == "ray":
        from mintgym.weights.ray_store import RayObjectStoreBroadcast

        return RayObjectStoreBroadcast(name=f"mintgym-weights-{uuid.uuid4().hex[:8]}")
    if transport == "filesystem":
        from mintgym.weights.filesystem import FilesystemBroadcast

        folder = Path(cfg.weights.folder).expanduser() if cfg.weights.folder else out / "weights"
        broadcast = FilesystemBroadcast(folder, keep=cfg.weights.keep)
        broadcast.reset()  # versions restart from the checkpoint's; engines then load the first send
        return broadcast
    if not torch.cuda.is_available():
        raise MintGymError("weights.transport vllm (vLLM's in-place weight update) is not available on CPU: it "
                           "needs CUDA GPUs; use weights.transport: ray or filesystem")
    raise MintGymError("weights.transport vllm (vLLM's in-place weight update) is not wired yet; use "
                       "weights.transport: ray (vllm engines load those weights through collective_rpc)")


def _finished_step(cfg: RunConfig, out: Path) -> int | None:
    """The last checkpoint's step if it reached ``train.steps`` (the run is finished), else None."""
    last = latest_checkpoint(out)
    step = checkpoint_step(last) if last is not None else None
    return step if step is not None and step >= cfg.train.steps else None


@contextlib.contextmanager
def _ray_quiet(out: Path, quiet: bool):
    """While Ray starts and creates actors, send what it prints (Python warnings such as the token-auth notice,
    and its C++ core's log lines, written straight to file descriptor 2) to ``<out>/ray.log``, not the
    console. ``log.ray: true`` (``--verbose``) leaves them on the console."""
    if not quiet:
        yield
        return
    import logging
    import sys

    ray_logger = logging.getLogger("ray")
    level = ray_logger.level
    sys.stderr.flush()
    saved = os.dup(2)
    with open(out / "ray.log", "ab") as sink:
        os.dup2(sink.fileno(), 2)
        ray_logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            ray_logger.setLevel(level)


class _Run:
    """The live parts of one run; ``close()`` stops all of them."""

    def __init__(self, cfg: RunConfig, out: Path, log: Callable[[str], None]):
        import ray

        self.cfg, self.out, self.log = cfg, out, log
        torch.manual_seed(cfg.train.seed)
        torch.set_num_threads(cfg.rollout.torch_threads)
        self.model_path = _model_path(cfg)
        self.workers: list[Any] = []
        self.buffer = None
        #: Env servers started here, with the provider that stops each.
        self.started: list[tuple[Provider, ServerHandle]] = []
        self._own_ray = not ray.is_initialized()
        if self._own_ray:  # Ray's own log lines (worker output, startup) reach the console with log.ray only
            with _ray_quiet(out, not cfg.log.ray):
                ray.init(address=cfg.ray_address or "local", include_dashboard=False, log_to_driver=cfg.log.ray,
                         configure_logging=cfg.log.ray, **({} if cfg.ray_address else {"num_cpus": 2}))
        try:
            self._start()
        except BaseException:
            self.close(fast=True)
            raise

    @property
    def handles(self) -> list[ServerHandle]:
        return [h for _, h in self.started]

    def _start(self) -> None:
        import ray

        from mintgym.models.loading import load_model, load_processor
        from mintgym.rollout.ray_worker import RolloutWorker, WorkerSpec

        cfg, out, log = self.cfg, self.out, self.log
        self.weights = _weight_transport(cfg, out)
        self.env_urls = _start_env_servers(cfg, self.started)
        train = cfg.train
        self.buffer = ray.remote(TrajectoryBuffer).options(num_cpus=0, max_concurrency=64).remote(
            cfg.domains, groups_per_step=train.groups_per_step,
            max_lag=0 if train.mode == "sync" else train.max_lag, weights=train.domain_weights,
            own_images=True)
        dtype = getattr(torch, cfg.model.dtype) if cfg.model.dtype else None
        self.learner = Learner(load_model(self.model_path, dtype=dtype, device=cfg.model.device),
                               load_processor(self.model_path), train)
        self.step = 0
        resume = latest_checkpoint(out)
        if resume is not None:
            state = load_checkpoint(resume, self.learner.model, self.learner.optimizer)
            self.step = int(state["step"])
            self.learner.restored(int(state["version"]))
            ray.get(self.buffer.load_state_dict.remote(state["buffer"]))
            log(f"resumed from {resume} at step {self.step} (version {self.learner.version})")
        self.weights.send(self.learner.version, self.learner.state_dict())
        self.published = self.learner.version
        #: Versions trained but not yet published (``publish_delay``), oldest first.
        self.held: list[tuple[int, dict[str, torch.Tensor]]] = []
        ro = cfg.rollout
        actor = ray.remote(RolloutWorker).options(max_restarts=ro.max_restarts, max_task_retries=0,
                                                  num_cpus=ro.worker_num_cpus, num_gpus=ro.worker_num_gpus,
                                                  resources=ro.worker_resources or None, max_concurrency=1000)
        for i in range(ro.workers):
            spec = WorkerSpec(worker_id=i, model_path=self.model_path, tasks=[(t.id, t.seeds, t.domain) for t in cfg.tasks for _ in range(t.weight)],
                              env_urls=self.env_urls,
                              eval_seeds={t.id: t.eval_seeds for t in cfg.tasks if t.eval_seeds},
                              session_options={d: cfg.env_for(d).session_options for d in cfg.domains},
                              engine=cfg.engine.name, engine_options=cfg.engine.options,
                              agent=cfg.agent.kind, agent_options=cfg.agent.options, max_turns=cfg.agent.max_turns,
                              group_size=ro.group_size, groups_in_flight=ro.groups_in_flight,
                              temperature=ro.temperature, max_new_tokens=ro.max_new_tokens,
                              episode_timeout=ro.episode_timeout, torch_threads=ro.torch_threads,
                              simulated_step_seconds=tuple(ro.simulated_step_seconds)
                              if ro.simulated_step_seconds else None,
                              seed=train.seed * 1000 + self.step)
            with _ray_quiet(out, not cfg.log.ray):
                self.workers.append(actor.remote(spec, self.buffer, self.weights))
        self.run_refs: dict[int, Any] = {}
        self.restarts = 0
        self.pending_syncs: list[tuple[int, float]] = []

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

        shares = [n_groups // len(self.workers) + (i < n_groups % len(self.workers)) for i in range(len(self.workers))]
        refs = {i: self.workers[i].run.remote(max_groups=s) for i, s in enumerate(shares) if s}
        for i, ref in refs.items():
            try:
                ray.get(ref)
            except RayActorError:
                self.restarts += 1
                self.log(f"rollout worker {i} died during collection; its groups are counted lost")

    # -- weights --------------------------------------------------------------------------------------

    def publish(self, final: bool = False) -> None:
        """Send the weights to the engines: the current ones, or with ``publish_delay`` those of that many
        versions ago (``final``: the current ones regardless, for the final evaluation)."""
        version, state = self.learner.version, self.learner.state_dict()
        delay = self.cfg.train.publish_delay
        if delay and not final:
            self.held.append((version, {k: v.clone() for k, v in state.items()}))
            due = [h for h in self.held if h[0] <= version - delay]
            if not due:
                return
            version, state = due[-1]
            self.held = [h for h in self.held if h[0] > version]
        if version <= self.published:
            return
        self.weights.send(version, state)
        self.published = version
        self.pending_syncs.append((version, time.monotonic()))

    def check_syncs(self, wait: bool) -> None:
        """Drop finished syncs; raise WeightSyncTimeout for one older than sync_timeout (or wait for all)."""
        import ray

        timeout = self.cfg.train.sync_timeout
        if wait:
            refs = [w.sync_weights.remote() for w in self.workers]
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
            if len(done) < len(refs):
                self._sync_failed(self.learner.version, timeout)
            self.pending_syncs.clear()
            return
        if not self.pending_syncs:
            return
        versions = self.weights.acks()
        oldest = min((versions.get(i, (-1, 0.0))[0] for i in range(len(self.workers))), default=-1)
        self.pending_syncs = [(v, t) for v, t in self.pending_syncs if v > oldest]
        for v, t in self.pending_syncs:
            if time.monotonic() - t > timeout:
                self._sync_failed(v, time.monotonic() - t)

    def _sync_failed(self, version: int, waited: float) -> None:
        import ray

        versions = self.weights.acks()
        lines = []
        for i, w in enumerate(self.workers):
            have = versions.get(i, (None, 0.0))
            try:
                status = ray.get(w.status.remote(), timeout=5)
                doing = f"{status['in_flight']} episodes in flight, {status['groups']} groups pushed"
            except Exception as err:  # the report must name the worker even when it cannot answer
                doing = f"not answering ({type(err).__name__})"
            if have[0] is None or have[0] < version:
                lines.append(f"worker {i} still at version {have[0]} ({doing})")
        raise WeightSyncTimeout(f"weights version {version} not loaded by every engine after {waited:.0f}s "
                                f"(sync_timeout={self.cfg.train.sync_timeout}s); the trainer was waiting on: "
                                + "; ".join(lines or ["(all caught up just now)"]))

    # -- end ------------------------------------------------------------------------------------------

    def evaluate(self, groups_per_task: int) -> dict[str, Any]:
        """Stop the async play, give every worker the final weights, play ``groups_per_task`` groups of
        every task with them (not trained on) and sum up the rewards per domain."""
        import ray

        for w in self.workers:
            w.stop.remote()
        if self.run_refs:
            ray.wait(list(self.run_refs.values()), num_returns=len(self.run_refs),
                     timeout=self.cfg.rollout.episode_timeout + 60)
        self.publish(final=True)
        self.check_syncs(wait=True)
        n = len(self.workers)
        parts = ray.get([w.evaluate.remote(groups_per_task, (i, n)) for i, w in enumerate(self.workers)])
        groups = [g for part in parts for g in part]
        domains: dict[str, dict[str, float]] = {}
        for d in self.cfg.domains:
            rewards = [r for g in groups if g["domain"] == d for r in g["rewards"]]
            domains[d] = {"mean_reward": sum(rewards) / len(rewards) if rewards else math.nan,
                          "episodes": len(rewards),
                          "failed_episodes": sum(g["errors"] for g in groups if g["domain"] == d)}
        return {"version": self.learner.version, "domains": domains, "groups": groups}

    def checkpoint(self) -> Path:
        import ray

        buffer_state = ray.get(self.buffer.state_dict.remote())
        return save_checkpoint(self.out, self.step, self.learner.model, self.learner.optimizer,
                               {"version": self.learner.version, "buffer": buffer_state})

    def close(self, fast: bool = False) -> None:
        """Stop workers, buffer and env servers. ``fast`` (after Ctrl-C): kill the workers without closing
        their env sessions (the servers started here go anyway) and give the servers 2 s, not 10; a
        further Ctrl-C meanwhile is ignored so that no server is left behind."""
        import signal
        import threading

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
            for provider, h in self.started:
                if provider.name == "local":
                    provider.stop(h, grace=2.0 if fast else 10.0)
                else:
                    provider.stop(h)
            self.started = []
            if self._own_ray:
                ray.shutdown()
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)


# -- the loop ------------------------------------------------------------------------------------------

def train(cfg: RunConfig, out: str | os.PathLike, *, max_steps: int | None = None,
          log: Callable[[str], None] = print, after_step: Callable[["_Run", dict], None] | None = None) -> RunResult:
    """Run (or resume from ``out``'s last checkpoint) until ``cfg.train.steps`` (or ``max_steps`` this call)."""
    import ray

    from mintgym.trainer.runlog import RunLogger

    out = Path(out)
    done = _finished_step(cfg, out)
    if done is not None:
        log(f"{out} is finished: its last checkpoint is at step {done} of train.steps {cfg.train.steps}; "
            f"nothing to do (raise train.steps, e.g. --steps {done + cfg.train.steps}, to train further)")
        return RunResult(out, done, resumed_from=done, finished=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))
    t_start = time.monotonic()
    run = _Run(cfg, out, log)
    try:
        logger = RunLogger(out, cfg.domains, start_step=run.step, wandb=cfg.log.wandb, config=cfg.to_dict())
    except BaseException:
        run.close(fast=True)
        raise
    if logger.rolled_back:
        log(f"{logger.rolled_back} metrics rows past step {run.step} (not checkpointed) moved to "
            "metrics.rolled_back.jsonl")
    result = RunResult(out, run.step, resumed_from=run.step)
    tc = cfg.train
    interrupted = False
    try:
        if tc.mode == "async":
            run.start_workers()
        end = tc.steps if max_steps is None else min(tc.steps, run.step + max_steps)
        first_step, t_loop = run.step, time.monotonic()
        while run.step < end:
            t0 = time.monotonic()
            version = run.learner.version
            if tc.mode == "sync":
                run.collect(tc.groups_per_step)
                batch = ray.get(run.buffer.get_batch.remote(tc.groups_per_step, version, 0.0))
            else:
                run.check_workers()
                ref = run.buffer.get_batch.remote(tc.groups_per_step, version, tc.batch_timeout)
                while not ray.wait([ref], timeout=1.0)[0]:
                    run.check_workers()
                    run.check_syncs(wait=False)
                batch = ray.get(ref)
            t_batch = time.monotonic()
            metrics = run.learner.step(batch)
            run.step += 1
            ray.get(run.buffer.set_trainer_version.remote(run.learner.version))
            if run.step % tc.sync_every == 0 or run.step == end:
                run.publish()
                run.check_syncs(wait=tc.mode == "sync")
            elapsed = time.monotonic() - t0
            metrics.update({"time/step": elapsed, "time/wait_batch": t_batch - t0,
                            "time/train": time.monotonic() - t_batch,
                            "throughput/samples_per_s": metrics.get("samples", 0.0) / max(elapsed, 1e-9),
                            "version": float(run.learner.version)})
            stats = ray.get(run.buffer.stats.remote())
            for k, v in stats["counts"].items():
                metrics[f"buffer/{k}"] = float(v)
            metrics["workers/restarts"] = float(run.restarts)
            result.history.append(metrics)
            logger.write(run.step, metrics)
            every = cfg.log.sample_episodes_every
            if every and run.step % every == 0:  # after the step's timings: not counted in time/step
                _write_samples(run, batch)
            per_step = (time.monotonic() - t_loop) / (run.step - first_step)
            log(logger.progress(run.step, end, metrics, elapsed=time.monotonic() - t_start,
                                eta=per_step * (end - run.step)))
            if tc.checkpoint_every and run.step % tc.checkpoint_every == 0:
                run.checkpoint()
            if after_step is not None:
                after_step(run, metrics)
        run.checkpoint()
        result.steps = run.step
        result.buffer = ray.get(run.buffer.stats.remote())
        result.worker_restarts = run.restarts
        if tc.eval_groups:
            result.final_eval = run.evaluate(tc.eval_groups)
            (out / "final_eval.json").write_text(json.dumps(result.final_eval, indent=2))
            log(f"final eval of version {result.final_eval['version']}: " + ", ".join(
                f"{d} {v['mean_reward']:.2f} ({v['episodes']} episodes)"
                for d, v in result.final_eval["domains"].items()))
    except KeyboardInterrupt:
        interrupted = True
        last = latest_checkpoint(out)
        log(f"interrupted at step {run.step}: stopping workers and env servers; "
            + (f"run again with the same --out to resume from {last.name}" if last else "no checkpoint yet"))
        raise
    finally:
        logger.close()
        run.close(fast=interrupted)
    logger.plot(out / "reward_curve.png")
    result.seconds = time.monotonic() - t_start
    log(f"finished step {result.steps}/{tc.steps} in {clock(result.seconds)}")
    return result


def _write_samples(run: _Run, batch: Any) -> None:
    from mintgym.trainer.samples import write_sample_episodes

    cfg = run.cfg
    write_sample_episodes(run.out, run.step, batch, n=cfg.log.sample_episodes,
                          tokenizer=getattr(run.learner.processor, "tokenizer", None), agent=cfg.agent.kind,
                          advantage=cfg.train.advantage, scale=cfg.train.scale_advantages)
