"""benchmarks/fleet.py: the --mix and --servers-per-domain syntax, and a tiny fleet of every domain end to end."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FLEET = Path(__file__).resolve().parents[2] / "benchmarks" / "fleet.py"


def test_a_mix_splits_the_sessions_in_proportion_to_its_weights(load_benchmark):
    fleet = load_benchmark("fleet")
    assert fleet.share(500, fleet.parse_mix("web=250,pytool=200,desktop=50")) == {
        "web": 250, "pytool": 200, "desktop": 50}
    assert fleet.share(500, fleet.parse_mix("web=5,pytool=4,desktop=1")) == {"web": 250, "pytool": 200, "desktop": 50}
    even = fleet.share(500, fleet.parse_mix("web,pytool,desktop"))
    assert sum(even.values()) == 500 and sorted(even.values()) == [166, 167, 167]
    assert fleet.share(3, fleet.parse_mix("web=100,desktop=1")) == {"web": 2, "desktop": 1}  # never none of one
    slots = fleet.interleave({"web": 4, "desktop": 2})
    assert sorted(slots) == ["desktop"] * 2 + ["web"] * 4 and "desktop" in slots[:3]  # spread, not in a block


def test_servers_per_domain_takes_one_count_or_counts_by_domain(load_benchmark):
    fleet = load_benchmark("fleet")
    assert fleet.parse_servers("3") == {"": 3}
    assert fleet.parse_servers("web=4,desktop=1") == {"web": 4, "desktop": 1}
    assert fleet.parse_servers("2,web=4") == {"": 2, "web": 4}


@pytest.mark.parametrize(("argv", "problem"), [
    (["--mix", "web,browser"], "unknown domain 'browser'"),
    (["--mix", "web=two"], "weight of 'web' is 'two', not a number"),
    (["--mix", "web=0"], "weight of 'web' must be above 0"),
    (["--mix", "web,web"], "domain 'web' is named twice"),
    (["--mix", "web,"], "empty entry"),
    (["--servers-per-domain", "web=0"], "server count '0' is not a whole number of at least 1"),
    (["--mix", "web,pytool", "--servers-per-domain", "desktop=2"], "names desktop, not in --mix web, pytool"),
    (["--mix", "web,pytool,desktop", "--sessions", "2"], "--sessions 2 is fewer than the 3 domains"),
])
def test_bad_options_are_one_line_naming_the_problem(load_benchmark, capsys, argv, problem):
    fleet = load_benchmark("fleet")
    with pytest.raises(SystemExit) as stop:
        fleet.main(argv)
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error:" in last and problem in last


@pytest.mark.web
@pytest.mark.desktop
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is needed")
@pytest.mark.skipif(shutil.which("Xvfb") is None or shutil.which("openbox") is None,
                    reason="Xvfb and openbox are needed")
def test_a_session_of_every_domain_is_opened_stepped_and_closed_with_every_episode_accounted_for():
    out = subprocess.run([sys.executable, str(FLEET), "--sessions", "3", "--mix",
                          "web,pytool,desktop", "--seconds", "4", "--servers-per-domain", "1", "--warmup", "90"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    report = out.stdout
    assert re.search(r"^failed steps\s+0$", report, re.M), report
    started, completed, failed, unaccounted = map(int, re.search(
        r"^episodes\s+(\d+) started, (\d+) completed, (\d+) failed, (\d+) unaccounted", report, re.M).groups())
    assert started >= 3 and started == completed + failed and failed == 0 and unaccounted == 0, report
    assert re.search(r"^sessions\s+3 created, 3 closed at the end, 0 failed to close", report, re.M), report
    for domain in ("web", "pytool", "desktop"):
        row = re.search(rf"^\| {domain} \| 1 \| .* \| ([\d.]+) \| [\d.-]+ \|$", report, re.M)
        assert row and float(row.group(1)) > 0, f"no PSS for {domain}:\n{report}"
