"""A two-node Ray cluster on this machine: the trainer on the head, rollout workers and env servers on a
second node that holds a custom resource, placed there by the run config alone.

Both nodes are real ``ray start`` processes on 127.0.0.1 (tests/trainer/ray_cluster.py): their own temp folder,
free ports and a token of their own; the test ends every process of that cluster and checks none is left.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from mintgym.rl import train
from tests.trainer.ray_cluster import null_run, ray_cluster

pytestmark = pytest.mark.slow  # two Ray nodes and a few training steps: a minute or more on 2 cores

#: The second node's custom resource: what places workers and env servers there.
ENV_NODE = {"envnode": 4}


@pytest.fixture
def cluster(monkeypatch):
    with ray_cluster(monkeypatch, [ENV_NODE]) as started:
        yield started


def test_workers_and_env_servers_run_on_the_env_node(cluster, tmp_path):
    import ray

    address, log = cluster
    from mintgym.models.tiny import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "tiny", vocab_size=256)
    cfg = null_run(address, model, workers=1, servers=1, steps=3, groups_in_flight=2)
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
