"""A run folder is keyed by what made it: the same run resumes it, another is refused in one line naming the
difference and touching nothing, ``force`` moves the old folder aside whole, and a folder that is not a
run's is never touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mintgym.errors import MintGymError
from mintgym.run_record import RECORD, changes, check_folder

KEY = {"agent": "scripted", "tasks": ["null/echo"], "seeds": [0, 1], "max_steps": None}
MARKERS = ("trajectories/*/meta.json",)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def made(out: Path, key=KEY) -> Path:
    """A folder as a run leaves it: the record and one finished episode."""
    check_folder(out, "eval", key).apply()
    (out / "trajectories" / "null__echo-seed0").mkdir(parents=True)
    (out / "trajectories" / "null__echo-seed0" / "meta.json").write_text('{"status": "success"}')
    return out


def test_the_same_run_resumes_and_keeps_the_record(tmp_path):
    out = made(tmp_path / "e")
    before = snapshot(out)
    check = check_folder(out, "eval", dict(KEY, seeds=(0, 1)))  # tuples read back as lists
    assert check.action == "resume" and check.apply() is None and snapshot(out) == before


@pytest.mark.parametrize("changed, said", [
    ({"agent": "random"}, "was made by --agent scripted; this run is --agent random"),
    ({"tasks": ["null/echo", "pytool/a", "pytool/b", "pytool/c"]},
     "was made by tasks null/echo; this run is 4 tasks (null/echo, pytool/a, pytool/b, ...)"),
    ({"max_steps": 5}, "was made by --max-steps (not given); this run is --max-steps 5"),
    ({"agent": "vlm", "model_url": "http://x/v1"},
     "--agent scripted; this run is --agent vlm (and 1 more: --model-url)"),
])
def test_another_run_is_refused_in_one_line_naming_the_difference_and_nothing_changes(tmp_path, changed, said):
    out = made(tmp_path / "e")
    before = snapshot(out)
    with pytest.raises(MintGymError) as err:
        check_folder(out, "eval", {**KEY, **changed}, labels={"tasks": "tasks"})
    message = str(err.value)
    assert said in message and "\n" not in message
    assert message.endswith(f"give another --out, or --force to start over (the old episodes are moved to {out}"
                            ".before-<timestamp>)")
    assert snapshot(out) == before and [p.name for p in tmp_path.iterdir()] == ["e"]


def test_a_run_of_another_kind_is_refused(tmp_path):
    out = made(tmp_path / "e")
    with pytest.raises(MintGymError, match=r"e was made by mintgym eval; this run is mintgym rollout: give another"):
        check_folder(out, "rollout", KEY)


def test_force_moves_the_old_folder_aside_whole_and_starts_afresh(tmp_path):
    out = made(tmp_path / "e")
    before = snapshot(out)
    check = check_folder(out, "eval", {**KEY, "agent": "random"}, force=True)
    moved = check.apply()
    assert moved.parent == tmp_path and moved.name.startswith("e.before-") and snapshot(moved) == before
    assert [p.name for p in out.iterdir()] == [RECORD]
    assert json.loads((out / RECORD).read_text())["key"]["agent"] == "random"
    again = check_folder(out, "eval", {**KEY, "agent": "random"}, force=True)  # nothing ran yet: nothing to move
    assert again.action == "new" and again.apply() is None


def test_force_with_the_same_key_still_starts_over(tmp_path):
    out = made(tmp_path / "e")
    moved = check_folder(out, "eval", KEY, force=True).apply()
    assert (moved / "trajectories" / "null__echo-seed0" / "meta.json").is_file()
    assert not (out / "trajectories").exists()


def test_a_folder_that_is_not_a_run_is_refused_even_with_force_and_left_as_it_was(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "qwen2_vl"}')  # a checkpoint given as --out
    for force in (False, True):
        with pytest.raises(MintGymError, match=r"is not empty and holds no eval run \(no run.json, no episodes\)"):
            check_folder(tmp_path, "eval", KEY, force=force, markers=MARKERS)
    assert snapshot(tmp_path) == {"config.json": b'{"model_type": "qwen2_vl"}'}


def test_episodes_from_before_the_record_are_refused_and_force_moves_them_aside(tmp_path):
    out = tmp_path / "old"
    (out / "trajectories" / "k").mkdir(parents=True)
    (out / "trajectories" / "k" / "meta.json").write_text("{}")
    with pytest.raises(MintGymError, match=r"old holds episodes from before run folders recorded what made them"):
        check_folder(out, "eval", KEY, markers=MARKERS)
    assert not (out / RECORD).exists()
    moved = check_folder(out, "eval", KEY, markers=MARKERS, force=True).apply()
    assert (moved / "trajectories" / "k" / "meta.json").is_file() and (out / RECORD).is_file()


def test_a_file_is_refused_and_a_folder_holding_only_a_record_takes_the_new_run(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(MintGymError, match="is a file"):
        check_folder(tmp_path / "f", "eval", KEY)
    check_folder(tmp_path / "e", "eval", KEY).apply()  # a start that failed before any episode
    assert check_folder(tmp_path / "e", "eval", {**KEY, "agent": "random"}).action == "new"


def test_changes_are_dotted_keys():
    assert changes({"a": {"b": 1, "c": [1]}}, {"a": {"b": 2, "c": [1]}}) == {"a.b": (1, 2)}
