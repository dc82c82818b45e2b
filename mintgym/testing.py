"""Conformance checks for environment and task authors (principle 10 of STYLE.md).

``await check_task(host, task)`` proves, on a real environment, that the untouched state scores 0 and
that the task's oracle -- acting only through the shared actions -- scores 1. A task-pack test is three
lines::

    @pytest.mark.parametrize("task", registration.tasks(prefix="pytool/"), ids=lambda t: t.id)
    async def test_oracle(task, host):
        await check_task(host, task)
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from mintgym.env.core import EnvironmentHost, Task
from mintgym.env.episode import Episode


@dataclass
class OracleReport:
    task_id: str
    untouched_score: float
    oracle_reward: float
    steps: int
    errors: list[str]


async def run_oracle(episode: Episode, task: Task, seed: int | None = 0) -> OracleReport:
    """Reset ``episode`` on ``task``, score the untouched state, then play the oracle to the end."""
    await episode.reset(task, seed)
    untouched = await episode.evaluate()
    errors: list[str] = []
    reward = 0.0
    while not episode.ended:
        action = await episode.oracle_action()
        if action is None:  # the oracle is finished without a `done`: score the state it left
            reward = await episode.evaluate()
            break
        outcome = await episode.step(action)
        if "error" in outcome.info:
            errors.append(outcome.info["error"])
        reward = outcome.reward
    return OracleReport(task.id, untouched, reward, episode.step_count, errors)


async def check_task(host: EnvironmentHost, task: Task, seed: int | None = 0,
                     options: dict | None = None) -> OracleReport:
    """Raise AssertionError unless the untouched state scores 0 and the oracle scores 1 without errors."""
    env = await host.create(options or {})
    try:
        report = await run_oracle(Episode(env), task, seed)
    finally:
        await env.close()
    if report.untouched_score != 0.0:
        raise AssertionError(f"{task.id}: untouched state scores {report.untouched_score}, expected 0")
    if report.errors:
        raise AssertionError(f"{task.id}: oracle made invalid actions: {report.errors}")
    if report.oracle_reward != 1.0:
        raise AssertionError(f"{task.id}: oracle scored {report.oracle_reward} in {report.steps} steps, expected 1")
    return report


@contextlib.contextmanager
def serve_asgi(app, host: str = "127.0.0.1", timeout: float = 30.0) -> Iterator[str]:
    """Serve an ASGI app (an env server, a model server) with uvicorn in a thread on a free loopback port;
    yields its base URL and shuts it down afterwards. For tests."""
    import uvicorn

    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the test server did not start within {timeout:.0f}s")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
