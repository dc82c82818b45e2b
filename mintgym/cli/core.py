"""Core commands: envs, tasks, serve, rollout, view."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Optional

import typer

OSWORLD_ROOT_HELP = ("OSWorld's evaluation_examples folder as OSWorld ships it (examples/<app>/<id>.json, "
                     "test_*.json); default: $MINTGYM_OSWORLD_ROOT, else the shared data")


def register(app: typer.Typer) -> None:
    app.command("envs")(envs)
    app.command("tasks")(tasks)
    app.command("serve")(serve)
    app.command("rollout")(rollout)
    app.command("view")(view)


def envs() -> None:
    """List the registered environment domains and their task counts."""
    from mintgym.env import registration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_tasks = registration.tasks()
    for domain in registration.domains():
        count = sum(1 for t in all_tasks if t.domain == domain)
        typer.echo(f"{domain:10s} {count:5d} tasks")
    for pack, error in sorted(registration.broken_packs.items()):
        typer.echo(f"(task pack {pack!r} did not load: {error})", err=True)


def tasks(domain: Optional[str] = typer.Argument(None, help="a domain (pytool, web, ...) or an id prefix (miniwob)"),
          as_json: bool = typer.Option(False, "--json", help="one JSON object per task"),
          osworld_root: Optional[Path] = typer.Option(None, "--osworld-root", help=OSWORLD_ROOT_HELP)) -> None:
    """List tasks of a domain (or with an id prefix), with their instruction and availability."""
    from mintgym.env import registration

    _use_osworld_root(osworld_root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = registration.tasks()
    if domain:
        found = [t for t in found if t.domain == domain or t.id.startswith(domain.rstrip("/") + "/")]
        if not found:
            known = ", ".join(registration.domains())
            typer.echo(f"no tasks for {domain!r}; domains: {known}", err=True)
            raise typer.Exit(2)
    reasons: dict[str, int] = {}
    for t in found:
        reason = t.unavailable()
        if reason:
            reasons[_reason_kind(reason)] = reasons.get(_reason_kind(reason), 0) + 1
        if as_json:
            typer.echo(json.dumps({"id": t.id, "domain": t.domain, "family": t.family, "max_steps": t.max_steps,
                                   "instruction": t.instruction, "available": reason is None, "reason": reason,
                                   "unavailable": reason}))
        else:
            note = f"  [skipped here: {reason}]" if reason else ""
            typer.echo(f"{t.id}\t{t.instruction[:90]}{note}")
    if not as_json:
        runnable = len(found) - sum(reasons.values())
        typer.echo(f"{len(found)} tasks: {runnable} runnable here, {sum(reasons.values())} not", err=True)
        for kind, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0])):
            typer.echo(f"  {count:4d}  {kind}", err=True)


def _use_osworld_root(path: Optional[Path]) -> None:
    """Point the osworld pack (here and in the env servers started from here) at ``path``; one-line error."""
    import os

    from mintgym.environments.desktop.osworld.loader import ROOT_VARIABLE, OSWorldRootError, check_root, use_root

    try:
        if path is not None:
            use_root(path)
        elif os.environ.get(ROOT_VARIABLE):
            check_root(os.environ[ROOT_VARIABLE])
    except OSWorldRootError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None


def _reason_kind(reason: str) -> str:
    """A reason with its particulars (hosts, program names, ids) dropped, to count tasks by it."""
    import re

    kind = re.sub(r"from \S+ \(", "from <host> (", reason)
    kind = re.sub(r"'[^']*'", "<...>", kind)
    return kind


def serve(domain: str = typer.Argument(..., help="the environment domain to serve"),
          host: str = typer.Option("127.0.0.1", help="bind address (off loopback a token is required)"),
          port: int = typer.Option(8000),
          token_file: Optional[str] = typer.Option(
              None, help="file holding the bearer token clients must send (mode 600); or set MINTGYM_TOKEN. "
                         "Never on the command line, where ps shows it"),
          request_timeout: float = typer.Option(60.0, help="seconds before an environment call is failed"),
          max_sessions: int = typer.Option(1024),
          option: list[str] = typer.Option([], "--option", "-o", help="host option KEY=VALUE (JSON value)"),
          max_option: list[str] = typer.Option([], "--max-option", help="cap a numeric session option: NAME=VALUE "
                                                                        "(no session may ask for more)"),
          serial: Optional[str] = typer.Option(None, help="android: the device serial"),
          log_level: str = typer.Option("warning")) -> None:
    """Run an env server for DOMAIN."""
    from mintgym.errors import MintGymError
    from mintgym.server.serve import serve as run_server

    host_options: dict = {}
    for item in option:
        key, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"--option wants KEY=VALUE, got {item!r}")
        try:
            host_options[key] = json.loads(value)
        except json.JSONDecodeError:
            host_options[key] = value
    if serial:
        host_options["serial"] = serial
    try:
        if domain == "android":  # fail at once, with advice, when no device is attached
            from mintgym.server.serve import build_host

            asyncio.run(_check_host(build_host(domain, host_options)))
        run_server(domain, host, port, token_file=token_file, request_timeout=request_timeout,
                   max_sessions=max_sessions, host_options=host_options, option_caps=max_option, log_level=log_level)
    except MintGymError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1)


async def _check_host(env_host) -> None:
    await env_host.start()
    await env_host.stop()


def rollout(task: str = typer.Option(..., "--task", help="task id, e.g. pytool/count-shapes-0"),
            agent: str = typer.Option("scripted", help="scripted | random | vlm"),
            episodes: int = typer.Option(1, min=1),
            seed: int = typer.Option(0, help="seed of the first episode; episode i uses seed+i"),
            concurrency: int = typer.Option(1, min=1),
            out: Path = typer.Option(Path("runs/rollout"), help="run directory"),
            backend: str = typer.Option("local", help="local | docker | ray"),
            base_url: Optional[str] = typer.Option(None, help="use a running env server instead"),
            token: Optional[str] = typer.Option(None, envvar="MINTGYM_TOKEN"),
            osworld_root: Optional[Path] = typer.Option(None, "--osworld-root", help=OSWORLD_ROOT_HELP)) -> None:
    """Run episodes of one task with an agent and record their trajectories."""
    from mintgym.agents import make_agent
    from mintgym.env import registration
    from mintgym.rollout.runner import EpisodeJob, run_jobs

    _use_osworld_root(osworld_root)
    domain, found = registration.resolve(task)
    if found is None:
        raise typer.BadParameter(f"{task!r} is a domain; give a task id (see `mintgym tasks {domain}`)")
    reason = found.unavailable()
    if reason:
        typer.echo(f"task {task} cannot run here: {reason}", err=True)
        raise typer.Exit(2)
    make_agent(agent)  # fail on a bad agent name before starting a server
    jobs = [EpisodeJob(task, seed + i, f"{task.replace('/', '__')}-seed{seed + i}") for i in range(episodes)]
    out.mkdir(parents=True, exist_ok=True)

    def report(job, traj) -> None:
        note = f" ({traj.error})" if traj.error else ""
        typer.echo(f"{job.task_id} seed={job.seed}: {traj.status} reward={traj.total_reward:.3f} "
                   f"steps={len(traj.steps)}{note}")

    with _server(domain, backend, base_url, token) as (url, tok):
        trajs = asyncio.run(run_jobs(url, jobs, lambda: make_agent(agent), concurrency=concurrency, run_dir=out,
                                     token=tok, on_done=report))
    wins = sum(t.success for t in trajs)
    typer.echo(f"{wins}/{len(trajs)} succeeded; trajectories in {out} (see `mintgym view {out}`)")
    if any(t.status == "error" for t in trajs):
        raise typer.Exit(1)


class _server:
    """A context manager yielding (base_url, token) of a server: the given one, or one a provider starts."""

    def __init__(self, domain: str, backend: str, base_url: str | None, token: str | None):
        self.domain, self.backend, self.base_url, self.token = domain, backend, base_url, token
        self.handle = None
        self.provider = None

    def __enter__(self):
        if self.base_url:
            return self.base_url, self.token
        from mintgym.runtime.make import provider

        self.provider = provider(self.backend)
        self.handle = self.provider.start(self.domain, token=self.token)
        try:
            self.provider.wait_ready(self.handle, 300)
        except BaseException:
            self.provider.stop(self.handle)
            raise
        return self.handle.base_url, self.handle.token

    def __exit__(self, *exc):
        if self.handle is not None:
            self.provider.stop(self.handle)


def view(run_dir: Path = typer.Argument(..., help="a run directory (or one trajectory directory)")) -> None:
    """Write an HTML page per trajectory (screenshots with actions drawn) and an index."""
    from mintgym.trajectory.viewer import write_run_pages

    try:
        index = write_run_pages(run_dir)
    except FileNotFoundError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2)
    typer.echo(f"wrote {index}")
