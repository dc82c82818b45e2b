"""benchmarks/web_vs_browsergym.py: its argument checks, its PSS walk, and (slow) one ``--quick`` run of both sides."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "web_vs_browsergym.py"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, check=False)


@pytest.mark.parametrize(("args", "message"), [
    (["--levels", "0"], "--levels, --steps and --resets must be positive"),
    (["--steps", "-1"], "--levels, --steps and --resets must be positive"),
    (["--task", "webapps/todo-add"], "must be a miniwob/<name> task"),
])
def test_bad_arguments_fail_with_one_line_before_any_install(args, message):
    result = run(*args)
    assert result.returncode == 1
    assert result.stdout == ""  # nothing installed, nothing measured
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_tree_pss_counts_children_once(load_benchmark):
    bench = load_benchmark("web_vs_browsergym")
    alone = bench.tree_pss(os.getpid())
    # a child that holds 64 MiB of its own, touched pages
    child = subprocess.Popen([sys.executable, "-c", "import sys; b = bytearray(64 << 20); sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        for _ in range(200):
            child_pss = bench.tree_pss(child.pid)
            if child_pss > 64 << 20:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        with_child = bench.tree_pss(os.getpid())
    finally:
        child.communicate(b"")
    assert child_pss > 64 << 20
    # the tree includes the child; this process's own PSS moves a little between the two reads
    assert with_child - alone == pytest.approx(child_pss, abs=16 << 20)
    assert bench.tree_pss(child.pid) == 0  # gone: counted as nothing, no error


def test_summary_median_and_p95(load_benchmark):
    bench = load_benchmark("web_vs_browsergym")
    stats = bench.summary([float(v) for v in range(1, 101)])
    assert stats == {"median": 50.5, "p95": 96.0, "n": 100}


def test_a_venv_that_cannot_be_made_is_one_clear_error(tmp_path, monkeypatch, load_benchmark):
    bench = load_benchmark("web_vs_browsergym")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(bench, "VENV", blocker / "venvs" / "browsergym")
    with pytest.raises(bench.BenchmarkError, match=r"cannot make BrowserGym's virtual environment at .*a-file"):
        bench.ensure_venv(bench.BROWSERGYM_VERSION)


@pytest.mark.slow
@pytest.mark.web
def test_quick_run_prints_both_sides():
    """Installs BrowserGym into benchmarks/.venvs on first use (needs the package registry), then runs both sides."""
    result = run("--quick", timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    for n in (1, 2):
        row = re.search(rf"^\s+{n}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x", out, re.MULTILINE)
        assert row, out
        mint, bgym, ratio = map(float, row.groups())
        assert mint > 20 and bgym > 20 and ratio == pytest.approx(bgym / mint, abs=0.06)
    for name in ("MintGym plain", "MintGym a11y", "MintGym a11y+set-of-marks", "MintGym a11y+dom",
                 "MintGym a11y via mintgym.make", "BrowserGym as shipped (default obs)",
                 "BrowserGym waits removed (default obs)"):
        row = re.search(rf"^\s+{re.escape(name)}\s+([\d.]+)\s+([\d.]+)$", out, re.MULTILINE)
        assert row and 0 < float(row.group(1)) <= float(row.group(2)), (name, out)
    assert re.search(r"^\s+BrowserGym as shipped\s+[\d.]+\s+[\d.]+$", out, re.MULTILINE), out
    assert "NOT MEASURED" in out  # N=50 is not part of --quick
    assert re.search(r"step with the grounded a11y channel .*: (PASS|FAIL) \([\d.]+x\)", out), out

