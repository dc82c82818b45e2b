"""A SIGKILLed server leaves nothing: its groups' processes die, its groups and its tmpfs quotas are removed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mintgym.environments.isolation import cgroups

pytestmark = pytest.mark.skipif(bool(cgroups.probe()[0]), reason=f"no control groups here: {cgroups.probe()[0]}")

SERVER = """
import subprocess, sys, time
from pathlib import Path
from mintgym.environments.isolation import cgroups, mounts
folder = Path(sys.argv[1])
mounts.mount_tmpfs(folder, 8, None, family="reapertest", mode=0o755)
(folder / "written").write_bytes(b"x" * 2**20)
group = cgroups.Cgroup.create("reapertest", cgroups.Limits(processes=20))
member = subprocess.Popen(group.join_command(["sleep", "300"]), start_new_session=True)
print(group.name, member.pid, flush=True)
time.sleep(300)
"""


def test_killing_the_server_removes_its_groups_members_and_mounts(tmp_path):
    folder = tmp_path / "quota"
    folder.mkdir()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(folder)], stdout=subprocess.PIPE, text=True)
    name, member = server.stdout.readline().split()
    assert str(folder) in Path("/proc/self/mounts").read_text()
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    deadline = time.monotonic() + 10
    parents = cgroups.probe()[1]
    while time.monotonic() < deadline:
        gone = (not (parents["core"] / name).exists() and str(folder) not in Path("/proc/self/mounts").read_text()
                and not Path(f"/proc/{member}").exists())
        if gone:
            break
        time.sleep(0.1)
    assert not (parents["core"] / name).exists(), "the group outlived its server"
    assert str(folder) not in Path("/proc/self/mounts").read_text(), "the tmpfs outlived its server"
    assert not Path(f"/proc/{member}").exists() or "Z" in Path(f"/proc/{member}/stat").read_text().split()[2]
    assert not (folder / "written").exists()
