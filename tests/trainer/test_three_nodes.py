"""A three-node Ray cluster on this machine: the trainer on the head, and two env nodes that each get one rollout
worker with its own ``provider: ray`` env servers, paired by Ray placement groups (mintgym.rl.placement), not
by ``urls``. A server killed mid-run comes back on its worker's node.

The nodes are real ``ray start`` processes on 127.0.0.1 (tests/trainer/ray_cluster.py); the test ends every
process of that cluster and checks none is left.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from mintgym.rl import train
from mintgym.rl.placement import server_indices
from tests.trainer.ray_cluster import null_run, ray_cluster

pytestmark = pytest.mark.slow  # three Ray nodes, two workers, four env servers: a minute or more on 2 cores

#: Each env node's custom resource: room for one pod (a worker and its two servers, one unit each), so Ray
#: must put the two pods on different nodes.
ENV_NODE = {"envnode": 3}
WORKERS, SERVERS = 2, 4


@pytest.fixture
def cluster(monkeypatch):
    with ray_cluster(monkeypatch, [ENV_NODE, ENV_NODE]) as started:
        yield started


def _node_of_actor(actor) -> str:
    import ray

    return ray.get(actor.__ray_call__.remote(lambda _self: ray.get_runtime_context().get_node_id()), timeout=60)


def test_each_worker_plays_on_servers_of_its_own_node(cluster, tmp_path):
    import ray

    address, log = cluster
    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "tiny", vocab_size=256)
    cfg = null_run(address, model, workers=WORKERS, servers=SERVERS, steps=4, groups_in_flight=1)
    seen: dict = {}

    def where(run, metrics):
        group = run.servers[0]
        if run.step == 1:  # kill worker 0's first server: the run restarts it, in the same pod
            handle = group.handles[0]
            seen["killed"] = handle.base_url
            os.killpg(handle.extra["pid"], signal.SIGKILL)
            deadline = time.monotonic() + 30
            while group.provider.alive(handle) and time.monotonic() < deadline:
                time.sleep(0.1)
        if run.step != cfg.train.steps:
            return
        nodes = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
        seen["nodes"] = len(nodes)
        seen["head"] = [node for node, res in nodes.items() if "node:__internal_head__" in res]
        seen["env_nodes"] = sorted(node for node, res in nodes.items() if "envnode" in res)
        seen["workers"] = [_node_of_actor(w) for w in run.workers]
        seen["servers"] = [h.extra["node_id"] for h in group.handles]
        seen["pods"] = run.placement.nodes()
        seen["server_restarts"] = group.restarts
        seen["envnode_free"] = ray.available_resources().get("envnode", 0.0)
        seen["driver"] = ray.get_runtime_context().get_node_id()

    t0 = time.monotonic()
    result = train(cfg, tmp_path / "run", log=log.append, after_step=where)
    log.append(f"trained {result.steps} steps in {time.monotonic() - t0:.0f}s")
    assert result.steps == cfg.train.steps and all(m["samples"] >= 8 for m in result.history)
    assert seen["nodes"] == 3 and len(seen["env_nodes"]) == 2 and seen["driver"] == seen["head"][0]
    assert sorted(seen["workers"]) == seen["env_nodes"]  # one worker on each env node
    assert seen["pods"] == seen["workers"]
    for w, node in enumerate(seen["workers"]):
        assert [seen["servers"][j] for j in server_indices(w, WORKERS, SERVERS)] == [node, node], (w, seen)
    assert seen["server_restarts"] == 1  # ... and the replacement is on worker 0's node, as checked above
    assert [line for line in log if f"at {seen['killed']} died; restarted at" in line], log
    assert seen["envnode_free"] == 0.0  # each env node holds one whole pod
    assert not ray.is_initialized()  # the run left the cluster; the fixture stops it
    out = Path(os.environ.get("MINTGYM_THREE_NODE_LOG", tmp_path / "three_nodes.log"))
    short = {k: [n[:8] for n in v] if isinstance(v, list) else v for k, v in seen.items()}
    short["driver"] = seen["driver"][:8]
    out.write_text("\n".join(log + [f"placement: {json.dumps(short)}"]) + "\n")
