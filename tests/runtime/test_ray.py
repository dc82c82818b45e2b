"""The ray provider on a real local Ray cluster: a head node and a worker node (separate raylets) on
loopback, env servers as actors placed by a custom resource only the worker node has."""

from __future__ import annotations

import dataclasses
import os
import time

import httpx
import psutil
import pytest

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    # Keep every Ray process on 127.0.0.1: Ray otherwise swaps loopback for this machine's outward
    # address. The variable reaches the raylets and workers it spawns; the driver reads the constant.
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    saved = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"), ray_constants.ENABLE_RAY_CLUSTER
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    if ray.is_initialized():
        ray.shutdown()
    loopback = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * 1024 * 1024}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, **loopback})
    worker = c.add_node(num_cpus=2, resources={"envslot": 2}, **loopback)
    ray.init(address=c.address, namespace="mintgym")
    try:
        yield {"worker_node": worker.node_id}
    finally:
        ray.shutdown()
        c.shutdown()
        if saved[0] is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = saved[0]
        ray_constants.ENABLE_RAY_CLUSTER = saved[1]


def _gone(pid: int, wait: float = 30.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_servers_are_placed_by_resources_and_stopped(cluster):
    from mintgym.runtime.ray import RayProvider

    prov = RayProvider(num_cpus=0.5, resources={"envslot": 1}, bind="127.0.0.1")
    handles = [prov.start("null") for _ in range(2)]
    try:
        for handle in handles:
            prov.wait_ready(handle, timeout=120)
            assert handle.extra["node_id"] == cluster["worker_node"]  # only that node has envslot
            assert handle.base_url.startswith("http://127.0.0.1:")
            assert httpx.get(f"{handle.base_url}/v1/health", trust_env=False).json()["status"] == "ok"
        assert len({h.base_url for h in handles}) == 2
    finally:
        for handle in handles:
            prov.stop(handle)
    for handle in handles:
        assert not prov.alive(handle)
        assert _gone(handle.extra["pid"])
    prov.stop(handles[0])  # a second stop is harmless


def test_a_server_in_a_placement_group_lands_on_the_groups_node_and_is_checked_there(cluster):
    """The run pairs workers with servers by placement groups (mintgym.rl.placement); readiness is asked of the
    actor on the server's node, so an address the caller cannot reach does not matter."""
    from ray.util.placement_group import placement_group, remove_placement_group

    from mintgym.runtime.ray import RayProvider

    group = placement_group([{"envslot": 1}])
    ray.get(group.ready(), timeout=60)
    prov = RayProvider(num_cpus=0, resources={"envslot": 1}, bind="127.0.0.1")
    handle = prov.start("null", options={"placement_group": group})
    try:
        assert handle.extra["node_id"] == cluster["worker_node"]
        unreachable = dataclasses.replace(handle, base_url="http://192.0.2.1:9")  # TEST-NET-1: never answers
        prov.wait_ready(unreachable, timeout=60)
    finally:
        prov.stop(handle)
        remove_placement_group(group)


def test_killed_actor_leaves_no_server(cluster):
    from mintgym.runtime.ray import RayProvider

    prov = RayProvider(num_cpus=0.5, bind="127.0.0.1")
    handle = prov.start("null")
    prov.wait_ready(handle, timeout=120)
    ray.kill(ray.get_actor(handle.ident, namespace="mintgym"), no_restart=True)
    assert _gone(handle.extra["pid"])
    assert not prov.alive(handle)
    prov.stop(handle)


def test_off_loopback_servers_get_a_token(cluster):
    from mintgym.runtime.ray import RayProvider

    prov = RayProvider(num_cpus=0.5)  # binds 0.0.0.0: reachable from other nodes, so token-guarded
    handle = prov.start("null")
    try:
        prov.wait_ready(handle, timeout=120)
        assert handle.token
        assert httpx.get(f"{handle.base_url}/v1/spec", trust_env=False).status_code == 401
        auth = {"Authorization": f"Bearer {handle.token}"}
        assert httpx.get(f"{handle.base_url}/v1/spec", headers=auth, trust_env=False).status_code == 200
    finally:
        prov.stop(handle)


def test_episode_through_make(cluster):
    from mintgym.runtime.make import make

    env = make("null/echo", backend="ray", backend_options={"num_cpus": 0.5, "bind": "127.0.0.1"})
    try:
        env.reset(seed=0)
        for _ in range(10):
            action = env.oracle_action()
            if action is None:
                break
            *_, terminated, truncated, _info = env.step(action)
            if terminated or truncated:
                break
        assert env.evaluate() == 1.0
    finally:
        env.close()


def test_unsatisfiable_options_are_rejected():
    from mintgym.runtime.ray import RayProvider

    with pytest.raises(ValueError, match="scheduling"):
        RayProvider(scheduling="PACK_EVERYTHING")
    with pytest.raises(ValueError, match="unknown ray start option"):
        RayProvider().start("null", options={"gpus": 1})


def test_unplaceable_server_is_a_clear_error(cluster):
    from mintgym.errors import BackendError
    from mintgym.runtime.ray import RayProvider

    prov = RayProvider(num_cpus=0.5, resources={"no_such_resource": 1}, bind="127.0.0.1", schedule_timeout=3)
    with pytest.raises(BackendError, match="could not place"):
        prov.start("null")


# ---- task packs reach the actor's server (the bundling itself: test_ray_packs.py) --------------------------
def test_a_task_file_pack_runs_on_a_ray_server_after_the_drivers_copy_is_gone(cluster, tmp_path, monkeypatch):
    import json
    import shutil

    from PIL import Image

    import mintgym
    from mintgym.env import registration
    from mintgym.runtime.ray import RayProvider

    task = {"id": "pytool/raypack/red-pixels-v1", "domain": "pytool", "image": "img/red.png",
            "instruction": "How many pixels of the image are pure red?", "scorer": {"type": "number", "value": 3},
            "oracle": [{"type": "done", "answer": "3"}]}
    (tmp_path / "img").mkdir()
    image = Image.new("RGB", (8, 8), "white")
    for x in range(3):
        image.putpixel((x, 0), (255, 0, 0))
    image.save(tmp_path / "img" / "red.png")
    (tmp_path / "tasks.json").write_text(json.dumps([task]))
    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    pack = registration.add_pack(str(tmp_path / "tasks.json"))
    prov = RayProvider(num_cpus=0.5, resources={"envslot": 1}, bind="127.0.0.1")
    handle = prov.start("pytool")
    try:
        shutil.rmtree(tmp_path)  # the server must use what the actor carried to its node, not the driver's files
        prov.wait_ready(handle, timeout=120)
        env = mintgym.make(task["id"], base_url=handle.base_url, token=handle.token)
        try:
            obs, _ = env.reset(seed=0)
            assert "pure red" in obs["instruction"] and obs["screenshot"].shape[2] == 3
            *_, terminated, _, _ = env.step(env.oracle_action())
            assert terminated and env.evaluate() == 1.0
        finally:
            env.close()
    finally:
        prov.stop(handle)
        registration._pack_refs.pop(pack, None)
        registration._runtime_packs.discard(pack)
        registration._tasks.pop(task["id"], None)
