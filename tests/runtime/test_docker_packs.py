"""Task packs reach env servers started by the docker provider: their files are mounted read-only and the
container's ``$MINTGYM_PACKS`` names them by their paths inside it. The plan is checked here without a
daemon; the episode in a container (``@pytest.mark.docker``, slow) uses test_docker.py's images."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from mintgym.env import registration
from mintgym.env.registration import PackForward
from mintgym.runtime.docker import PACKS_MOUNT, PYPATH_MOUNT, pack_mounts

TASK = {"id": "pytool/dockerpack/sum-v1", "domain": "pytool", "instruction": "What is 20 + 22?",
        "scorer": {"type": "number", "value": 42}, "oracle": [{"type": "python", "code": "print(20 + 22)"},
                                                             {"type": "done", "answer": "42"}]}


def test_the_mount_plan(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    forwards = [PackForward("mine", str(tmp_path / "tasks" / "t.yaml"),
                            (str(tmp_path / "tasks" / "t.yaml"), str(pages / "p.html"))),
                PackForward("mod", "mypkg.tasks:tasks", (str(tmp_path / "src" / "mypkg"),)),
                PackForward("own", "mintgym.environments.null:tasks", ())]
    volumes, env = pack_mounts(forwards, {"lam": "a lambda cannot be imported"})
    assert volumes == {str(tmp_path): f"{PACKS_MOUNT}/0", str(tmp_path / "src" / "mypkg"): f"{PYPATH_MOUNT}/1/mypkg"}
    assert json.loads(env[registration.PACKS_ENV]) == {"mine": f"{PACKS_MOUNT}/0/tasks/t.yaml",
                                                        "mod": "mypkg.tasks:tasks",
                                                        "own": "mintgym.environments.null:tasks"}
    assert env["PYTHONPATH"] == f"{PYPATH_MOUNT}/1"
    assert json.loads(env[registration.UNFORWARDED_ENV]) == {"lam": "a lambda cannot be imported"}
    assert pack_mounts([], {}) == ({}, {})


def _docker_module():
    spec = importlib.util.spec_from_file_location("mintgym_tests_docker", Path(__file__).with_name("test_docker.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_docker = _docker_module()
docker_images = _docker.docker_images  # the session's images, built once with test_docker.py's fixture


@pytest.mark.docker
@pytest.mark.slow
def test_a_task_file_pack_runs_in_a_container(docker_images, tmp_path, monkeypatch):
    from mintgym.runtime.make import make

    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / "tasks.json").write_text(json.dumps([TASK]))
    for path in (tmp_path, folder):  # the container's user (not root) reads the mounted files
        os.chmod(path, 0o755)
    os.chmod(folder / "tasks.json", 0o644)
    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    pack = registration.add_pack(str(folder / "tasks.json"))
    try:
        env = make(TASK["id"], backend="docker", backend_options={
            "docker_host": _docker.DOCKER_HOST, "network": "host", "pull": "never", "image": docker_images["pytool"]})
        try:
            env.reset(seed=0)
            for _ in range(3):
                *_, terminated, _, _ = env.step(env.oracle_action())
                if terminated:
                    break
            assert env.evaluate() == 1.0
        finally:
            env.close()
    finally:
        registration._pack_refs.pop(pack, None)
        registration._runtime_packs.discard(pack)
        registration._tasks.pop(TASK["id"], None)
