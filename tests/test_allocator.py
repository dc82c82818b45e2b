"""tune_malloc: applied once, yields to the user's MALLOC_* settings, and stops the per-frame page faults.

Each case runs in a fresh interpreter: glibc's thresholds are process-wide and cannot be un-set.
"""

import json
import os
import subprocess
import sys

import pytest

PROBE = r"""
import json, resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from mintgym.allocator import tune_malloc
    first, again = tune_malloc(), tune_malloc()
    assert first is again
    applied = first.applied
else:
    applied = {}
def step():  # what a step does to memory: a frame-sized buffer made, copied, dropped
    frame = np.ones((720, 1280, 3), dtype=np.uint8)
    data = frame.tobytes()
    del frame, data
for _ in range(5):
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(json.dumps({"applied": applied, "faults_per_step": faults / 20}))
"""


def probe(mode: str, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=60,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


glibc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")


@glibc
def test_tuning_stops_page_faulting_every_frame_back_in():
    default, tuned = probe("default"), probe("tuned")
    assert set(tuned["applied"]) == {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}
    frame_pages = 720 * 1280 * 3 // 4096
    assert default["faults_per_step"] > frame_pages  # each step maps its buffers afresh
    assert tuned["faults_per_step"] < frame_pages / 20  # the freed heap is reused


@glibc
def test_an_explicit_environment_setting_wins():
    result = probe("tuned", MALLOC_TRIM_THRESHOLD_="131072")
    assert set(result["applied"]) == {"MALLOC_MMAP_THRESHOLD_"}


def test_keep_default_malloc_makes_tuning_a_no_op():
    out = subprocess.run([sys.executable, "-c", "from mintgym.allocator import keep_default_malloc, tune_malloc\n"
                          "keep_default_malloc(); print(tune_malloc().applied)"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{}"
