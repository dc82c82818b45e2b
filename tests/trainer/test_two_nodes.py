"""A two-node Ray cluster on this machine: the trainer on the head, rollout workers and env servers on a
second node that holds a custom resource, placed there by the run config alone.

Both nodes are real ``ray start`` processes on 127.0.0.1 with their own temp folder, free ports and a
token of their own; the test ends every process whose command line names that temp folder (never other
Ray instances on the machine) and checks none is left.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from mintgym.config import RunConfig
from mintgym.rl import train

pytestmark = pytest.mark.slow  # two Ray nodes and a few training steps: a minute or more on 2 cores

RAY = str(Path(sys.executable).with_name("ray"))
#: The second node's custom resource: what places workers and env servers there.
ENV_NODE = {"envnode": 4}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_ports() -> list[str]:
    """Every port a node listens on, free now, so two nodes (and other Ray instances here) never collide."""
    flags = ["--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port",
             "--metrics-export-port", "--object-manager-port", "--node-manager-port"]
    return [a for flag in flags for a in (flag, str(_free_port()))]


def _processes_of(temp: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid != os.getpid() and temp in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


def _stop_cluster(temp: str) -> list[int]:
    """``ray stop`` for this cluster only: end the processes started under ``temp``; returns what is left."""
    procs = _processes_of(temp)
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
    return [p.pid for p in _processes_of(temp)]


def _forget_cached_ray_token() -> None:
    """Ray reads its auth token once per process and caches it; drop the cache so the next connection reads
    the environment again (Ray's own tests reset it this way)."""
    from ray._private.authentication_test_utils import reset_auth_token_state

    reset_auth_token_state()


@pytest.fixture
def cluster(monkeypatch):
    temp = tempfile.mkdtemp(prefix="mgray", dir="/tmp")  # short: Ray's unix sockets live under it
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):  # the driver (this process) joins with the same token
        monkeypatch.setenv(key, env[key])
    _forget_cached_ray_token()  # else a local Ray started earlier in this process left its own token cached
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory", str(100 * 2**20),
              "--disable-usage-stats", "--temp-dir", temp]
    starts = [
        [RAY, "start", "--head", "--port", str(port), "--include-dashboard", "false",
         "--dashboard-port", str(_free_port()), "--ray-client-server-port", str(_free_port()), *common],
        [RAY, "start", "--address", f"127.0.0.1:{port}", "--resources", json.dumps(ENV_NODE), *common],
    ]
    log = []
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


def test_workers_and_env_servers_run_on_the_env_node(cluster, tmp_path):
    import ray

    address, log = cluster
    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "tiny", vocab_size=256)
    cfg = RunConfig.from_dict({
        "ray_address": address,
        "model": {"path": str(model)},
        "tasks": [{"id": "null/echo", "seeds": [0, 1]}],
        "agent": {"kind": "answer", "options": {"choices": {"null": ["no", "ok"]}}},
        "envs": [{"domain": "null", "provider": "ray", "servers": 1, "num_cpus": 0, "resources": {"envnode": 1}}],
        "rollout": {"workers": 1, "groups_in_flight": 2, "group_size": 4, "max_new_tokens": 1,
                    "worker_resources": {"envnode": 1}},
        "train": {"mode": "async", "steps": 3, "groups_per_step": 2, "lr": 0.01, "max_lag": 1,
                  "checkpoint_every": 0, "sync_timeout": 120, "batch_timeout": 300},
    })
    seen = {}

    def where(run, metrics):
        if seen:
            return
        nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
        env_node = [node for node, res in nodes.items() if "envnode" in res]
        seen["nodes"], seen["env_node"] = len(nodes), env_node
        seen["servers"] = [h.extra["node_id"] for h in run.handles]
        # only the env node has "envnode": what is reserved there is this run's worker and server
        seen["envnode_free"] = ray.available_resources().get("envnode", 0.0)
        seen["driver_node"] = ray.get_runtime_context().get_node_id()

    t0 = time.monotonic()
    result = train(cfg, tmp_path / "run", log=log.append, after_step=where)
    log.append(f"trained {result.steps} steps in {time.monotonic() - t0:.0f}s")
    assert result.steps == 3 and all(m["samples"] >= 8 for m in result.history)
    assert seen["nodes"] == 2 and len(seen["env_node"]) == 1
    assert seen["servers"] == seen["env_node"] and seen["driver_node"] != seen["env_node"][0]
    assert seen["envnode_free"] == ENV_NODE["envnode"] - 2  # one rollout worker + one env server
    assert not ray.is_initialized()  # the run left the cluster; the fixture stops it
    out = Path(os.environ.get("MINTGYM_TWO_NODE_LOG", tmp_path / "two_nodes.log"))
    out.write_text("\n".join(log + [f"placement: {json.dumps(seen)}"]) + "\n")
