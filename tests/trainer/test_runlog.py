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


def test_progress_line_shows_elapsed_time_and_eta(tmp_path):
    from mintgym.trainer.runlog import clock

    logger = RunLogger(tmp_path, ["web"])
    line = logger.progress(3, 10, {"reward/mean": 0.5, "reward/web": 0.5}, elapsed=125.0, eta=7 * 41.6)
    logger.close()
    assert line.startswith("step 3/10 [2m05s elapsed, ETA 4m51s] reward 0.500 [web=0.50]"), line
    assert [clock(s) for s in (0.4, 59.6, 3600 * 2 + 61, float("nan"))] == ["0s", "1m00s", "2h01m", "?"]


def test_progress_line_says_when_nothing_was_measured_or_learnt(tmp_path):
    """A batch with no turn at the trainer's weights has no mismatch (it printed ``nan``); a step without
    learning signal says the weights were kept."""
    logger = RunLogger(tmp_path, ["web"])
    lagged = logger.progress(2, 4, {"reward/mean": 1.0, "loss": 0.0, "optimizer/skipped_no_signal": 1.0})
    fresh = logger.progress(3, 4, {"reward/mean": 0.5, "loss": -0.1, "mismatch/max_abs": 0.0,
                                   "mismatch/tokens": 12.0, "optimizer/skipped_no_signal": 0.0})
    logger.close()
    assert " mismatch n/a " in lagged and lagged.endswith("loss +0.0000 (no signal: weights kept)"), lagged
    assert " mismatch 0.00e+00 " in fresh and fresh.endswith("loss -0.1000"), fresh


def _wandb_history(run_file):
    """The logged rows of an offline W&B run file: a LevelDB-style log (32 KiB blocks of CRC-framed chunks)
    of ``Record`` protobufs after a 7-byte ``:W&B`` header."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data, pos, chunk, rows = run_file.read_bytes(), 7, b"", []
    assert data.startswith(b":W&B")
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a chunk header is padding
            pos += 32768 - pos % 32768
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        chunk += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(chunk)
            chunk = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in record.history.item})
    return rows


def test_wandb_offline_run_holds_the_metrics_and_a_resume_continues_it(tmp_path, monkeypatch):
    pytest = __import__("pytest")
    pytest.importorskip("wandb")
    from mintgym.config import WandbConfig

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))
    cfg = WandbConfig(enabled=True, project="mintgym-test")
    for steps in ([1, 2], [3]):  # a run, then its resume
        logger = RunLogger(tmp_path, ["web"], start_step=steps[0] - 1, wandb=cfg, config={"train": {"lr": 0.5}})
        for step in steps:
            logger.write(step, {"reward/mean": 0.25 * step, "loss": -float(step), "reward/web": float("nan")})
        logger.close()
    runs = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 2
    run_id = (tmp_path / "wandb_run_id").read_text()
    assert all(r.name.endswith(run_id) for r in runs)  # the resume logged into the same W&B run
    deadline = time.monotonic() + 30
    while True:  # wandb's service process writes the run file a moment after finish() returns
        rows = [row for r in runs for row in _wandb_history(next(r.glob("run-*.wandb")))]
        if len(rows) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [(r["_step"], r["reward/mean"], r["loss"]) for r in rows] == [(1, 0.25, -1), (2, 0.5, -2), (3, 0.75, -3)]


def test_progress_line_shows_the_fraction_of_tokens_whose_ratio_was_capped(tmp_path):
    logger = RunLogger(tmp_path, ["web"])
    line = logger.progress(1, 4, {"reward/mean": 0.5, "mismatch/max_abs": 0.25, "mismatch/tokens": 40.0,
                                  "is/capped_fraction": 0.025})
    logger.close()
    assert " mismatch 2.50e-01 capped 2.5% " in line, line
