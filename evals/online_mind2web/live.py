"""Online-Mind2Web, live: each task is a web-domain episode on the real website, behind ``--allow-internet``.

Every task of the list becomes an :class:`OnlineMind2WebTask` (``online-mind2web/<task_id>``): its setup
opens the task's website in the web environment's Chromium at 1280x720, and the agent plays it with the
shared web actions until it calls ``done(answer=...)`` or runs out of steps. Live sites have no
programmatic check, so the episode's own reward is 0; the outcome is WebJudge's verdict (or a human's)
on the result written in the official format (``<task_id>/result.json`` + ``trajectory/*.png``).

Network: web sessions reach only loopback unless their ``allow`` list names a host. Without
``allow_internet`` nothing runs. With it, each session's allow-list admits the task site's host (with
and without ``www.``) and any ``extra_hosts`` the user names; the web environment matches hosts exactly,
so pages on other hosts the site links to are refused unless listed (see the README).

The env server runs in this process (on a loopback port), so the task pack registered here is the one
it serves. Re-running skips tasks whose result folder already exists -- only a re-run of the same run:
``out/run.json`` records the task list, the limits, the extra hosts and the agent as ``describe`` names it,
and another run is refused in one line, or with ``force`` starts afresh after the old folder is moved
aside (:mod:`mintgym.run_record`).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mintgym.environments.web.task import WebTask
from mintgym.evals.online_mind2web.results import OnlineTask, write_result
from mintgym.policy import Agent
from mintgym.run_record import check_folder

PACK = "online-mind2web"
VIEWPORT = (1280, 720)


@dataclass
class OnlineMind2WebTask(WebTask):
    """A live task: open ``url`` and let the agent work; judged afterwards from the recorded result."""

    url: str = ""
    level: str = ""
    viewport: tuple[int, int] = VIEWPORT
    max_steps: int = 30

    async def setup(self, env: Any, rng: Any) -> str | None:
        await env.open(self.url, wait_until="domcontentloaded")
        return None

    async def evaluate(self, env: Any) -> float:
        return 0.0  # no live check exists: WebJudge or a human decides from the result folder


def site_url(website: str) -> str:
    """The task's ``website`` as a URL (some lists give a bare host such as ``careers.walmart``)."""
    site = website.strip()
    if not site:
        raise ValueError("the task has no website")
    return site if "://" in site else f"https://{site}"


def hosts_for(url: str) -> list[str]:
    """The allow-list entries of a task site: its host with and without ``www.`` (and the port, if any)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        raise ValueError(f"cannot tell the host of {url!r}")
    bare = host.removeprefix("www.")
    names = [bare] if bare.replace(".", "").isdigit() or bare == "localhost" else [bare, f"www.{bare}"]
    return [f"{n}:{parts.port}" for n in names] if parts.port else names


def task_id_of(task: OnlineTask) -> str:
    return f"{PACK}/{task.task_id}"


#: Every live task built in this process, by id: the registered pack (a task id is registered once).
_BUILT: dict[str, OnlineMind2WebTask] = {}


def build_tasks(tasks: Iterable[OnlineTask], max_steps: int = 30) -> list[OnlineMind2WebTask]:
    """The live tasks of ``tasks``, registered in this process's task registry under ``online-mind2web/``."""
    from mintgym.env import registration

    built = []
    for t in tasks:
        task = OnlineMind2WebTask(id=task_id_of(t), instruction=t.task, max_steps=max_steps, family=PACK,
                                  tags=(f"level:{t.level}",), url=site_url(t.website), level=t.level)
        known = _BUILT.get(task.id)
        if known is not None and known != task:
            raise ValueError(f"task {t.task_id} is already registered with other settings in this process")
        built.append(_BUILT.setdefault(task.id, task))
    registration.register_tasks(PACK, lambda: list(_BUILT.values()))
    return built


def run_live(tasks: Sequence[OnlineTask], make_agent: Callable[[], Agent], out: str | Path, *,
             allow_internet: bool, extra_hosts: Sequence[str] = (), max_steps: int = 30,
             max_seconds: float | None = None, env_url: str | None = None, describe: dict[str, Any] | None = None,
             force: bool = False) -> list[Path]:
    """Play each task live and write ``out/results/<task_id>/``; returns the result folders.

    ``env_url``: a running web env server to use instead of the in-process one (it must serve this
    task pack, e.g. one started by this function's caller in the same process).
    """
    if not allow_internet:
        raise PermissionError("Online-Mind2Web plays live websites: pass --allow-internet to let the browser "
                              "reach each task's site")
    if not tasks:
        raise ValueError("no Online-Mind2Web tasks to run")
    from mintgym.env import registration

    out = Path(out)
    key = {**(describe or {}), "tasks": [t.task_id for t in tasks], "max_steps": max_steps,
           "max_seconds": max_seconds, "extra_hosts": list(extra_hosts)}
    folder = check_folder(out, "online-mind2web", key, force=force,
                          labels={"tasks": "tasks", "extra_hosts": "extra hosts", "agent_options": "--agent-option"},
                          markers=("results/*/result.json", "results.json"), what="results")
    built = build_tasks(tasks, max_steps)
    folder.apply()
    if env_url is not None:
        return asyncio.run(_play_all(env_url, tasks, built, make_agent, out, extra_hosts, max_seconds))
    from mintgym.server.app import create_app
    from mintgym.testing import serve_asgi  # a uvicorn server in a thread on a free loopback port

    host = registration.host_class("web")()
    with serve_asgi(create_app(host), timeout=120.0) as url:
        return asyncio.run(_play_all(url, tasks, built, make_agent, out, extra_hosts, max_seconds))


async def _play_all(url: str, tasks: Sequence[OnlineTask], built: list[OnlineMind2WebTask],
                    make_agent: Callable[[], Agent], out: Path, extra_hosts: Sequence[str],
                    max_seconds: float | None) -> list[Path]:
    from mintgym.client.aio import AsyncEnvClient
    from mintgym.rollout.episode import run_episode

    folders = []
    agent = make_agent()
    async with AsyncEnvClient(url, encoding="raw") as client:
        for task, live in zip(tasks, built, strict=True):
            folder = out / "results" / task.task_id
            if (folder / "result.json").is_file():
                folders.append(folder)
                continue
            allow = [*hosts_for(live.url), *extra_hosts]
            session = await client.session(env_options={"allow": allow, "viewport": list(VIEWPORT)})
            traj_root = out / "trajectories"
            stale = traj_root / task.task_id
            if stale.exists():
                shutil.rmtree(stale)
            try:
                traj = await run_episode(session, agent, live.id, run_dir=traj_root, trajectory_id=task.task_id,
                                         max_seconds=max_seconds)
            finally:
                await session.close()
            folder = write_result(out / "results", task, traj_root / task.task_id)
            if traj.status == "error":
                (folder / "error.txt").write_text(str(traj.error))
            folders.append(folder)
    return folders


def run_suite(name: str, *, data: str | Path, make_agent: Callable[[], Agent], out: str | Path,
              allow_internet: bool = False, describe: dict[str, Any] | None = None, max_steps: int | None = None,
              max_seconds: float | None = None, force: bool = False, **_: Any) -> str:
    """``mintgym eval --suite online-mind2web --data TASK_LIST --allow-internet``: play every task live, write
    the result folders and ``results.json`` (task, level, folder, error); judging is a separate step."""
    import json

    from mintgym.evals.online_mind2web.results import load_tasks

    tasks = list(load_tasks(data).values())
    folders = run_live(tasks, make_agent, out, allow_internet=allow_internet, max_steps=max_steps or 30,
                       max_seconds=max_seconds, describe=describe, force=force)
    rows = [{"task_id": t.task_id, "level": t.level, "folder": str(f),
             "error": (f / "error.txt").read_text() if (f / "error.txt").is_file() else None}
            for t, f in zip(tasks, folders, strict=True)]
    (Path(out) / "results.json").write_text(json.dumps({"benchmark": name, "config": dict(describe or {}),
                                                         "tasks": rows}, indent=1))
    from mintgym.evals.screenspot.report import page, rows_to_html

    table = rows_to_html(("task", "level", "result folder", "error"),
                         [[r["task_id"], r["level"], r["folder"], r["error"]] for r in rows])
    (Path(out) / "report.html").write_text(page("Online-Mind2Web run (to be judged)", [("Tasks", table)]))
    errors = sum(r["error"] is not None for r in rows)
    return (f"{len(rows)} tasks played ({errors} with errors); results in {Path(out) / 'results'}. Judge them: "
            f"mintgym report webjudge --results {Path(out) / 'results'} --webjudge-root COPY_OF_ONLINE_MIND2WEB "
            f"--base-url URL --model MODEL")
