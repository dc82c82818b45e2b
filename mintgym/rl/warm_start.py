"""The supervised warm start of a fresh run (``warm_start`` in the run config), between the learner's
creation and the first weights the samplers get.

With ``oracle: true`` the run first plays every task's oracle (the scripted agent, acting through the same
pixel actions) on the task's ``oracle_seeds`` (else its training ``seeds``) through the run's own env servers, into
``<out>/warm_start/oracle``; those episodes are replayed through the run's agent
(:mod:`mintgym.trajectory.imitation`) into ``<out>/warm_start/dataset``, the same dataset
``mintgym export <out>/warm_start/oracle --agent KIND`` writes, made of this config's oracle episodes only
(a rerun whose seeds changed rebuilds it: episodes played for an earlier config stay in the folder, unread).
Then ``steps`` supervised steps (:mod:`mintgym.trainer.sft`) train the learner's model on it. Held-out
``eval_seeds`` are never played.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mintgym.config import RunConfig
from mintgym.errors import MintGymError


def oracle_jobs(cfg: RunConfig) -> dict[str, list[Any]]:
    """Per task, the oracle's episodes (:class:`~mintgym.rollout.runner.EpisodeJob`): one on each of its
    ``oracle_seeds`` (else its training ``seeds``)."""
    from mintgym.rollout.runner import EpisodeJob

    jobs = {}
    for task in cfg.tasks:
        seeds = task.oracle_seeds or task.seeds
        if not seeds:
            raise MintGymError(f"warm_start.oracle: task {task.id} lists no training seeds to play the oracle on")
        jobs[task.id] = [EpisodeJob(task.id, seed, key=f"{task.id.replace('/', '.')}-seed{seed}") for seed in seeds]
    return jobs


def demonstrator(cfg: RunConfig) -> Any:
    """A new demonstrator agent (``warm_start.demonstrator`` with its options); MintGymError naming what is wrong
    with it (not found, options it does not take, not an agent)."""
    from mintgym.agents import make_agent

    ws = cfg.warm_start
    try:
        return make_agent(ws.demonstrator, **ws.demonstrator_options)
    except (ValueError, TypeError) as err:
        raise MintGymError(f"warm_start.demonstrator: {err}") from None


def demonstrations_folder(cfg: RunConfig, out: Path) -> Path:
    """Where the demonstrator's episodes go: ``<out>/warm_start/oracle`` for the task's oracle, else a folder
    named by the demonstrator and its options (a rerun with another teacher does not resume the first one's)."""
    ws = cfg.warm_start
    if ws.demonstrator == "scripted" and not ws.demonstrator_options:
        return out / "warm_start" / "oracle"
    spec = json.dumps([ws.demonstrator, ws.demonstrator_options], sort_keys=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", ws.demonstrator).strip("-")[:40]
    return out / "warm_start" / f"demos-{name}-{hashlib.sha256(spec.encode()).hexdigest()[:8]}"


def play_oracle(cfg: RunConfig, env_urls: dict[str, list[str]], run_dir: Path,
                log: Callable[[str], None] = print) -> dict[str, int]:
    """Play the demonstrator (the task's oracle unless ``warm_start.demonstrator`` names another agent) once on
    each of a task's ``oracle_seeds`` (else its training ``seeds``) into ``run_dir``, in sessions with the
    domain's ``session_options`` (the screens RL will play); returns {task: successes}."""
    from mintgym.rollout.runner import run_jobs
    from mintgym.trajectory.store import iter_run

    played = {t.id: t for _, t in iter_run(run_dir)} if run_dir.is_dir() else {}  # a restarted run resumes
    successes: dict[str, int] = {}
    who = "the oracle" if cfg.warm_start.demonstrator == "scripted" else cfg.warm_start.demonstrator
    for task in cfg.tasks:
        jobs = oracle_jobs(cfg)[task.id]
        done = [played[j.key] for j in jobs if j.key in played]
        todo = [j for j in jobs if j.key not in played]
        log(f"warm start: playing {who} on {task.id}'s {len(jobs)} "
            + ("oracle_seeds" if task.oracle_seeds else "training seeds")
            + (f" ({len(done)} played before)" if done else ""))
        done += asyncio.run(run_jobs(env_urls[task.domain][0], todo, lambda: demonstrator(cfg), concurrency=2,
                                     run_dir=run_dir, max_seconds=cfg.rollout.episode_timeout,
                                     observe=tuple(cfg.agent.observe),
                                     env_options=cfg.env_for(task.domain).session_options)) if todo else []
        successes[task.id] = sum(t.success for t in done)
        if not successes[task.id] and cfg.warm_start.successful_only:
            raise MintGymError(f"warm_start.oracle: {who} solved none of {task.id}'s {len(jobs)} "
                               f"training seeds (episodes in {run_dir}); nothing to learn from")
    return successes


def check_dataset(cfg: RunConfig) -> str | None:
    """A given ``warm_start.dataset``: that it is there and that none of its examples was played on a task's
    held-out ``eval_seeds`` (the final eval would score seeds the model was taught). MintGymError naming the
    first ones if so; returns a line to log where it cannot tell (a dataset without its ``seed`` column, as
    exported before it had one), else None."""
    import datasets

    path = Path(cfg.warm_start.dataset or "").expanduser()
    if not cfg.warm_start.dataset or not (path / "dataset_info.json").is_file():
        raise MintGymError(f"warm_start.dataset: no dataset at {path} (write one with `mintgym export RUN "
                           f"--out {path} --agent {cfg.agent.kind}`)")
    held_out = {task.id: set(task.eval_seeds) for task in cfg.tasks if task.eval_seeds}
    if not held_out:
        return None
    dataset = datasets.load_from_disk(str(path))
    if "seed" not in dataset.column_names:
        return (f"warm start: {path} has no seed column (exported before it had one), so it cannot be checked "
                "against the tasks' held-out eval_seeds; export it again to have it checked")
    leaked = sorted({(task_id, seed) for task_id, seed in zip(dataset["task_id"], dataset["seed"], strict=True)
                     if seed in held_out.get(task_id, ())})
    if leaked:
        shown = ", ".join(f"{task_id} seed {seed}" for task_id, seed in leaked[:5])
        raise MintGymError(f"warm_start.dataset {path} holds episodes of held-out eval_seeds ({shown}"
                           f"{', ...' if len(leaked) > 5 else ''}): the final eval would score seeds the model was "
                           f"taught; export it again without them (mintgym export RUN --out DIR --agent "
                           f"{cfg.agent.kind} " + " ".join(f"--skip-seed {s}" for s in sorted({s for _, s in leaked}))
                           + ")")
    return None


def warm_start(cfg: RunConfig, model: Any, processor: Any, env_urls: dict[str, list[str]], out: Path,
               log: Callable[[str], None], *, train: Callable[[Path], dict[str, Any]] | None = None
               ) -> dict[str, Any] | None:
    """Run the configured warm start on ``model`` in place (as the learner holds it: float32 masters under
    ``train.precision: mixed``, trained under its autocast); returns its summary (None: not configured). The
    summary also goes to ``<out>/warm_start/summary.json``. ``train`` runs the supervised steps on the dataset
    folder it is given (default :func:`supervised_warm_start` on ``model``; a sharded learner's rank 0 has every
    rank run them)."""
    import datasets

    from mintgym.inference.hf import HFEngine
    from mintgym.rollout.agents import agent_factory
    from mintgym.trajectory.imitation import imitation_dataset

    ws = cfg.warm_start
    if not ws.steps:
        return None
    datasets.disable_progress_bars()
    folder = out / "warm_start"
    summary: dict[str, Any] = {"steps": ws.steps, "lr": ws.lr, "batch_size": ws.batch_size}
    if ws.oracle:
        path, listed = folder / "dataset", folder / "dataset_episodes.json"
        episodes = demonstrations_folder(cfg, out)
        keys = sorted(job.key for jobs in oracle_jobs(cfg).values() for job in jobs)
        built_from = {"demonstrations": episodes.name, "successful_only": ws.successful_only, "episodes": keys}
        if (not (path / "dataset_info.json").exists() or not listed.is_file()
                or json.loads(listed.read_text()) != built_from):
            started = time.monotonic()
            summary["oracle_successes"] = play_oracle(cfg, env_urls, episodes, log)
            played = time.monotonic()
            engine = HFEngine(model=model, processor=processor)
            dataset = imitation_dataset(episodes, agent_factory(cfg.agent.kind, cfg.agent.options, engine,
                                                                max_new_tokens=cfg.rollout.max_new_tokens,
                                                                temperature=cfg.rollout.temperature),
                                        episodes=set(keys), only_success=ws.successful_only)
            if path.exists():  # built for other seeds: derived data, rebuilt from the episodes kept beside it
                shutil.rmtree(path)
            dataset.save_to_disk(str(path))
            listed.write_text(json.dumps(built_from))
            log(f"warm start: {len(dataset)} examples in the {cfg.agent.kind} agent's format -> {path} (oracle "
                f"{played - started:.0f} s, export {time.monotonic() - played:.0f} s)")
    else:
        path = Path(ws.dataset).expanduser()
        unchecked = check_dataset(cfg)
        if unchecked:
            log(unchecked)
            summary["held_out_checked"] = False
    if train is None:
        summary.update(supervised_warm_start(cfg, model, processor, path, log))
    else:
        summary.update(train(path))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def supervised_warm_start(cfg: RunConfig, model: Any, processor: Any, path: Path, log: Callable[[str], None], *,
                          root: Any = None, shards: Any = None) -> dict[str, Any]:
    """The warm start's ``steps`` supervised steps on the imitation dataset at ``path``; returns the summary's
    dataset, example count and losses. Sharded (``shards``, ``root`` the learner's FSDP root), every rank calls it
    and runs its share of each batch."""
    import datasets
    import torch

    from mintgym.trainer.precision import Precision
    from mintgym.trainer.sft import dataset_sequences, supervised_steps

    ws = cfg.warm_start
    datasets.disable_progress_bars()
    dataset = datasets.load_from_disk(str(path))
    started = time.monotonic()
    sequences = dataset_sequences(dataset, model, processor)
    log(f"warm start: {len(sequences)} sequences tokenized in {time.monotonic() - started:.0f} s")
    every = max(1, ws.steps // 10)
    precision = Precision.of(getattr(torch, cfg.model.dtype or "float32"), cfg.train.precision)  # the learner's
    losses = supervised_steps(model if root is None else root, sequences, steps=ws.steps, lr=ws.lr,
                              batch_size=ws.batch_size, seed=cfg.train.seed, micro_batch=cfg.train.micro_batch,
                              precision=precision, shards=shards,
                              log=lambda k, loss: k % every == 0 and log(f"warm start step {k}/{ws.steps}: "
                                                                         f"loss {loss:.3f}"))
    return {"dataset": str(path), "examples": len(sequences), "first_loss": losses[0], "last_loss": losses[-1],
            "losses": losses}
