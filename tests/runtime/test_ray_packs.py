"""Task packs reach env servers started by the ray provider: a task-file pack (with an image beside it) is
bundled for the actor, which writes it on its node (the end-to-end run on a Ray cluster is in test_ray.py,
sharing its cluster); a pack that cannot be forwarded is refused before any server starts, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mintgym.env import registration

pytest.importorskip("ray")

TASK = {"id": "pytool/raypack/red-pixels-v1", "domain": "pytool", "image": "img/red.png", "max_steps": 4,
        "instruction": "How many pixels of the image are pure red?", "scorer": {"type": "number", "value": 12},
        "oracle": [{"type": "done", "answer": "12"}]}


@pytest.fixture
def file_pack(tmp_path, monkeypatch):
    """A pytool task file with an image beside it, registered as a pack here (and removed afterwards)."""
    from PIL import Image

    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    (tmp_path / "img").mkdir()
    image = Image.new("RGB", (8, 8), "white")
    for i in range(12):
        image.putpixel((i % 8, i // 8), (255, 0, 0))
    image.save(tmp_path / "img" / "red.png")
    (tmp_path / "tasks.json").write_text(json.dumps([TASK]))
    name = registration.add_pack(str(tmp_path / "tasks.json"))
    yield tmp_path
    registration._pack_refs.pop(name, None)
    registration._runtime_packs.discard(name)
    if registration._tasks is not None:
        registration._tasks.pop(TASK["id"], None)


def test_bundles_carry_the_task_file_and_what_it_reads(file_pack, tmp_path_factory):
    from mintgym.runtime.ray import pack_bundles, unpack_bundles

    bundles, unforwarded = pack_bundles(*registration.pack_forwards())
    mine = next(b for b in bundles if b["ref"] == "tasks.json")
    assert set(mine["files"]) == {"tasks.json", "img/red.png"} and not mine["module"]
    out = tmp_path_factory.mktemp("node")
    env = unpack_bundles([mine], unforwarded, str(out))
    assert json.loads(env[registration.PACKS_ENV]) == {mine["pack"]: str(out / "0" / "tasks.json")}
    assert (out / "0" / "img" / "red.png").read_bytes() == (file_pack / "img" / "red.png").read_bytes()
    with pytest.raises(ValueError, match="outside its folder"):
        unpack_bundles([{**mine, "files": {"../escape.txt": b"x"}}], {}, str(out))


def _lambda_tasks():
    from mintgym.environments.null import EchoTask

    return [EchoTask(id="null/ray-lambda-echo", instruction='Answer "ok".')]


def test_a_pack_that_cannot_be_forwarded_is_refused_before_a_server_starts(monkeypatch):
    from mintgym.runtime.make import make

    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    registration.register_tasks("test-ray-lambda", lambda: _lambda_tasks())
    try:
        registration.tasks()
        with pytest.raises(registration.RegistrationError) as err:
            make("null/ray-lambda-echo", backend="ray")
        message = str(err.value)
        assert "cannot run 'null/ray-lambda-echo' on the 'ray' backend" in message and "lambda" in message
        assert "\n" not in message
    finally:
        registration._pack_refs.pop("test-ray-lambda")
        registration._runtime_packs.discard("test-ray-lambda")
        registration._tasks.pop("null/ray-lambda-echo", None)


def test_a_module_pack_travels_as_its_package_source(tmp_path, monkeypatch):
    """The entry-point route: a package whose tasks() loads a task file beside it, named by entry point."""
    from mintgym.runtime.ray import pack_bundles, unpack_bundles

    package = tmp_path / "src" / "eppack"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__pycache__" / "tasks.cpython-311.pyc").write_bytes(b"stale")
    (package / "tasks.py").write_text("from pathlib import Path\nfrom mintgym.env.taskfiles import load_tasks\n\n\n"
                                      "def tasks():\n    return load_tasks(Path(__file__).with_name('t.json'))\n")
    (package / "t.json").write_text(json.dumps({**TASK, "id": "pytool/eppack/q-v1", "image": None}))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setitem(registration._pack_refs, "test-eppack", "eppack.tasks:tasks")  # as an entry point names it
    forwards, _ = registration.pack_forwards(entry_points_too=True)
    assert "test-eppack" not in {f.pack for f in registration.pack_forwards()[0]}  # not a run-time pack
    mine = next(f for f in forwards if f.pack == "test-eppack")
    assert mine.paths == (str(package),)
    bundles, _ = pack_bundles([mine], {})
    assert set(bundles[0]["files"]) == {"eppack/__init__.py", "eppack/tasks.py", "eppack/t.json"}
    node = tmp_path / "node"
    env = unpack_bundles(bundles, {}, str(node))
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(node / "0")
    assert json.loads(env[registration.PACKS_ENV]) == {"test-eppack": "eppack.tasks:tasks"}
    probe = ("from mintgym.env import registration; "
             "print([t.id for t in registration.pack_tasks('test-eppack')])")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **env}, capture_output=True, text=True,
                         cwd=str(node), timeout=120)
    assert out.stdout.strip() == "['pytool/eppack/q-v1']", out.stderr
