"""The web host's Chromium runs in a control group weighted by the sessions it serves (as root, with groups)."""

from __future__ import annotations

import psutil
import pytest

from mintgym.environments.isolation import cgroups

pytestmark = [pytest.mark.web, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(bool(cgroups.probe()[0]), reason=f"no control groups here: {cgroups.probe()[0]}")]


def cpu_weight(group: cgroups.Cgroup) -> float:
    """The group's CPU weight in sessions (fresh groups weigh 1)."""
    if group.v2:
        return int((group.dirs["cpu"] / "cpu.weight").read_text()) / 100
    return int((group.dirs["cpu"] / "cpu.shares").read_text()) / 1024


async def test_chromium_runs_in_a_group_weighted_by_the_sessions_it_serves(host):
    group = host._cgroup
    assert group is not None
    members = set(group.pids())
    chromium = [p for p in psutil.process_iter(["name", "pid"]) if p.info["name"] == "chromium" and p.pid in members]
    assert chromium, "Chromium's processes are not in the host's group"
    assert cpu_weight(group) == max(1, host.session_count)
    sessions = [await host.create({}) for _ in range(3)]
    try:
        assert cpu_weight(group) == host.session_count >= 3
        renderers = set(group.pids()) - members  # the sessions' renderers are Chromium's children: members too
        assert renderers and all(psutil.Process(pid).name() == "chromium" for pid in renderers)
    finally:
        for env in sessions:
            await env.close()
    assert cpu_weight(group) == max(1, host.session_count)


async def test_the_group_is_removed_with_the_host():
    from mintgym.environments.web.host import WebHost

    own = WebHost()
    await own.start()
    folder = own._cgroup.dirs["core"]
    assert folder.exists()
    await own.stop()
    assert not folder.exists() and own._cgroup is None
