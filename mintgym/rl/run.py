"""Layer 7 entry: the RL loop, async (the default) or sync, on one code path. Reads top to bottom.

:class:`~mintgym.rl.components.Run` builds every part from the typed config (env servers by
``envs[].provider``: local, docker, ray, or given URLs; the weight transport by ``weights.transport``; the
buffer actor; rollout worker actors placed by ``rollout.worker_resources``; the learner). This loop drives it:

- ``async``: workers play continuously and push groups; each step the trainer streams a mixed batch from
  the buffer (each group's gradient computed as it arrives, one optimizer step when the quotas are full),
  and publishes weights every ``sync_every`` steps. Workers load them before their
  next model call and acknowledge them to the transport; a publication not loaded by every worker within
  ``sync_timeout`` fails the run with who is behind and what it was doing.
- ``sync``: each step the workers play one batch with the current weights (within ``batch_timeout``, else
  the run fails naming the workers not done), the trainer trains, publishes, and waits (``sync_timeout``)
  until every worker has loaded the new weights.

Both modes restart an env server the run started that dies (the workers move to the replacement; one that
cannot be restarted fails the run naming it), show failed episodes and lost groups in each step's metrics
and progress line, and fail after ``train.max_failed_steps`` steps in a row (default 3) that trained on
nothing because every episode failed, naming the most frequent error.

A run whose last checkpoint is at ``train.steps`` is finished: calling it again returns at once (raise
``train.steps`` to continue it). Before anything starts, the tasks are checked against the registry and the
run folder against its record (:mod:`mintgym.rl.run_folder`). SIGTERM (a job scheduler's stop) stops the run
as Ctrl-C does: workers and env servers stopped, the last checkpoint named.

Launch with ``mintgym train --config examples/quickstart.yaml --out runs/q``; with the learner sharded over the
GPUs of a node, ``torchrun --nproc-per-node N -m mintgym.cli train ...`` (rank 0 runs this loop, the other ranks
follow its learner calls: :mod:`mintgym.rl.lockstep`).
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mintgym.buffer.types import Batch
from mintgym.config import RunConfig
from mintgym.errors import MintGymError
from mintgym.rl import wiring
from mintgym.rl.components import Run
from mintgym.rl.evaluate import FINAL_EVAL_DIR, evaluate_policy, held_out_point, summary, temperature_of
from mintgym.rl.lockstep import Ranks
from mintgym.rl.run_folder import open_run_folder
from mintgym.trainer.ckpt import latest_checkpoint
from mintgym.trainer.runlog import RunLogger, clock


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
    #: ``eval.groups``: the final weights' rewards per domain (see :func:`mintgym.rl.evaluate.final_eval`).
    final_eval: dict[str, Any] | None = None
    #: The run had reached ``train.steps`` already: nothing was started.
    finished: bool = False
    #: The last checkpoint this call wrote (None when it wrote none).
    checkpoint: Path | None = None
    #: ``eval.every``: the held-out curve's points of this call, each ``{"step": k, "eval/mean": ...}``.
    curve: list[dict[str, float]] = field(default_factory=list)

    def mean_reward(self, first: bool, k: int = 3) -> float:
        rows = [h["reward/mean"] for h in self.history if not math.isnan(h.get("reward/mean", math.nan))]
        rows = rows[:k] if first else rows[-k:]
        return sum(rows) / len(rows) if rows else math.nan


def train(cfg: RunConfig, out: str | os.PathLike, *, max_steps: int | None = None,
          log: Callable[[str], None] = print, after_step: Callable[[Run, dict], None] | None = None,
          ranks: Ranks | None = None) -> RunResult:
    """Run (or resume from ``out``'s last checkpoint) until ``cfg.train.steps`` (or ``max_steps`` this call).
    ``ranks``: rank 0's view of torchrun's ranks (:func:`mintgym.rl.lockstep.join`), whose learner calls the
    other ranks follow; the caller stops them (:meth:`~mintgym.rl.lockstep.Ranks.stop`) once this returns."""
    # -- a finished run, or the parts of a new or resumed one --------------------------------------------
    out = Path(out)
    done = wiring.finished_step(cfg, out)
    if done is not None:
        log(f"{out} is finished: its last checkpoint is at step {done} of train.steps {cfg.train.steps}; "
            f"nothing to do (raise train.steps, e.g. --steps {done + cfg.train.steps}, to train further)")
        return RunResult(out, done, resumed_from=done, finished=True)
    wiring.preflight(cfg, out)
    if cfg.eval.every and ranks is not None:
        raise MintGymError("eval.every: the held-out curve runs the trainer's model in one process, which a learner "
                           "sharded under torchrun does not hold; set eval.every: 0 (the final eval still runs)")
    open_run_folder(cfg, out, log)
    t_start = time.monotonic()
    before = wiring.interrupt_on_sigterm()
    try:
        return _train(cfg, out, max_steps, log, after_step, t_start, ranks)
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)


def _train(cfg: RunConfig, out: Path, max_steps: int | None, log: Callable[[str], None],
           after_step: Callable[[Run, dict], None] | None, t_start: float, ranks: Ranks | None) -> RunResult:
    import ray

    log(f"starting Ray (then env servers, the learner and {cfg.rollout.workers} rollout worker(s))")
    try:
        run = Run(cfg, out, log, ranks)
    except KeyboardInterrupt:
        last = latest_checkpoint(out)
        log("interrupted while starting (or warm-starting): "
            + (f"run again with the same --out to resume from {last.name}" if last else
               "nothing trained is saved; run again with the same --out to start over (a warm start keeps the "
               "oracle episodes it played)"))
        raise
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
        # -- the steps ---------------------------------------------------------------------------------
        end = tc.steps if max_steps is None else min(tc.steps, run.step + max_steps)
        if cfg.eval.every and run.step == 0:  # the warm start's level, before the workers compete for the CPU
            point = _held_out_point(run, 0, result, log)
            logger.write(0, point)
        if tc.mode == "async":
            run.start_workers()
        log(f"started in {clock(time.monotonic() - t_start)}; warming up: step {run.step + 1} waits for the "
            f"workers' first {tc.groups_per_step} group(s) (the ETA shows from step {run.step + 1 + ETA_STEPS} on)")
        first_step, t_warm = run.step, None
        max_failed = tc.max_failed_steps
        failed_steps = 0  # steps in a row that trained on nothing because every episode that ended failed
        while run.step < end:
            t0 = time.monotonic()
            if tc.mode == "sync":
                run.collect(tc.groups_per_step, tc.batch_timeout)
            batch, t_batch, learner_s = _stream_batch(run, 0.0 if tc.mode == "sync" else tc.batch_timeout)
            metrics = run.learner.finish(batch, lr=tc.lr_at(run.step + 1))
            run.step += 1
            ray.get(run.buffer.set_trainer_version.remote(run.learner.version))
            if run.step % tc.sync_every == 0 or run.step == end:
                run.publish()
                if tc.mode == "sync":
                    run.sync.wait_all()
                else:
                    run.sync.check()
            elapsed = time.monotonic() - t0
            metrics.update({"time/step": elapsed, "time/wait_batch": t_batch - t0,
                            "time/train": time.monotonic() - t_batch,
                            "time/learner": learner_s + time.monotonic() - t_batch,
                            "throughput/samples_per_s": metrics.get("samples", 0.0) / max(elapsed, 1e-9),
                            "version": float(run.learner.version)})
            stats = ray.get(run.buffer.stats.remote())
            for k, v in stats["counts"].items():
                metrics[f"buffer/{k}"] = float(v)
            metrics["workers/restarts"] = float(run.restarts)
            metrics["env/server_restarts"] = float(run.server_restarts)
            episodes = run.episode_report()
            metrics.update(episodes.metrics())
            if cfg.eval.every and (run.step % cfg.eval.every == 0 or run.step == end):
                metrics.update(_held_out_point(run, run.step, result, log))
            result.history.append(metrics)
            logger.write(run.step, metrics)
            every = cfg.log.sample_episodes_every
            if every and run.step % every == 0:  # after the step's timings: not counted in time/step
                _write_samples(run, batch)
            log(logger.progress(run.step, end, metrics, elapsed=time.monotonic() - t_start,
                                eta=eta(t_warm, run.step - first_step - 1, end - run.step)) + episodes.summary())
            if t_warm is None:
                t_warm = time.monotonic()  # the first step's wait (model loads, first groups) is not a step's cost
            if metrics.get("samples") or (episodes.episodes and not episodes.all_failed):
                failed_steps = 0
            elif episodes.all_failed:
                failed_steps += 1
            # else no episode ended during this step: the streak neither grows nor breaks
            if max_failed and failed_steps >= max_failed:
                kind, count = episodes.most_frequent()
                raise MintGymError(f"{failed_steps} steps in a row trained on nothing: every episode failed "
                                   f"(train.max_failed_steps {max_failed}); most frequent error ({count}x): {kind}")
            if tc.checkpoint_every and run.step % tc.checkpoint_every == 0:
                run.checkpoint()
            if after_step is not None:
                after_step(run, metrics)
        # -- the end: checkpoint (unless the last step just wrote it), final eval --------------------------
        if not (tc.checkpoint_every and run.step % tc.checkpoint_every == 0):
            run.checkpoint()
        result.steps = run.step
        result.checkpoint = latest_checkpoint(out)
        result.buffer = ray.get(run.buffer.stats.remote())
        result.worker_restarts = run.restarts
        if run.cfg.eval.groups:
            result.final_eval = _final_eval(run, out, log)
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


#: Steps after the first that the ETA averages before it shows: in async mode a step that finds its groups
#: already played (lag) takes no time and the next one waits, so one step alone misjudges the pace.
ETA_STEPS = 2


def eta(since: float | None, steps_since: int, left: int) -> float | None:
    """Seconds left for ``left`` steps, at the mean pace of the ``steps_since`` steps that ended after
    ``since`` (the end of the first step of this process); None before there are :data:`ETA_STEPS` of them.
    The first step is left out: it also waits for the workers' engines to load and play their first groups
    (on a tiny run, ten times a step)."""
    if since is None or steps_since < ETA_STEPS:
        return None
    return (time.monotonic() - since) / steps_since * left


def _held_out_point(run: Run, step: int, result: RunResult, log: Callable[[str], None]) -> dict[str, float]:
    """The held-out curve's point after ``step`` (:func:`mintgym.rl.evaluate.held_out_point`), kept in
    ``result.curve`` and logged on the console."""
    point = held_out_point(run.cfg, run.learner.model, run.learner.processor, run.env_urls)
    result.curve.append({"step": float(step), **point})
    log(f"held-out eval after step {step}: {point['eval/mean']:.3f} on {point['eval/episodes']:.0f} episodes"
        + (f" ({point['eval/failed']:.0f} failed)" if point["eval/failed"] else "") + f" in {point['time/eval']:.1f} s")
    return point


def _final_eval(run: Run, out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """The final checkpoint evaluated as ``mintgym eval --model OUT`` evaluates it (:mod:`mintgym.rl.evaluate`),
    on the run's own env servers, into ``OUT/eval/``; its per-domain summary written to ``OUT/final_eval.json``."""
    cfg = run.cfg
    run.stop_play()
    run.check_servers()
    checkpoint = latest_checkpoint(out)
    assert checkpoint is not None  # the loop has just written it
    from mintgym.evals.harness import EvalConfig

    config = EvalConfig(out=out / FINAL_EVAL_DIR, force=True, progress=False, max_seconds=cfg.rollout.episode_timeout,
                        env_url={domain: urls[0] for domain, urls in run.env_urls.items()},
                        concurrency=max(1, cfg.rollout.group_size * cfg.rollout.groups_in_flight))
    results = evaluate_policy(cfg, str(checkpoint), config)
    final = summary(results, run.learner.version, checkpoint, temperature_of(cfg))
    (out / "final_eval.json").write_text(json.dumps(final, indent=2))
    log(f"final eval of {checkpoint.name} (version {final['version']}): " + ", ".join(
        f"{d} {v['mean_reward']:.3f} ({v['episodes']} episodes)" for d, v in final["domains"].items())
        + f"; results {out / FINAL_EVAL_DIR / 'results.json'}, report {out / FINAL_EVAL_DIR / 'report.html'}")
    return final


def _stream_batch(run: Run, timeout: float) -> tuple[Batch, float, float]:
    """Feed the step's groups to the learner as the buffer hands them over, until the batch is full or
    ``timeout`` s pass (then it is trained short, the gap counted): the trainer computes the gradients of the
    groups that arrived while the rest are still being played, so only the last group's share and the
    optimizer step remain once it arrives. Returns the batch (the groups the learner trained on), when its
    last group arrived, and the seconds the learner spent before that."""
    import ray

    n, version = run.cfg.train.groups_per_step, run.learner.version
    deadline = time.monotonic() + timeout
    run.learner.begin()
    groups: list[Any] = []
    learner_s = 0.0
    while True:
        part, lacking = ray.get(run.buffer.take.remote(n, version, max(0.0, min(1.0, deadline - time.monotonic()))))
        t_arrived = time.monotonic()
        if lacking == 0 or t_arrived >= deadline:
            break
        if part:
            groups += run.learner.add(part)
            learner_s += time.monotonic() - t_arrived
        run.check_workers()
        run.check_servers()
        run.sync.check()
    groups += run.learner.add(part)
    stats = ray.get(run.buffer.close_batch.remote(n, version))
    return Batch(groups=groups, trainer_version=version, domains=stats), t_arrived, learner_s


def _write_samples(run: Run, batch: Any) -> None:
    from mintgym.trainer.samples import write_sample_episodes

    cfg = run.cfg
    write_sample_episodes(run.out, run.step, batch, n=cfg.log.sample_episodes,
                          tokenizer=getattr(run.learner.processor, "tokenizer", None), agent=cfg.agent.kind,
                          advantage=cfg.train.advantage, scale=cfg.train.scale_advantages)
