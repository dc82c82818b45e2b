"""Core commands: envs, tasks, suites, serve, rollout."""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from pathlib import Path

import typer

from mintgym.cli.agent_options import (
    AgentChoice,
    agent_description,
    build_agent,
    check_observe,
    fail,
    use_packs,
    with_agent_options,
)
from mintgym.cli.declared_options import Declared, with_declared_options
from mintgym.extras import install_hint, missing_extra


def register(app: typer.Typer) -> None:
    app.command("envs")(envs)
    app.command("tasks")(tasks)
    app.command("suites")(suites)
    app.command("serve")(serve)
    app.command("rollout")(rollout)


PACKS_HELP = "a task pack to add, module:function returning tasks (or NAME=module:function); repeatable"


def envs(packs: list[str] = typer.Option([], "--packs", help=PACKS_HELP)) -> None:
    """List the environment domains: their tasks, how many can run here, and why the others cannot."""
    from mintgym.env import registration

    use_packs(packs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_tasks = registration.tasks()
    missing_extras = {missing_extra(error, pack) for pack, error in registration.broken_packs.items()}
    for domain in registration.domains():
        found = [t for t in all_tasks if t.domain == domain]
        blocked = domain_unavailable(domain) if found else None
        runnable = 0 if blocked else sum(1 for t in found if not t.unavailable())
        note = f"  [not here: {blocked}]" if blocked else ""
        if not found and domain in missing_extras:
            note = f"  [not installed: pip install 'mintgym[{domain}]']"
        typer.echo(f"{domain:10s} {len(found):5d} tasks {runnable:5d} runnable here{note}")
    for pack in sorted(registration.broken_packs):
        typer.echo(f"(task pack {pack!r} did not load: {registration.why_broken(pack)})", err=True)


def _not_installed(name: str, broken_packs: dict[str, str]) -> str | None:
    """``did not load: it needs ..., from the X extra: pip install ...`` when ``name`` (a domain or pack) is a
    pack, or the extra of a pack, that failed to load for want of an extra; else None."""
    for pack, error in sorted(broken_packs.items()):
        hint = install_hint(error, pack)
        if hint and name in (pack, missing_extra(error, pack)):
            return f"did not load: it {hint}"
    return None


def domain_unavailable(domain: str) -> str | None:
    """Why no task of ``domain`` can run on this machine (as the domain declares it: no device), else None."""
    from mintgym.env import declarations

    return declarations.unavailable(domain)


@with_declared_options("tasks")
def tasks(domain: str | None = typer.Argument(None, help="a domain (pytool, web, ...) or an id prefix (miniwob)"),
          as_json: bool = typer.Option(False, "--json", help="one JSON object per task"),
          packs: list[str] = typer.Option([], "--packs", help=PACKS_HELP)) -> None:
    """List tasks of a domain (or with an id prefix), with their instruction and availability."""
    from mintgym.env import registration

    use_packs(packs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = registration.tasks()
    if domain:
        found = [t for t in found if t.domain == domain or t.id.startswith(domain.rstrip("/") + "/")]
        if not found:
            not_installed = _not_installed(domain.rstrip("/"), registration.broken_packs)
            if not_installed:
                raise fail(f"no tasks for {domain!r}: its task pack {not_installed}")
            known = ", ".join(registration.domains())
            raise fail(f"no tasks for {domain!r}; domains: {known} (or an id prefix such as miniwob)")
    reasons: dict[str, int] = {}
    blocked = {d: domain_unavailable(d) for d in {t.domain for t in found}}
    for t in found:
        reason = blocked[t.domain] or t.unavailable()
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


CLIENT_TOKEN_HELP = ("file holding the env server's bearer token; or set MINTGYM_TOKEN (never a token on the "
                     "command line, where ps shows it to every local user)")


def client_token(token_file: Path | None) -> str | None:
    """The bearer token a client sends: from ``--token-file``, else ``$MINTGYM_TOKEN``; one-line error."""
    if token_file is None:
        return os.environ.get("MINTGYM_TOKEN") or None
    try:
        token = token_file.read_text().strip()
    except OSError as err:
        raise typer.BadParameter(f"cannot read the token file {token_file}: {err.strerror}") from None
    if not token:
        raise typer.BadParameter(f"the token file {token_file} is empty")
    return token


def _reason_kind(reason: str) -> str:
    """A reason with its particulars (hosts, program names, ids) dropped, to count tasks by it."""
    import re

    kind = re.sub(r"from \S+ \(", "from <host> (", reason)
    kind = re.sub(r"'[^']*'", "<...>", kind)
    return kind


@with_declared_options("serve")
def serve(domain: str = typer.Argument(..., help="the environment domain to serve"),
          host: str = typer.Option("127.0.0.1", help="bind address (off loopback a token is required)"),
          port: int = typer.Option(8000),
          token_file: str | None = typer.Option(
              None, help="file holding the bearer token clients must send (mode 600); or set MINTGYM_TOKEN. "
                         "Never on the command line, where ps shows it"),
          request_timeout: float = typer.Option(60.0, help="seconds before an environment call is failed"),
          max_sessions: int = typer.Option(1024),
          option: list[str] = typer.Option([], "--option", "-o", help="host option KEY=VALUE (JSON value)"),
          max_option: list[str] = typer.Option([], "--max-option", help="cap a numeric session option: NAME=VALUE "
                                                                        "(no session may ask for more)"),
          log_level: str = typer.Option("warning"),
          declared: Declared = None) -> None:
    """Run an env server for DOMAIN."""
    from mintgym.env import declarations
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
    host_options.update(declared.host_options)
    try:
        if declarations.declaration(domain).probe_before_serving:  # e.g. no device: fail at once, with advice
            from mintgym.server.serve import build_host

            asyncio.run(_check_host(build_host(domain, host_options)))
        fd = _listening_socket(host, port)  # bound here, so a port in use is this command's one line
        run_server(domain, host, port, token_file=token_file, request_timeout=request_timeout, fd=fd,
                   max_sessions=max_sessions, host_options=host_options, option_caps=max_option, log_level=log_level)
    except MintGymError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(1) from None


def _listening_socket(host: str, port: int) -> int:
    """The file descriptor of a socket bound to ``host:port`` (as uvicorn would bind it); a one-line error
    when the port is taken or the address is not this machine's."""
    import errno
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise fail(f"port {port} on {host} is in use (another server?); stop it or pick another with --port",
                       code=1) from None
        raise fail(f"cannot listen on {host}:{port}: {err.strerror or err}", code=1) from None
    return sock.detach()


async def _check_host(env_host) -> None:
    await env_host.start()
    await env_host.stop()


@with_agent_options(default_agent="scripted")
@with_declared_options("rollout")
def rollout(task: str = typer.Option(..., "--task", help="task id, e.g. pytool/count-shapes-0"),
            episodes: int = typer.Option(1, min=1),
            seed: int = typer.Option(0, help="seed of the first episode; episode i uses seed+i"),
            concurrency: int = typer.Option(1, min=1),
            out: Path = typer.Option(Path("runs/rollout"), help="run directory (re-running the same rollout resumes "
                                                                "it; another run there is refused, see --force)"),
            force: bool = typer.Option(False, "--force", help="when --out holds another run's episodes, move them "
                                                              "aside to OUT.before-<timestamp> and start afresh"),
            backend: str = typer.Option("local", help="local | docker | ray"),
            base_url: str | None = typer.Option(None, help="use a running env server instead"),
            token_file: Path | None = typer.Option(None, "--token-file", help=CLIENT_TOKEN_HELP),
            agent_choice: AgentChoice = None) -> None:
    """Run episodes of one task with an agent and record their trajectories.

    An existing --out is resumed (finished episodes kept, errored ones played again) only by the rollout that
    made it: same task, seeds and agent (its run.json); another is refused, or --force moves the old folder
    aside."""
    from mintgym.env import registration
    from mintgym.errors import MintGymError, first_line
    from mintgym.evals.harness import KEY_LABELS, episode_key, finished
    from mintgym.rollout.runner import EpisodeJob, run_jobs
    from mintgym.run_record import check_folder

    use_packs(agent_choice.packs)
    domain, found = registration.resolve(task)
    if found is None:
        raise fail(f"{task!r} is a domain; give a task id (see `mintgym tasks {domain}`)")
    reason = found.unavailable() or (None if base_url else domain_unavailable(domain))
    if reason:
        raise fail(f"task {task} cannot run here: {reason}")
    if not base_url and (problem := registration.forwarding_problem(task)):
        raise fail(problem)
    task = found.id  # the registered id, however it was spelled (short, long or unversioned)
    check_observe(agent_choice, [domain])
    token = client_token(token_file)
    seeds = [seed + i for i in range(episodes)]
    key = {**agent_description(agent_choice, seed), "task": task, "seeds": seeds}
    try:  # before an engine or a server starts
        folder = check_folder(out, "rollout", key, force=force, labels={**KEY_LABELS, "task": "--task"},
                              markers=("*/meta.json",))
    except MintGymError as err:
        raise fail(first_line(err)) from None
    built = build_agent(agent_choice, concurrency=concurrency, seed=seed)  # fails before a server starts
    if built.needs_oracle and not found.has_oracle():
        built.close()
        typer.echo(f"{task}: skipped, no oracle (the {agent_choice.agent} agent plays task oracles; this task "
                   "ships none); 0 episodes run")
        return
    jobs = [EpisodeJob(task, s, episode_key(task, s)) for s in seeds]
    try:
        moved = folder.apply()
    except OSError as err:
        built.close()
        raise fail(f"cannot make {out} this run's folder: {err}") from None
    if moved is not None:
        typer.echo(f"--force: the old episodes were moved to {moved}; starting afresh in {out}", err=True)
    kept = {job.key: traj for job in jobs if (traj := finished(out, job.key, retry_errors=True)) is not None}
    if kept:
        typer.echo(f"resuming {out}: the same run made it (run.json); {len(kept)} of {len(jobs)} episodes are "
                   "already recorded and kept", err=True)

    def report(job, traj) -> None:
        first, *more = (traj.error or "").strip().splitlines() or [""]
        note = f" ({first})" if first else ""
        typer.echo(f"{job.task_id} seed={job.seed}: {traj.status} reward={traj.total_reward:.3f} "
                   f"steps={len(traj.steps)}{note}")
        if more:  # a task's own exception: its author's frames
            typer.echo("\n".join(more))

    pending = [job for job in jobs if job.key not in kept]
    trajs = list(kept.values())
    try:
        if pending:
            with _server(domain, backend, base_url, token) as (url, tok):
                trajs += asyncio.run(run_jobs(url, pending, built.make, concurrency=concurrency, run_dir=out,
                                              token=tok, on_done=report, observe=agent_choice.observe))
    except KeyboardInterrupt:
        kept = sum(finished(out, job.key, retry_errors=True) is not None for job in jobs)
        typer.echo(f"interrupted: {kept} of {len(jobs)} episodes are recorded in {out} and kept; run the same "
                   f"command again to play the other {len(jobs) - kept}", err=True)
        raise typer.Exit(130) from None
    finally:
        built.close()
    wins = sum(t.success for t in trajs)
    errors = sum(t.status == "error" for t in trajs)
    typer.echo(f"{wins}/{len(trajs)} succeeded, {errors} errored; trajectories in {out} (see `mintgym view {out}`)")
    if errors:
        raise typer.Exit(1)


def suites(packs: list[str] = typer.Option([], "--packs", help=PACKS_HELP)) -> None:
    """List the evaluation suites: name, task count (runnable here) and description."""
    from mintgym.cli.evaluate import DATA_HARNESSES
    from mintgym.env import registration
    from mintgym.evals.suites import load_table, matches, osworld_list_suites

    use_packs(packs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = registration.tasks()
    blocked = {d: domain_unavailable(d) for d in {t.domain for t in found}}
    table = {**load_table(), **osworld_list_suites()}
    for name, spec in sorted(table.items()):
        if name in DATA_HARNESSES:
            typer.echo(f"{name:28s} {'data':>11s}  {spec.description} (needs --data)")
            continue
        chosen = [t for t in found if matches(t, spec.select)]
        runnable = sum(1 for t in chosen if not (blocked[t.domain] or t.unavailable()))
        typer.echo(f"{name:28s} {len(chosen):5d} ({runnable:4d})  {spec.description}")
    typer.echo(f"{len(table)} suites; counts: tasks (runnable here); run one with `mintgym eval --suite NAME`",
               err=True)


class _server:
    """A context manager yielding (base_url, token) of a server: the given one, or one a provider starts
    (through :func:`~mintgym.runtime.fleet.start_env_servers`, as eval and train start theirs)."""

    def __init__(self, domain: str, backend: str, base_url: str | None, token: str | None):
        self.domain, self.backend, self.base_url, self.token = domain, backend, base_url, token
        self.servers = None

    def __enter__(self):
        if self.base_url:
            return self.base_url, self.token
        from mintgym.runtime.fleet import start_env_servers
        from mintgym.runtime.make import provider

        self.servers = start_env_servers(provider(self.backend), self.domain, token=self.token, ready_timeout=300)
        [handle] = self.servers.handles
        return handle.base_url, handle.token

    def __exit__(self, *exc):
        if self.servers is not None:
            self.servers.stop()
