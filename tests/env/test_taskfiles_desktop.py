"""A desktop task file (OSWorld's format under a MintGym id) runs in a real desktop session: its OSWorld
evaluator scores the untouched session 0 and the file's oracle (shared actions only) 1; a file the agent
writes with the wrong content scores 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mintgym.env import registration

pytestmark = pytest.mark.desktop

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "desktop-hello.json"


@pytest.fixture
def pack(tmp_path, monkeypatch):
    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    data = json.loads(EXAMPLE.read_text())
    wrong = {**data, "id": "desktop/examples/hello-wrong-v1",
             "oracle": [s if s["type"] != "type" else {**s, "text": s["text"].replace("hello world", "hello")}
                        for s in data["oracle"]]}
    (tmp_path / "tasks.json").write_text(json.dumps([data, wrong]))
    name = registration.add_pack(str(tmp_path / "tasks.json"))
    yield
    registration._pack_refs.pop(name, None)
    registration._runtime_packs.discard(name)
    for task_id in (data["id"], wrong["id"]):
        registration._tasks.pop(task_id, None)


@pytest.mark.parametrize("task_id, score", [("desktop/examples/hello-file-v1", 1.0),
                                            ("desktop/examples/hello-wrong-v1", 0.0)])
def test_the_oracle_is_scored_by_osworlds_evaluator(pack, task_id, score):
    import mintgym

    task = registration.task(task_id)
    if task.unavailable():
        pytest.skip(task.unavailable())
    env = mintgym.make(task_id, backend="inprocess")
    try:
        env.reset(seed=0)
        assert env.evaluate() == 0.0
        while (action := env.oracle_action()) is not None:
            *_, info = env.step(action)
            assert not info.get("error"), info
        assert env.evaluate() == score
    finally:
        env.close()
