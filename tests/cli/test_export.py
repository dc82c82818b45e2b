"""``mintgym export``: a run's steps as a Hugging Face dataset on disk, through the command line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside_export", Path(__file__).with_name("outside.py"))
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)
mintgym = outside.mintgym


def test_a_rollout_exports_to_a_dataset_and_mistakes_are_one_line(tmp_path):
    run, data = tmp_path / "run", tmp_path / "data"
    assert mintgym("rollout", "--task", "null/echo", "--agent", "scripted", "--episodes", "2",
                   "--out", str(run)).returncode == 0
    proc = mintgym("export", str(run), "--out", str(data))
    assert proc.returncode == 0 and "2 steps from 2 episodes" in proc.stdout, proc.stderr
    import datasets

    ds = datasets.load_from_disk(str(data))
    assert len(ds) == 2 and ds[0]["task_id"] == "null/echo" and ds[0]["image"].size == (1280, 720)
    assert json.loads(ds[0]["action"])["type"] == "done"
    (tmp_path / "a-file").write_text("x")
    for args, said in ((("export", str(run), "--out", str(data)), "is not empty"),
                       (("export", str(run), "--out", str(tmp_path / "a-file")), "is a file"),  # was rc 1
                       (("export", str(run), "--out", str(tmp_path / "d3"), "--agent", "answer"),
                        "no action set for domain 'null'"),
                       (("export", str(tmp_path / "nope"), "--out", str(tmp_path / "d2")), "no such run folder")):
        bad = mintgym(*args)
        assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1, bad.stderr
        assert said in bad.stderr and "(--all takes every episode)" not in bad.stderr
