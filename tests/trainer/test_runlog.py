"""Run logs across a resume: steps past the last checkpoint are rolled back, once, without losing rows."""

from __future__ import annotations

import json
import time

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mintgym.trainer.runlog import RunLogger


def _log_steps(out, steps, start_step=0, value=0.0):
    logger = RunLogger(out, ["web"], start_step=start_step)
    for step in steps:
        logger.write(step, {"reward/mean": value + step, "reward/web": value + step})
    logger.close()
    return logger


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_resume_moves_steps_past_the_checkpoint_aside_and_purges_them_from_tensorboard(tmp_path):
    _log_steps(tmp_path, range(1, 18))                       # interrupted at step 17, checkpoint at 16
    (tmp_path / "metrics.jsonl").open("a").write('{"step": 18, "rew')  # a row cut short by a kill
    # TensorBoard reads event files in name order (a seconds timestamp, then a per-process counter): a real
    # resume is a later process; here the second writer must start in a later second to sort after the first
    time.sleep(1.05 - time.time() % 1)
    logger = _log_steps(tmp_path, range(17, 21), start_step=16, value=100.0)

    assert logger.rolled_back == 2
    rows = _rows(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 21))
    assert rows[16]["reward/mean"] == 117.0                  # step 17 from the resumed run
    aside = (tmp_path / "metrics.rolled_back.jsonl").read_text().splitlines()
    assert json.loads(aside[0]) == {"step": 17, "reward/mean": 17.0, "reward/web": 17.0}
    assert aside[1] == '{"step": 18, "rew'

    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    scalars = [(e.step, e.value) for e in events.Scalars("reward/mean")]
    assert [s for s, _ in scalars] == list(range(1, 21))
    assert dict(scalars)[17] == 117.0

    logger.plot(tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_resumed_at_its_last_logged_step_moves_nothing(tmp_path):
    _log_steps(tmp_path, range(1, 9))
    logger = _log_steps(tmp_path, range(9, 11), start_step=8)
    assert logger.rolled_back == 0
    assert not (tmp_path / "metrics.rolled_back.jsonl").exists()
    assert [r["step"] for r in _rows(tmp_path / "metrics.jsonl")] == list(range(1, 11))
