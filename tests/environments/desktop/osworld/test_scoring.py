"""OSWorld's DesktopEnv.evaluate rules, as MintGym's scoring follows them (no desktop needed).

Getters here read the task's rules and files in a temporary folder, as OSWorld's ``rule`` and
``vm_file`` getters do, raising FileNotFoundError for a missing file the way OSWorld's file fetches can.
"""

import json
from pathlib import Path

import pytest

from mintgym.environments.desktop.osworld.loader import parse_task
from mintgym.environments.desktop.osworld.metric_loader import MissingDependency
from mintgym.environments.desktop.osworld.metrics import UnknownMetric
from mintgym.environments.desktop.osworld.scoring import as_score, evaluate, is_fail


def spec(**evaluator):
    return parse_task({"id": "t", "instruction": "x", "evaluator": evaluator}, Path("os/t.json")).evaluator


class Session:
    """The getters of a fake-free session: files under ``root``, rules from the config, calls recorded."""

    def __init__(self, root: Path):
        self.root = root
        self.calls: list[str] = []

    async def get(self, config: dict):
        self.calls.append(config["type"])
        if config["type"] == "rule":
            return config["rules"]
        if config["type"] == "vm_file":
            path = self.root / config["path"]
            if not path.exists():
                raise FileNotFoundError(path)
            return str(path)
        raise RuntimeError(f"the session is gone (getter {config['type']})")


def rule(value):
    return {"type": "rule", "rules": value}


SCORES = {
    "value": lambda result, **options: result,
    "equal": lambda result, expected, **options: float(result == expected),
    "boom": lambda result, *rest, **options: 1 / 0,
    "none": lambda result, *rest, **options: None,
    "needs_lib": lambda result, *rest, **options: (_ for _ in ()).throw(MissingDependency("needs easyocr")),
    "options": lambda result, **options: float(options == {"a": 1}),
    "read": lambda path, **options: float(Path(path).read_text() == "ok"),
}


def lookup(name):
    if name not in SCORES:
        raise UnknownMetric(f"unknown OSWorld metric {name!r}")
    return SCORES[name]


async def score(ev, session, failed=False, postconfig=None):
    return await evaluate(ev, last_action_failed=failed, get=session.get, postconfig=postconfig, lookup=lookup)


async def test_and_takes_the_mean_and_stops_at_the_first_zero(tmp_path):
    s = Session(tmp_path)
    ev = spec(func=["value", "value"], result=[rule(1), rule(0.5)])
    assert (await score(ev, s)).score == 0.75
    ev = spec(func=["value", "value", "value"], result=[rule(1), rule(0), rule(1)])
    out = await score(ev, s)
    assert out.score == 0 and out.scores == [1, 0] and out.decided_by == "value scored 0"


async def test_or_takes_the_max_and_stops_at_the_first_one(tmp_path):
    s = Session(tmp_path)
    ev = spec(func=["value", "value"], result=[rule(0.25), rule(0.5)], conj="or")
    assert (await score(ev, s)).score == 0.5
    ev = spec(func=["value", "value", "boom"], result=[rule(0), rule(True), rule(0)], conj="or")
    out = await score(ev, s)
    assert out.score == 1.0 and len(out.scores) == 2


async def test_expected_and_options_are_passed_as_osworld_does(tmp_path):
    s = Session(tmp_path)
    ev = spec(func=["equal", "options"], result=[rule("x"), rule(None)], expected=[rule("x"), None],
              options=[{}, {"a": 1}])
    assert (await score(ev, s)).score == 1.0
    ev = spec(func="equal", result=rule("x"), expected=rule("y"))
    assert (await score(ev, s)).score == 0.0


async def test_missing_result_file(tmp_path):
    (tmp_path / "good.txt").write_text("ok")
    s = Session(tmp_path)
    missing = {"type": "vm_file", "path": "gone.txt"}
    good = {"type": "vm_file", "path": "good.txt"}
    out = await score(spec(func=["read", "read"], result=[good, missing]), s)
    assert out.score == 0 and out.decided_by == "missing file"
    # Under "or" OSWorld goes on with the previous metric's result value.
    out = await score(spec(func=["value", "read"], result=[rule(0), missing], conj="or"), s)
    assert out.scores == [0, None] and out.score == 0  # the reused value (0) is not a path: read raises
    out = await score(spec(func=["value", "value"], result=[rule(0.5), missing], conj="or"), s)
    assert out.scores == [0.5, 0.5] and out.score == 0.5
    out = await score(spec(func=["read", "value"], result=[missing, rule(0.25)], conj="or"), s)
    assert out.score == 0.25 and "no earlier result" in out.errors[1]


async def test_raising_or_none_metrics_score_zero_and_are_reported(tmp_path):
    s = Session(tmp_path)
    out = await score(spec(func="boom", result=rule(1)), s)
    assert out.score == 0 and "ZeroDivisionError" in out.errors[0]
    assert (await score(spec(func="none", result=rule(1)), s)).score == 0
    assert as_score(True) == 1.0 and as_score(None) == 0.0 and as_score(2) == 1.0 and as_score(-1) == 0.0


async def test_faults_that_are_not_the_agents_propagate(tmp_path):
    s = Session(tmp_path)
    with pytest.raises(MissingDependency):
        await score(spec(func="needs_lib", result=rule(1)), s)
    with pytest.raises(RuntimeError, match="session is gone"):
        await score(spec(func="value", result={"type": "accessibility_tree"}), s)
    with pytest.raises(UnknownMetric):
        await score(spec(func=["value", "nope"], result=[rule(1), rule(1)]), s)
    assert s.calls == ["rule", "accessibility_tree"]  # the unknown name failed before any getter ran


async def test_infeasible_and_fail(tmp_path):
    s = Session(tmp_path)
    ran = []

    async def postconfig():
        ran.append(True)

    infeasible = spec(func="infeasible")
    assert (await score(infeasible, s, failed=True, postconfig=postconfig)).score == 1.0
    assert (await score(infeasible, s, failed=False, postconfig=postconfig)).score == 0.0
    out = await score(spec(func="value", result=rule(1)), s, failed=True, postconfig=postconfig)
    assert out.score == 0.0 and out.decided_by == "agent answered FAIL" and s.calls == []
    assert ran == [True, True, True]  # postconfig runs before scoring, for every kind of task


def test_what_counts_as_fail():
    assert is_fail(False, None) and is_fail(True, " fail ") and is_fail(None, "FAIL")
    assert not is_fail(True, None) and not is_fail(None, None) and not is_fail(True, "failed to open")


@pytest.mark.parametrize("conj", ["and", "or"])
async def test_real_metrics_through_the_registry(tmp_path, conj):
    from mintgym.environments.desktop.osworld import metric_loader
    from mintgym.environments.desktop.osworld.metrics import metric

    if not metric_loader.available():
        pytest.skip("desktop-env is not installed")
    (tmp_path / "s.json").write_text(json.dumps({"editor.fontSize": 14}))
    s = Session(tmp_path)
    ev = spec(func=["check_json_settings", "exact_match"], conj=conj,
              result=[{"type": "vm_file", "path": "s.json"}, rule("a")],
              expected=[rule({"expected": {"editor.fontSize": 14}}), rule({"expected": "b"})])
    out = await evaluate(ev, last_action_failed=False, get=s.get, lookup=metric)
    assert out.score == (0.0 if conj == "and" else 1.0)
