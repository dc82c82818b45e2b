"""The evaluation harness: run a :class:`~mintgym.evals.suites.Benchmark` with an agent and report it.

Rollout without buffer or trainer. Tasks are grouped by domain; each domain gets one env server (started
by a runtime provider, ``local`` by default, or a running one given by URL) and its episodes run
``concurrency`` at a time through :func:`mintgym.rollout.runner.run_jobs`. Every episode ends as a
trajectory under ``OUT/trajectories/<key>`` whose key is stable (task and seed), so a re-run skips the
episodes that already have a final status -- but only a re-run of the same evaluation: ``OUT/run.json``
records what makes the episodes (tasks, seeds, step and time limits, and the agent, engine and model as
``describe`` gives them; see :func:`eval_key`), and a run with other settings is refused in one line
naming the difference, or with ``force`` starts afresh after the old folder is moved aside
(:mod:`mintgym.run_record`). An interrupted run (Ctrl-C) stops its servers, writes a partial results.json and
report of the episodes that finished (``interrupted`` says how many are pending) and raises
:class:`EvalInterrupted`; running it again resumes it. A crashed episode, or one whose server never started, is a
failure with its reason; a task that cannot run here is listed as skipped with its reason, and a task
without an oracle, given to an agent that plays oracles (``needs_oracle``, the scripted agent), is listed
under ``no_oracle`` instead of run. Nothing is dropped silently.

Outputs: ``OUT/results.json`` (see :func:`build_results`), ``OUT/report.html`` and a viewer page per
trajectory (``OUT/trajectories/index.html``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mintgym.errors import MintGymError
from mintgym.evals.stats import EpisodeOutcome, group_by, summarize
from mintgym.evals.suites import Benchmark
from mintgym.policy import Agent
from mintgym.rollout.runner import EpisodeJob, run_jobs
from mintgym.run_record import FolderCheck, check_folder
from mintgym.trajectory.store import TrajectoryWriter, load_trajectory
from mintgym.trajectory.types import Trajectory

#: Statuses of an episode that has ended (``running`` means it was interrupted).
FINAL_STATUSES = frozenset({"success", "failure", "error", "timeout"})
TRAJECTORY_DIR = "trajectories"
RESULTS_SCHEMA = 1


@dataclass
class EvalConfig:
    """How to run an evaluation (what to run is the Benchmark)."""

    #: The output directory: results.json, report.html, trajectories/.
    out: Path
    #: Episodes per task, with seeds ``seed .. seed+episodes-1``; None uses the benchmark's seeds.
    episodes: int | None = None
    #: First seed when ``episodes`` is given; otherwise an offset added to the benchmark's seeds.
    seed: int = 0
    #: Episodes run at once per domain.
    concurrency: int = 1
    #: Runtime provider that starts env servers (``local``, ``docker``, ``ray``).
    backend: str = "local"
    #: A running env server to use instead: one URL (for a single-domain run) or {domain: URL}.
    env_url: str | dict[str, str] | None = None
    #: Bearer token for the env server.
    token: str | None = None
    #: Wall-clock budget of one episode in seconds (None: no budget).
    max_seconds: float | None = None
    #: Re-run episodes that ended in ``error`` or ``timeout`` instead of keeping them.
    retry_errors: bool = False
    #: Show a tqdm progress bar.
    progress: bool = True
    #: Seconds to wait for a started env server to answer its health check.
    ready_timeout: float = 300.0
    #: What the run used (agent, engine, model), copied into results.json; part of the folder's key, so it
    #: must name everything about the agent that changes an episode.
    describe: dict[str, Any] = field(default_factory=dict)
    #: When ``out`` holds another run's episodes (other settings, or no record): move them aside to
    #: ``<out>.before-<timestamp>`` and start afresh, instead of refusing.
    force: bool = False
    #: Options of every env session, per domain (a run config's ``envs[].session_options``); part of the key.
    env_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Host options of the env servers started here, per domain (``envs[].host_options``); part of the key.
    host_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The observation channels the agent is given (:mod:`mintgym.observe`, ``--observe``); part of the key
    #: when not the default (the screenshot alone).
    observe: tuple[str, ...] = ("screenshot",)


#: How the user gives each setting of the key (for refusals); others read ``--name-with-dashes``.
KEY_LABELS = {"tasks": "tasks", "seeds": "seeds", "agent_options": "--agent-option"}
#: What an eval leaves in its folder (a folder with these and no run.json predates the record).
EVAL_MARKERS = ("results.json", f"{TRAJECTORY_DIR}/*/meta.json")


class EvalInterrupted(KeyboardInterrupt):
    """The evaluation was interrupted (Ctrl-C); its finished episodes are kept and a partial results.json and
    report were written. ``results`` is that partial document. A KeyboardInterrupt still, so a caller that
    stops on Ctrl-C (a training run's final eval) stops on it as before."""

    def __init__(self, message: str, results: dict[str, Any]):
        super().__init__(message)
        self.results = results


def episode_key(task_id: str, seed: int | None) -> str:
    """The stable name of one episode: its trajectory directory and resume key."""
    return f"{task_id.replace('/', '__')}-seed{seed}"


def episode_seeds(benchmark: Benchmark, config: EvalConfig, task_id: str | None = None) -> tuple[int, ...]:
    """The seeds ``task_id`` is played on (None: the benchmark's, for tasks without seeds of their own)."""
    own = dict(benchmark.task_seeds).get(task_id) if task_id is not None else None
    if own is not None and config.episodes is None:
        return tuple(s + config.seed for s in own)
    if config.episodes is not None:
        if config.episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {config.episodes}")
        return tuple(config.seed + i for i in range(config.episodes))
    return tuple(s + config.seed for s in benchmark.seeds)


def plan_jobs(benchmark: Benchmark, config: EvalConfig) -> list[EpisodeJob]:
    """One job per runnable task and seed (skipped tasks get none)."""
    skipped = {task_id for task_id, _ in benchmark.skipped}
    return [EpisodeJob(task_id, seed, episode_key(task_id, seed))
            for task_id in benchmark.task_ids if task_id not in skipped
            for seed in episode_seeds(benchmark, config, task_id)]


def eval_key(benchmark: Benchmark, config: EvalConfig) -> dict[str, Any]:
    """What makes this evaluation's episodes, recorded in and compared with ``OUT/run.json``: the agent as
    ``describe`` names it, every task of the benchmark (skipped ones too: whether a task can run here is
    the machine's, not the run's), the seeds, and the step and time limits. How the episodes are run
    (concurrency, backend, env URLs, ``retry_errors``) may change between resumes."""
    seeds: Any = list(episode_seeds(benchmark, config))
    if benchmark.task_seeds:
        seeds = {task_id: list(episode_seeds(benchmark, config, task_id)) for task_id in benchmark.task_ids}
    key = {**config.describe, "tasks": list(benchmark.task_ids), "seeds": seeds,
           "max_steps": benchmark.max_steps, "max_seconds": config.max_seconds}
    if config.env_options:
        key["env_options"] = config.env_options
    if config.host_options:
        key["host_options"] = config.host_options
    if tuple(config.observe) != ("screenshot",):
        key["observe"] = list(config.observe)
    return key


def eval_folder(benchmark: Benchmark, config: EvalConfig) -> FolderCheck:
    """What this evaluation may do with ``config.out`` (start, resume, or with ``force`` start over); raises
    :class:`~mintgym.errors.MintGymError` in one line, touching nothing, when the folder is another run's."""
    return check_folder(Path(config.out), "eval", eval_key(benchmark, config), force=config.force,
                        labels=KEY_LABELS, markers=EVAL_MARKERS, about={"suite": benchmark.name})


def finished(traj_root: Path, key: str, retry_errors: bool = False) -> Trajectory | None:
    """The recorded trajectory of episode ``key`` if it has a final status (resume), else None."""
    meta = traj_root / key / "meta.json"
    if not meta.is_file():
        return None
    try:
        status = json.loads(meta.read_text()).get("status")
    except (OSError, json.JSONDecodeError):
        return None  # a torn write: run the episode again
    if status not in FINAL_STATUSES or (retry_errors and status in ("error", "timeout")):
        return None
    return load_trajectory(traj_root / key)


class _EnvServer:
    """(base_url, token) of the env server for one domain: a given URL, or one a provider starts."""

    def __init__(self, domain: str, config: EvalConfig):
        self.domain, self.config = domain, config
        self.servers = None

    def __enter__(self) -> tuple[str, str | None]:
        url = self.config.env_url
        if isinstance(url, dict):
            url = url.get(self.domain)
        if url:
            return url, self.config.token
        from mintgym.runtime.fleet import start_env_servers
        from mintgym.runtime.make import provider

        self.servers = start_env_servers(provider(self.config.backend), self.domain, token=self.config.token,
                                         ready_timeout=self.config.ready_timeout,
                                         options={"host_options": self.config.host_options.get(self.domain) or {}})
        [handle] = self.servers.handles
        return handle.base_url, handle.token

    def __exit__(self, *exc: object) -> None:
        if self.servers is not None:
            self.servers.stop()


def _record_failure(traj_root: Path, job: EpisodeJob, agent_name: str, reason: str,
                    observe: tuple[str, ...]) -> Trajectory:
    now = time.time()
    traj = Trajectory(id=job.key, task_id=job.task_id, domain="", instruction="", agent=agent_name, seed=job.seed,
                      status="error", error=reason, started=now, ended=now, observe=list(observe))
    TrajectoryWriter(traj_root, traj).close()
    return traj


def run_eval(benchmark: Benchmark, make_agent: Callable[[], Agent], config: EvalConfig) -> dict[str, Any]:
    """Run every pending episode of ``benchmark``, then write results.json and report.html; return the results.

    ``config.out`` is checked first (:func:`eval_folder`): a folder another run made is refused with a one-line
    :class:`~mintgym.errors.MintGymError` before anything is written."""
    from mintgym.env import registration

    started = time.time()
    out = Path(config.out)
    moved = eval_folder(benchmark, config).apply()
    traj_root = out / TRAJECTORY_DIR
    traj_root.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tasks = {task_id: registration.task(task_id) for task_id in benchmark.task_ids}
    domains = {t.domain for t in tasks.values()}
    if isinstance(config.env_url, str) and config.env_url and len(domains) > 1:
        raise ValueError(f"one env URL cannot serve several domains ({', '.join(sorted(domains))}); "
                         "give one URL per domain as DOMAIN=URL")
    probe = make_agent()
    agent_name = probe.name
    no_oracle = no_oracle_tasks(benchmark, tasks, probe)
    jobs = [j for j in plan_jobs(benchmark, config) if j.task_id not in no_oracle]
    pending = [j for j in jobs if finished(traj_root, j.key, config.retry_errors) is None]
    by_domain: dict[str, list[EpisodeJob]] = {}
    for job in pending:
        by_domain.setdefault(tasks[job.task_id].domain, []).append(job)

    bar = _progress(len(jobs), len(jobs) - len(pending), config.progress)
    try:
        _run_domains(by_domain, make_agent, config, benchmark, traj_root, agent_name, bar)
    except KeyboardInterrupt:
        raise _interrupted(benchmark, config, jobs, tasks, traj_root, started, no_oracle, moved) from None
    finally:
        if bar is not None:
            bar.close()

    outcomes = [_outcome(traj_root, job, tasks[job.task_id]) for job in jobs]
    results = build_results(benchmark, outcomes, config, started=started, ended=time.time(), no_oracle=no_oracle,
                            not_counted=not_counted(traj_root, jobs, benchmark, no_oracle))
    results["resumed_episodes"] = len(jobs) - len(pending)
    if moved is not None:
        results["moved_aside"] = str(moved)
    write_outputs(out, results)
    return results


def _interrupted(benchmark: Benchmark, config: EvalConfig, jobs: list[EpisodeJob], tasks: dict[str, Any],
                 traj_root: Path, started: float, no_oracle: list[str], moved: Path | None) -> EvalInterrupted:
    """Write the partial results.json and report (the episodes that finished) of an interrupted run."""
    done = [job for job in jobs if finished(traj_root, job.key) is not None]
    outcomes = [_outcome(traj_root, job, tasks[job.task_id]) for job in done]
    results = build_results(benchmark, outcomes, config, started=started, ended=time.time(), no_oracle=no_oracle,
                            not_counted=not_counted(traj_root, jobs, benchmark, no_oracle))
    results["interrupted"] = {"finished": len(done), "pending": len(jobs) - len(done)}
    if moved is not None:
        results["moved_aside"] = str(moved)
    out = Path(config.out)
    write_outputs(out, results)
    return EvalInterrupted(f"interrupted: {len(done)} of {len(jobs)} episodes finished and are kept in {out} "
                           f"(partial results.json and report.html written there); run the same command again "
                           f"to play the other {len(jobs) - len(done)}", results)


def _run_domains(by_domain: dict[str, list[EpisodeJob]], make_agent: Callable[[], Agent], config: EvalConfig,
                 benchmark: Benchmark, traj_root: Path, agent_name: str, bar: Any) -> None:
    """Play each domain's pending episodes on its env server."""
    for domain, domain_jobs in sorted(by_domain.items()):
        done_keys: set[str] = set()

        def on_done(job: EpisodeJob, traj: Trajectory, done_keys: set[str] = done_keys) -> None:
            done_keys.add(job.key)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{job.task_id}: {traj.status}", refresh=False)

        try:
            with _EnvServer(domain, config) as (url, token):
                asyncio.run(run_jobs(url, domain_jobs, make_agent, concurrency=config.concurrency,
                                     run_dir=traj_root, token=token, max_seconds=config.max_seconds,
                                     max_steps=benchmark.max_steps, on_done=on_done,
                                     env_options=config.env_options.get(domain), observe=tuple(config.observe)))
        except MintGymError as err:  # the server did not start or went away: its episodes fail, with why
            reason = f"env server for {domain!r} failed: {type(err).__name__}: {err}"
            for job in domain_jobs:
                if job.key not in done_keys:
                    _record_failure(traj_root, job, agent_name, reason, tuple(config.observe))
                    on_done(job, Trajectory(job.key, job.task_id, domain, "", agent_name, status="error"))


def not_counted(traj_root: Path, jobs: list[EpisodeJob], benchmark: Benchmark,
                no_oracle: list[str]) -> list[dict[str, str]]:
    """Episodes recorded in this run's folder that its results do not count, each with why (a task that
    cannot run here any more, or that the agent skips), so results.json never drops one unsaid."""
    planned = {j.key for j in jobs}
    why = {**{t: f"its task is skipped here now: {r}" for t, r in benchmark.skipped},
           **dict.fromkeys(no_oracle, "its task has no oracle")}
    found = []
    for meta in sorted(traj_root.glob("*/meta.json")):
        if meta.parent.name in planned:
            continue
        try:
            task_id = json.loads(meta.read_text()).get("task_id")
        except (OSError, ValueError):
            task_id = None
        found.append({"key": meta.parent.name, "task_id": task_id,
                      "reason": why.get(task_id, "not an episode of this run's tasks and seeds")})
    return found


def no_oracle_tasks(benchmark: Benchmark, tasks: dict[str, Any], agent: Any) -> list[str]:
    """The runnable tasks an agent that plays oracles (``needs_oracle``) must skip: those without one."""
    if not getattr(agent, "needs_oracle", False):
        return []
    skipped = {task_id for task_id, _ in benchmark.skipped}
    return [t for t in benchmark.task_ids if t not in skipped and not tasks[t].has_oracle()]


def _progress(total: int, initial: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="episode", desc="eval", dynamic_ncols=True)


def _outcome(traj_root: Path, job: EpisodeJob, task: Any) -> EpisodeOutcome:
    path = traj_root / job.key
    try:
        traj = load_trajectory(path)
    except (FileNotFoundError, ValueError) as err:
        traj = Trajectory(job.key, job.task_id, task.domain, "", "", seed=job.seed, status="error",
                          error=f"no readable trajectory was recorded: {err}")
    status = traj.status if traj.status in FINAL_STATUSES else "error"
    error = traj.error if traj.status in FINAL_STATUSES else "episode did not finish (interrupted)"
    return EpisodeOutcome(
        key=job.key, task_id=job.task_id, domain=task.domain, family=task.family or job.task_id.split("/")[0],
        seed=job.seed, status=status, reward=float(traj.total_reward), steps=len(traj.steps),
        invalid_steps=sum(1 for s in traj.steps if s.error), logprob_steps=sum(1 for s in traj.steps if s.logprobs),
        error=error, wall_seconds=traj.wall_seconds, path=os.path.join(TRAJECTORY_DIR, job.key),
        observe=tuple(traj.observe))


def build_results(benchmark: Benchmark, outcomes: list[EpisodeOutcome], config: EvalConfig, *,
                  started: float, ended: float, no_oracle: list[str] | tuple[str, ...] = (),
                  not_counted: list[dict[str, str]] | tuple = ()) -> dict[str, Any]:
    """The results.json document: overall, per domain, per family, per task, skipped tasks, tasks the agent
    skipped for want of an oracle (``no_oracle``), episodes, and recorded episodes not counted (with why)."""
    tasks = group_by(outcomes, "task_id")
    for task_id, summary in tasks.items():
        first = next(e for e in outcomes if e.task_id == task_id)
        summary.update(domain=first.domain, family=first.family)
    overall = summarize(outcomes)
    overall["wall_seconds"] = ended - started
    return {
        "schema_version": RESULTS_SCHEMA,
        "benchmark": {"name": benchmark.name, "description": benchmark.description,
                      "tasks": len(benchmark.task_ids), "action_set": benchmark.action_set,
                      "max_steps": benchmark.max_steps},
        "config": {"episodes": config.episodes, "seed": config.seed,
                   "seeds": sorted({e.seed for e in outcomes if e.seed is not None}), "concurrency": config.concurrency,
                   "backend": config.backend if not config.env_url else "url", "max_seconds": config.max_seconds,
                   "observe": list(config.observe), **config.describe},
        "started": started,
        "ended": ended,
        "overall": overall,
        "domains": group_by(outcomes, "domain"),
        "families": group_by(outcomes, "family"),
        "tasks": tasks,
        "skipped": [{"task_id": t, "reason": r} for t, r in benchmark.skipped],
        "no_oracle": [{"task_id": t, "reason": "no oracle"} for t in no_oracle],
        "episodes": [e.to_json() for e in outcomes],
        "not_counted": list(not_counted),
        **_benchmark_tables([e.to_json() for e in outcomes], benchmark.skipped),
    }


def _benchmark_tables(episodes: list[dict[str, Any]], skipped: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Tables in a benchmark's own form, for the benchmarks that have one (OSWorld's per-domain table)."""
    from mintgym.evals.osworld.results import success_table

    table = success_table(episodes, [{"task_id": t, "reason": r} for t, r in skipped])
    return {"osworld": table} if table else {}


def write_outputs(out: Path, results: dict[str, Any]) -> None:
    """results.json, a viewer page per trajectory, and report.html."""
    from mintgym.evals.report import write_report
    from mintgym.trajectory.inspector import write_run_pages

    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=1))
    os.replace(tmp, out / "results.json")
    if results["episodes"]:
        write_run_pages(out / TRAJECTORY_DIR)
    if results.get("osworld"):
        from mintgym.evals.osworld.results import write_folders

        write_folders(out, results["episodes"])
    write_report(out, results)
