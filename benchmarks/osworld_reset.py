"""Reset + setup time of every OSWorld task that runs here, per app, beside how OSWorld resets.

A MintGym reset of an OSWorld task kills the session's processes, lays its home directory down again,
restarts the window manager and runs the task's config steps (opening files, launching apps, waiting
for their windows). Each runnable task is reset ``--repeats`` times through a local env server (the
default backend, what ``mintgym.make`` starts) on one session; the table gives the median and p95 per
app and over all.

OSWorld resets by reverting a virtual machine: ``DesktopEnv.reset`` calls the provider's
``revert_to_snapshot`` and then starts the emulator again before running the same config steps. From
the ``desktop-env`` package's own code (providers/vmware/provider.py, providers/docker/provider.py):
the VMware provider sleeps ``WAIT_TIME = 3`` s after the revert command alone, and the Docker provider
stops the VM's container and boots it again, polling the VM's server every ``RETRY_INTERVAL = 1`` s up to
300 s. The revert is therefore at least 3 s before any config step runs, and a reboot on Docker.

Run:  .venv/bin/python benchmarks/osworld_reset.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import mintgym
from mintgym.env import registration

OSWORLD_REVERT_FLOOR_S = 3.0  # desktop_env/providers/vmware/provider.py: WAIT_TIME after the revert


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runnable = [t for t in registration.tasks(prefix="osworld/") if t.unavailable() is None]
    if not runnable:
        raise SystemExit("no runnable OSWorld task here (is the shared data present? see `mintgym tasks osworld`)")
    env = mintgym.make(runnable[0].id)
    times: dict[str, list[float]] = {}
    failures: list[str] = []
    try:
        for task in runnable:
            app = task.id.split("/")[1]
            for _ in range(args.repeats):
                started = time.perf_counter()
                try:
                    env.reset(seed=0, options={"task_id": task.id})
                except Exception as err:  # reported below; a failed reset is a finding, not a crash
                    failures.append(f"{task.id}: {err}")
                    break
                times.setdefault(app, []).append(time.perf_counter() - started)
    finally:
        env.close()
    everything = [t for values in times.values() for t in values]
    print(f"{len(runnable)} runnable OSWorld tasks, {args.repeats} resets each, one session, local env server\n")
    print(f"{'app':22s} {'resets':>6s} {'median s':>9s} {'p95 s':>7s}   OSWorld (VM revert, before config steps)")
    for app, values in sorted(times.items()):
        print(f"{app:22s} {len(values):6d} {statistics.median(values):9.2f} {pct(values, 0.95):7.2f}   "
              f">= {OSWORLD_REVERT_FLOOR_S:.0f} s revert + emulator start")
    print(f"{'all':22s} {len(everything):6d} {statistics.median(everything):9.2f} {pct(everything, 0.95):7.2f}   "
          f">= {OSWORLD_REVERT_FLOOR_S:.0f} s revert + emulator start")
    for failure in failures:
        print(f"reset failed: {failure}")


if __name__ == "__main__":
    main()
