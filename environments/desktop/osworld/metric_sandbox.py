"""Run desktop-env's ``check_python_file_by_test_suite`` in a contained child interpreter, never in the server.

OSWorld's function (``desktop_env/evaluators/metrics/vscode.py:210``, desktop-env 1.0.2) imports the task's
test file, which imports the agent's code, and calls its ``test()``; on the way it changes the process's
working directory, ``sys.path`` and ``sys.modules``. In MintGym's env server metrics run in worker threads,
so that would be agent code running in the server with process-wide side effects. Here the function runs
unchanged in a fresh interpreter:

* under bubblewrap when it works here (the whole filesystem read-only, the test's folder and a scratch
  folder writable, a private /tmp, no network, new user/PID/IPC/UTS namespaces as user "nobody" without
  capabilities, killed with its parent);
  otherwise as a plain child process (the server's container is then the boundary);
* in its own session, with a clean environment, CPU-time, memory, file-size and open-file limits, and a
  wall-clock limit after which the whole process group is killed.

A suite that ends its interpreter (``sys.exit``, a signal, a limit) or outlasts the wall clock scores 0, as a
suite that raises does in OSWorld's function; a child that fails before the function was loaded is an
environment fault and raises.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

WALL_SECONDS = 120
CPU_SECONDS = 60
MEMORY_BYTES = 4 * 2**30
FILE_BYTES = 64 * 2**20

#: argv: [json [actual_files, test_file, options], scratch folder, json limits]. It limits itself first (no
#: preexec_fn: the server calls metrics from threads); "loaded" is written once the function is in hand, "result"
#: holds its value.
CHILD = """
import json, resource, sys
for name, value in json.loads(sys.argv[3]).items():
    resource.setrlimit(getattr(resource, name), (value, value))
from pathlib import Path
from mintgym.environments.desktop.osworld.metric_loader import load_function
actual, test_file, options = json.loads(sys.argv[1])
scratch = Path(sys.argv[2])
check = load_function("check_python_file_by_test_suite")
(scratch / "loaded").write_text("1")
value = check(actual, test_file, **options)
(scratch / "result").write_text(json.dumps(value))
"""


class SuiteRunFailed(RuntimeError):
    """The child interpreter failed before desktop-env's function ran (an environment fault)."""


#: New namespaces of every kind, and inside them user "nobody" without capabilities: bubblewrap started by root
#: would otherwise leave root's capabilities to the child (it could remount the read-only filesystem).
ISOLATION = ("--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534", "--die-with-parent")


@functools.cache
def _bwrap_works() -> bool:
    binary = shutil.which("bwrap")
    if binary is None:
        return False
    probe = subprocess.run([binary, "--ro-bind", "/", "/", *ISOLATION, "true"], capture_output=True, timeout=30,
                           check=False)
    return probe.returncode == 0


def _code_under_tmp() -> list[Path]:
    """The interpreter's environment and MintGym's code where they lie under /tmp, which the child's own /tmp
    would hide (a checkout in a temporary folder): shown to it again, read-only."""
    import mintgym

    code = [Path(sys.prefix).resolve(), Path(mintgym.__file__).resolve().parents[1]]
    return [p for p in dict.fromkeys(code) if p.is_relative_to("/tmp")]


def _contained(argv: list[str], writable: list[Path]) -> list[str]:
    if not _bwrap_works():
        return argv
    shown = [arg for folder in _code_under_tmp() for arg in ("--ro-bind", str(folder), str(folder))]
    binds = [arg for folder in writable for arg in ("--bind", str(folder), str(folder))]
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *shown, *binds,
            *ISOLATION, "--new-session", "--", *argv]


LIMITS = {"RLIMIT_CPU": CPU_SECONDS, "RLIMIT_AS": MEMORY_BYTES, "RLIMIT_FSIZE": FILE_BYTES, "RLIMIT_NOFILE": 256}


def check_python_file_by_test_suite(actual_files: Any, test_file: Any, **options: Any) -> float:
    """OSWorld's ``check_python_file_by_test_suite`` (vscode.py:210), run by :data:`CHILD` in a contained child.

    Arguments and options must be JSON values (paths, lists of paths, names), as OSWorld's tasks pass them.
    """
    folders = [Path(test_file).resolve().parent] if isinstance(test_file, str) and test_file else []
    with tempfile.TemporaryDirectory(prefix="osworld-suite-") as tmp:
        scratch = Path(tmp)
        argv = [sys.executable, "-I", "-c", CHILD, json.dumps([actual_files, test_file, options]), str(scratch),
                json.dumps(LIMITS)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch), "LANG": "C.UTF-8"}
        proc = subprocess.Popen(_contained(argv, [scratch, *[f for f in folders if f.is_dir()]]), cwd=scratch,
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=WALL_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return 0.0
        if not (scratch / "loaded").exists():
            raise SuiteRunFailed(f"the test-suite child failed before desktop-env's function ran (exit "
                                 f"{proc.returncode}): {stderr.decode(errors='replace').strip()[-1000:]}")
        result = scratch / "result"
        return float(json.loads(result.read_text())) if result.exists() else 0.0
