"""A real multi-node Ray cluster on this machine for the cluster tests (test_two_nodes.py, test_three_nodes.py).

Every node is a ``ray start`` process on 127.0.0.1 with the cluster's own temp folder, free ports and a token of
its own; leaving :func:`ray_cluster` ends every process whose command line names that temp folder (never other
Ray instances on the machine) and fails if one is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_ports() -> list[str]:
    """Every port a node listens on, free now, so two nodes (and other Ray instances here) never collide."""
    flags = ["--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port",
             "--metrics-export-port", "--object-manager-port", "--node-manager-port"]
    return [a for flag in flags for a in (flag, str(free_port()))]


def processes_of(temp: str) -> list[psutil.Process]:
    """This machine's processes whose command line names ``temp`` (the cluster's), this one aside."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid != os.getpid() and temp in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _stop_cluster(temp: str) -> list[int]:
    """``ray stop`` for this cluster only: end the processes started under ``temp``; returns what is left."""
    procs = processes_of(temp)
    for proc in procs:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=15)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    return [p.pid for p in processes_of(temp)]


def _forget_cached_ray_token() -> None:
    """Ray reads its auth token once per process and caches it; drop the cache so the next connection reads
    the environment again (Ray's own tests reset it this way)."""
    from ray._private.authentication_test_utils import reset_auth_token_state

    reset_auth_token_state()


@contextlib.contextmanager
def ray_cluster(monkeypatch, nodes: list[dict[str, float]]) -> Iterator[tuple[str, list[str]]]:
    """A head node (one CPU, no custom resource) and one node per entry of ``nodes`` (one CPU and those custom
    resources each); yields the head's address and the log of the starts (lines for the test's printout).
    The driver (this process) joins with the cluster's token; leaving stops every process of the cluster."""
    temp = tempfile.mkdtemp(prefix="mgray", dir="/tmp")  # short: Ray's unix sockets live under it
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
        monkeypatch.setenv(key, env[key])
    _forget_cached_ray_token()  # else a local Ray started earlier in this process left its own token cached
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory", str(100 * 2**20),
              "--disable-usage-stats", "--temp-dir", temp]
    starts = [[RAY, "start", "--head", "--port", str(port), "--include-dashboard", "false",
               "--dashboard-port", str(free_port()), "--ray-client-server-port", str(free_port()), *common]]
    starts += [[RAY, "start", "--address", f"127.0.0.1:{port}", "--resources", json.dumps(resources), *common]
               for resources in nodes]
    log: list[str] = []
    try:
        for cmd in starts:
            t0 = time.monotonic()
            done = subprocess.run([*cmd, *_node_ports()], env=env, capture_output=True, text=True, timeout=180)
            log.append(f"$ {' '.join(cmd[1:3])} ... -> exit {done.returncode} in {time.monotonic() - t0:.0f}s")
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        yield f"127.0.0.1:{port}", log
    finally:
        _forget_cached_ray_token()
        left = _stop_cluster(temp)
        subprocess.run(["rm", "-rf", temp], check=False)
        assert not left, f"processes of the test cluster still running: {left}"


def null_run(address: str, model: Path, *, workers: int, servers: int, steps: int, groups_in_flight: int):
    """The cluster tests' run: the tiny model answering the null domain's echo task, ``servers`` ray env servers
    and ``workers`` rollout workers, each reserving one ``envnode`` unit, ``steps`` async steps."""
    from mintgym.config import RunConfig

    return RunConfig.from_dict({
        "ray_address": address,
        "model": {"path": str(model)},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "envs": [{"domain": "null", "provider": "ray", "servers": servers, "num_cpus": 0,
                  "resources": {"envnode": 1}}],
        "rollout": {"workers": workers, "groups_in_flight": groups_in_flight, "group_size": 4, "max_new_tokens": 1,
                    "worker_resources": {"envnode": 1}},
        "train": {"mode": "async", "steps": steps, "groups_per_step": 2, "lr": 0.01, "max_lag": 1,
                  "checkpoint_every": 0, "sync_timeout": 120, "batch_timeout": 300},
    })
