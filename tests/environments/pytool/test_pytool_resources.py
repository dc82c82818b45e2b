"""The pytool sandbox's control group, disk quota and seccomp filter: made, used, accounted and cleaned up."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from mintgym.action_spaces import Python
from mintgym.environments.isolation import mounts
from mintgym.environments.pytool import seccomp
from mintgym.environments.pytool.host import PytoolHost
from mintgym.environments.pytool.sandbox import probe_isolation

ISOLATION = probe_isolation()
needs_cgroup = pytest.mark.skipif(ISOLATION.resources != "cgroup",
                                  reason=f"needs namespaces and control groups: {ISOLATION.cgroup_reason}")


@pytest.fixture
async def host():
    h = PytoolHost(cpu_seconds=3, wall_seconds=30, memory_mb=256, disk_mb=8)
    await h.start()
    yield h
    await h.stop()


@needs_cgroup
async def test_group_and_quota_exist_while_the_session_lives(host):
    env = await host.create({})
    group = env.sandbox.cgroup
    assert group is not None and env.sandbox.worker_pid in group.pids()
    assert env.workdir in mounts.mounts_under(env.root)
    assert env.describe()["sandbox"]["resources"] == "cgroup"
    await env.close()
    assert not any(d.exists() for d in group.dirs.values())
    assert mounts.mounts_under(env.root) == [] and not env.root.exists()


@needs_cgroup
async def test_cpu_time_is_accounted_to_the_session(host):
    env = await host.create({})
    try:
        await env.execute(Python(code="import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n"
                                      "    pass"))
        used = env.step_info()["sandbox_cpu_seconds"]
        assert 0.45 <= used < 3.0, used
    finally:
        await env.close()


@needs_cgroup
async def test_memory_limit_counts_the_whole_sandbox(host):
    env = await host.create({})
    try:
        group = env.sandbox.cgroup
        await env.execute(Python(code="import os\nfds = []\nfor _ in range(24):\n    fd = os.memfd_create('m')\n"
                                      "    os.write(fd, b'x' * (16 * 2**20))\n    fds.append(fd)"))
        assert group.memory_peak() <= 256 * 2**20
        assert env.last_result.restarted or "MemoryError" in env.last_output or "No space" in env.last_output \
            or "Cannot allocate" in env.last_output, env.last_output
        await env.execute(Python(code="print(3 * 3)"))
        assert env.last_output.strip() == "9"
    finally:
        await env.close()


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_filter_is_well_formed(machine):
    program = seccomp.build_filter(machine)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    code, _, _, k = struct.unpack("=HBBI", program[-8:])
    assert code == 0x06 and k == seccomp.RET_ALLOW  # the default is allow: only the listed calls are refused


def test_seccomp_refuses_unknown_machines():
    with pytest.raises(ValueError, match="no seccomp filter for machine 'sparc'"):
        seccomp.build_filter("sparc")


@pytest.mark.skipif(ISOLATION.level != "namespace", reason="needs root and bubblewrap namespaces")
async def test_mintgym_source_is_hidden_even_when_installed_beside_python(monkeypatch):
    """A non-editable install puts the task generators in site-packages, which the sandbox binds: they are
    covered by an empty tmpfs. Here the repository root stands in for site-packages; in a clone under a 0700
    folder the sandbox's user cannot even enter it (PermissionError), which hides them too, so the test reads
    the sandbox's own mount table for the tmpfs."""
    from mintgym.environments.pytool import sandbox

    repo = str(Path(sandbox.__file__).resolve().parents[2])
    real_roots = sandbox._python_roots
    monkeypatch.setattr(sandbox, "_python_roots", lambda: real_roots() + [repo])
    h = PytoolHost(cpu_seconds=3, wall_seconds=30)
    await h.start()
    env = await h.create({})
    try:
        code = (f"import os\nrepo = {repo!r}\n"
                "def listing(path):\n"
                "    try:\n        return os.listdir(path)\n"
                "    except PermissionError:\n        return 'denied'\n"
                "print(os.path.isdir(repo))\n"
                "print(listing(repo + '/environments'), listing(repo + '/mintgym'))\n"
                "print(os.path.exists(repo + '/environments/pytool/generators.py'))\n"
                "kinds = {line.split()[4]: line.split(' - ')[1].split()[0] for line in open('/proc/self/mountinfo')}\n"
                "print(kinds.get(repo + '/environments'), kinds.get(repo + '/mintgym'))\n")
        await env.execute(Python(code=code))
        lines = env.last_output.splitlines()
        assert lines[0] == "True" and lines[1] in ("[] []", "denied denied"), env.last_output
        assert lines[2:4] == ["False", "tmpfs tmpfs"], env.last_output
    finally:
        await env.close()
        await h.stop()
