"""desktop-env's check_python_file_by_test_suite runs in a contained child: the agent's code never touches the
server process, ends it, outlasts the clock, or writes outside the suite's folder."""

import os
import sys
from pathlib import Path

import pytest

from mintgym.environments.desktop.osworld import metric_loader, metric_sandbox
from mintgym.environments.desktop.osworld.metrics import metric

pytestmark = pytest.mark.skipif(not metric_loader.available(), reason="desktop-env is not installed")


def suite(folder, body, name="test_suite"):
    (folder / "game.py").write_text("def score():\n    return 2\n")
    path = folder / f"{name}.py"  # one name per suite: a rewrite within the same second may reuse its .pyc
    path.write_text("from game import score\n\n" + body)
    return str(path)


def test_the_suite_runs_outside_the_server_process(tmp_path):
    cwd, path, modules = os.getcwd(), list(sys.path), set(sys.modules)
    check = metric("check_python_file_by_test_suite")
    assert check([str(tmp_path / "game.py")], suite(tmp_path, "def test():\n    return score() == 2\n")) == 1.0
    assert check([], suite(tmp_path, "def test():\n    return score() == 3\n", "suite_fails")) == 0.0
    assert os.getcwd() == cwd and sys.path == path and "game" not in sys.modules
    assert not {m for m in set(sys.modules) - modules if m.startswith("dynamic_test_module")}


def test_a_suite_that_ends_its_interpreter_scores_zero(tmp_path):
    check = metric("check_python_file_by_test_suite")
    assert check([], suite(tmp_path, "import sys\ndef test():\n    sys.exit(0)\n")) == 0.0  # OSWorld's would exit
    assert check([], suite(tmp_path, "import os\ndef test():\n    os._exit(0)\n", "suite_os_exit")) == 0.0


def test_a_suite_that_outlasts_the_clock_is_killed_and_scores_zero(tmp_path, monkeypatch):
    monkeypatch.setattr(metric_sandbox, "WALL_SECONDS", 3)
    body = "import time\ndef test():\n    time.sleep(60)\n    return True\n"
    assert metric("check_python_file_by_test_suite")([], suite(tmp_path, body)) == 0.0


@pytest.mark.skipif(not metric_sandbox._bwrap_works(), reason="bubblewrap does not work here")
def test_a_contained_suite_cannot_write_outside_its_folder(tmp_path):
    in_tmp = tmp_path.parent / f"{tmp_path.name}-outside.txt"  # the child's /tmp is its own
    on_disk = Path(metric_sandbox.__file__).with_name("escape-probe.txt")  # the rest of the filesystem is read-only
    try:
        for target, score in ((in_tmp, 1.0), (on_disk, 0.0)):
            body = f"def test():\n    open({str(target)!r}, 'w').write('x')\n    return True\n"
            folder = tmp_path / target.stem
            folder.mkdir()
            assert metric("check_python_file_by_test_suite")([], suite(folder, body)) == score
            assert not target.exists()
    finally:
        on_disk.unlink(missing_ok=True)


def test_a_child_that_fails_before_the_metric_ran_is_an_environment_fault(tmp_path, monkeypatch):
    monkeypatch.setattr(metric_sandbox, "CHILD", "raise SystemExit('no desktop-env here')")
    with pytest.raises(metric_sandbox.SuiteRunFailed, match="no desktop-env here"):
        metric("check_python_file_by_test_suite")([], suite(tmp_path, "def test():\n    return True\n"))


@pytest.mark.skipif(not metric_sandbox._bwrap_works(), reason="bubblewrap does not work here")
def test_a_contained_suite_runs_as_nobody_without_capabilities(tmp_path):
    body = ("def test():\n    caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
            "    import os\n    return os.getuid() == 65534 and int(caps.split()[1], 16) == 0\n")
    assert metric("check_python_file_by_test_suite")([], suite(tmp_path, body)) == 1.0


def test_code_in_a_temporary_checkout_is_shown_to_the_child_after_its_own_tmp(monkeypatch, tmp_path):
    """A checkout and venv under /tmp (CI's fresh clone) were hidden by the child's own /tmp: its interpreter
    was "No such file or directory". They are bound again, read-only, after that tmpfs."""
    from mintgym.environments.desktop.osworld import metric_sandbox

    if not metric_sandbox._bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    venv = tmp_path / "venv"
    venv.mkdir()
    monkeypatch.setattr(metric_sandbox.sys, "prefix", str(venv))
    argv = metric_sandbox._contained(["python"], [])
    after_tmp = argv[argv.index("/tmp", argv.index("--tmpfs")) + 1:]
    assert after_tmp[:3] == ["--ro-bind", str(venv.resolve()), str(venv.resolve())]
