"""Layer 7: a run's policy evaluated as any agent is: through ``mintgym eval``'s harness, with the run's spec.

The run's tasks are played on their held-out seeds (``eval_seeds``; a task without them on its ``seeds``, the
first ``eval.groups`` of them when that is set), one episode a seed, by the run's own agent (its kind and
options, the rollout's ``max_new_tokens``) at ``eval.temperature`` (else the rollout's temperature), over
the run's engine loaded from a checkpoint folder (or an OpenAI-compatible server that serves it). The output is
the harness's: ``results.json``, ``report.html`` and every episode's trajectory.

``mintgym eval --config RUN.yaml`` and ``mintgym eval --model RUN_FOLDER`` call :func:`evaluate_policy`; so
does a run's final evaluation (``eval.groups``), on its final checkpoint, into ``<out>/eval/``, with
``<out>/final_eval.json`` the per-domain summary (:func:`summary`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mintgym.config import RunConfig, engine_kwargs
from mintgym.errors import MintGymError

#: Where a run's final evaluation writes its results (``mintgym eval``'s layout), under the run folder.
FINAL_EVAL_DIR = "eval"


def held_out_suite(cfg: RunConfig, per_task: int | None = None) -> Any:
    """The run's tasks on their held-out seeds (see the module docstring) as a harness benchmark."""
    from mintgym.evals.suites import Benchmark

    limit = per_task or cfg.eval.groups or None
    task_seeds = []
    for task in cfg.tasks:
        seeds = list(task.eval_seeds or task.seeds or range(limit or 1))
        task_seeds.append((task.id, tuple(seeds[:limit] if limit else seeds)))
    ids = tuple(dict.fromkeys(task.id for task in cfg.tasks))
    return Benchmark(name="run-held-out", task_ids=ids, description="the run's tasks on their held-out seeds",
                     max_steps=cfg.agent.max_turns, task_seeds=tuple(task_seeds))


def temperature_of(cfg: RunConfig) -> float:
    return cfg.rollout.temperature if cfg.eval.temperature is None else cfg.eval.temperature


def describe(cfg: RunConfig, model: str, engine: str, model_url: str | None = None) -> dict[str, Any]:
    """What the evaluation records about its agent (``run.json``'s key): the spec's agent, engine and model."""
    return {"agent": cfg.agent.kind, "agent_options": cfg.agent.options, "engine": engine, "model": model,
            "model_url": model_url, "engine_options": engine_kwargs(cfg.engine), "temperature": temperature_of(cfg),
            "max_new_tokens": cfg.rollout.max_new_tokens}


def agent_maker(cfg: RunConfig, sampler: Any) -> Callable[[], Any]:
    """Fresh agents of the run's kind and options over ``sampler``, made as the run's workers make them."""
    from mintgym.rollout.agents import agent_factory, with_temperature

    temperature = temperature_of(cfg)
    return agent_factory(cfg.agent.kind, with_temperature(cfg.agent.options, temperature), sampler,
                         max_new_tokens=cfg.rollout.max_new_tokens, temperature=temperature)


def open_policy(cfg: RunConfig, model: str | None, model_url: str | None, concurrency: int,
                api_key: str | None = None) -> tuple[Any, str]:
    """The engine agents sample the policy from: the run's engine on the ``model`` folder, or an ``openai``
    engine on ``model_url`` (a server that serves it); with the engine's name."""
    from mintgym.rollout.engines import open_engine

    if model_url:
        _, sampler = open_engine("openai", base_url=model_url, model=model, api_key=api_key)
        return sampler, "openai"
    batch = min(concurrency, cfg.engine.options.max_batch_size)
    _, sampler = open_engine(cfg.engine.name, batch=batch, model_path=model, **engine_kwargs(cfg.engine))
    return sampler, cfg.engine.name


def env_settings(cfg: RunConfig) -> dict[str, Any]:
    """The run's session and host options per domain and its agent's observation channels, as the harness's
    config takes them."""
    return {"env_options": {env.domain: env.session_options for env in cfg.envs if env.session_options},
            "host_options": {env.domain: env.host_options for env in cfg.envs if env.host_options},
            "observe": tuple(cfg.agent.observe)}


def evaluate_policy(cfg: RunConfig, model: str | None, config: Any, *, benchmark: Any = None,
                    model_url: str | None = None, api_key: str | None = None) -> dict[str, Any]:
    """Play ``benchmark`` (default: the run's held-out seeds) with the run's agent on the policy in ``model`` (a
    model folder) or served at ``model_url``, under the harness's ``config`` (an
    :class:`~mintgym.evals.harness.EvalConfig`; its ``describe`` is set here); write and return the results.
    The run's session and host options (``envs[]``) apply. One-line :class:`MintGymError` (or ``ValueError``) for
    a folder another evaluation made or an engine that does not start, each before any episode."""
    import dataclasses

    from mintgym.errors import first_line
    from mintgym.evals.harness import eval_folder, run_eval

    benchmark = benchmark or held_out_suite(cfg)
    engine = "openai" if model_url else cfg.engine.name
    config = dataclasses.replace(config, describe=describe(cfg, str(model), engine, model_url), **env_settings(cfg))
    eval_folder(benchmark, config)  # refused before an engine or a server starts
    try:
        sampler, _ = open_policy(cfg, model, model_url, config.concurrency, api_key)
    except (ValueError, OSError, ImportError, MintGymError) as err:
        raise MintGymError(f"cannot start the {engine} engine: {first_line(err, repr(err))}") from None
    try:
        return run_eval(benchmark, agent_maker(cfg, sampler), config)
    finally:
        sampler.close()


def held_out_point(cfg: RunConfig, model: Any, processor: Any, env_urls: dict[str, list[str]]) -> dict[str, float]:
    """One point of the held-out curve (``eval.every``): ``model`` (the trainer's weights, in this process) plays
    one episode on each of the first ``eval.every_groups`` held-out seeds of every task with the run's agent at
    the eval temperature, on the run's env servers (``env_urls``: a domain's first). Nothing is written; returns
    ``eval/mean`` (over every episode that ended), ``eval/<domain>``, ``eval/episodes``, ``eval/failed`` (errors
    and timeouts, left out of the means) and ``time/eval`` (seconds)."""
    import asyncio
    import time

    from mintgym.rollout.engines import open_engine
    from mintgym.rollout.runner import EpisodeJob, run_jobs

    started = time.monotonic()
    domain_of = {task.id: task.domain for task in cfg.tasks}
    options = {env.domain: env.session_options for env in cfg.envs if env.session_options}
    concurrency = max(1, cfg.rollout.group_size * cfg.rollout.groups_in_flight)
    _, sampler = open_engine("hf", batch=min(concurrency, cfg.engine.options.max_batch_size), model=model,
                             processor=processor, aligned_logprobs=False)
    rewards: dict[str, list[float]] = {}
    failed = 0
    try:
        for task_id, seeds in held_out_suite(cfg, per_task=cfg.eval.every_groups).task_seeds:
            domain = domain_of[task_id]
            jobs = [EpisodeJob(task_id, seed, key=f"{task_id}-{seed}") for seed in seeds]
            played = asyncio.run(run_jobs(env_urls[domain][0], jobs, agent_maker(cfg, sampler),
                                          concurrency=concurrency, max_seconds=cfg.rollout.episode_timeout,
                                          max_steps=cfg.agent.max_turns, env_options=options.get(domain),
                                          observe=tuple(cfg.agent.observe)))
            for traj in played:
                if traj.status in ("error", "timeout"):
                    failed += 1
                else:
                    rewards.setdefault(domain, []).append(float(traj.total_reward))
    finally:
        sampler.close()
    every = [r for domain_rewards in rewards.values() for r in domain_rewards]
    metrics = {f"eval/{domain}": sum(r) / len(r) for domain, r in rewards.items()}
    metrics.update({"eval/mean": sum(every) / len(every) if every else math.nan, "eval/episodes": float(len(every)),
                    "eval/failed": float(failed), "time/eval": time.monotonic() - started})
    return metrics


def summary(results: dict[str, Any], version: int | None, checkpoint: Path, temperature: float) -> dict[str, Any]:
    """``final_eval.json``: the evaluation's rewards per domain, beside the checkpoint and results it came from."""
    domains: dict[str, dict[str, float]] = {}
    for episode in results["episodes"]:
        entry = domains.setdefault(episode["domain"], {"rewards": [], "failed": 0})
        if episode["status"] in ("error", "timeout"):
            entry["failed"] += 1
        else:
            entry["rewards"].append(float(episode["reward"]))
    return {"version": version, "checkpoint": str(checkpoint), "temperature": temperature,
            "results": f"{FINAL_EVAL_DIR}/results.json",
            "domains": {d: {"mean_reward": sum(e["rewards"]) / len(e["rewards"]) if e["rewards"] else math.nan,
                            "episodes": len(e["rewards"]), "failed_episodes": e["failed"]}
                        for d, e in sorted(domains.items())}}
