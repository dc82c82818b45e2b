"""Control groups: limits written, members joined through the shell wrapper, and a kill that nothing dodges."""

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from mintgym.environments.isolation import cgroups

needs_cgroups = pytest.mark.skipif(bool(cgroups.probe()[0]), reason=f"no control groups here: {cgroups.probe()[0]}")


def test_probe_says_why_when_groups_are_unavailable():
    reason, parents = cgroups.probe()
    assert bool(reason) != bool(parents)
    if os.geteuid() != 0:
        assert reason == "not running as root"
    assert all(isinstance(p, Path) for p in parents.values())


@pytest.fixture
def group():
    made = cgroups.Cgroup.create("test", cgroups.Limits(memory_bytes=256 * 2**20, processes=40, cpus=0.5))
    yield made
    made.remove()


@needs_cgroups
def test_limits_are_written_where_the_kernel_reads_them(group):
    assert int((group.dirs["pids"] / "pids.max").read_text()) == 40
    if group.v2:
        assert (group.dirs["cpu"] / "cpu.max").read_text().split() == ["50000", str(cgroups.CFS_PERIOD_US)]
        assert int((group.dirs["memory"] / "memory.max").read_text()) == 256 * 2**20
    else:
        assert int((group.dirs["cpu"] / "cpu.cfs_quota_us").read_text()) == 50000
        assert int((group.dirs["memory"] / "memory.limit_in_bytes").read_text()) == 256 * 2**20


@needs_cgroups
def test_a_command_started_through_join_command_is_a_member_and_so_are_its_children(group):
    proc = subprocess.Popen(group.join_command(["sh", "-c", "sleep 30 & sleep 30"]))
    deadline = time.monotonic() + 5
    while len(group.pids()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    members = set(group.pids())
    assert proc.pid in members and len(members) == 3
    group.kill_and_wait()
    assert proc.wait(5) == -9 and group.pids() == []


@needs_cgroups
def test_fork_and_exit_loops_cannot_dodge_the_kill():
    group = cgroups.Cgroup.create("test", cgroups.Limits(processes=2000))
    loop = "import os, time\nwhile True:\n    if os.fork(): os._exit(0)\n    time.sleep(0.001)\n"
    for _ in range(3):
        subprocess.Popen(group.join_command([sys.executable, "-c", loop]), start_new_session=True).wait()
    time.sleep(0.3)
    assert group.pids(), "the loops run (under ever new PIDs)"
    group.kill_and_wait()
    time.sleep(0.3)
    assert group.pids() == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"]
                and "os.fork()" in " ".join(p.info["cmdline"])]
    group.remove()


@needs_cgroups
def test_refused_forks_and_oom_kills_are_counted(group):
    subprocess.run(group.join_command(["sh", "-c", "for i in $(seq 60); do sleep 5 & done; wait"]),
                   capture_output=True, timeout=60, check=False)
    assert group.process_limit_hits() > 0
    subprocess.run(group.join_command([sys.executable, "-c", "b = b'x' * (1024 * 2**20)"]), capture_output=True,
                   timeout=60, check=False)
    assert group.oom_kills() >= 1
    assert group.memory_peak() <= 256 * 2**20
    group.kill_and_wait()


@needs_cgroups
def test_groups_of_a_dead_server_are_swept():
    _, parents = cgroups.probe()
    name = "mintgym-test-4194305-1"  # above any pid_max: its server is never alive
    for parent in dict.fromkeys(parents.values()):
        (parent / name).mkdir()
    assert cgroups.sweep_stale("test") >= 1
    assert not any((parent / name).exists() for parent in parents.values())


@needs_cgroups
def test_a_group_is_removed_with_its_processes_and_removing_twice_is_safe():
    made = cgroups.Cgroup.create("test", cgroups.Limits())
    proc = subprocess.Popen(made.join_command(["sleep", "30"]))
    time.sleep(0.2)
    made.remove()
    made.remove()
    assert proc.wait(5) == -9
    assert not any(folder.exists() for folder in made.dirs.values())
    assert os.path.exists("/proc/self")


@needs_cgroups
def test_a_group_weighs_as_many_fresh_groups_as_asked_within_the_kernels_range(group):
    def weight() -> int:
        return int((group.dirs["cpu"] / ("cpu.weight" if group.v2 else "cpu.shares")).read_text())

    fresh = weight()
    group.set_cpu_weight(3)
    assert weight() == 3 * fresh
    group.set_cpu_weight(1e6)  # a browser serving more sessions than the kernel can weigh: its maximum
    assert weight() == (10000 if group.v2 else 262144)
    group.set_cpu_weight(1)
    assert weight() == fresh
