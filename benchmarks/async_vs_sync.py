"""Async vs sync RL throughput, and (``--lag-study``) how the lag bound and the correction affect reward.

Throughput: the quickstart's tiny policy on its tasks (``pytool/count-shapes-0`` and, in real Chromium,
``miniwob/click-test``), each env step taking a realistic, varying time (a lognormal delay per step on
the worker, mean ``--step-seconds``, sigma ``--step-sigma``, on top of the envs' own tens of
milliseconds; a missed click is followed by a ``done`` step, which waits too). For sync mode and for
async mode at each ``--lags`` value it runs warm-up steps and then ``--steps`` timed trainer steps, and
reports samples/s and train steps/s over the timed steps, where the trainer's step time went (waiting for
the batch, training), the buffer's admission denials, stale drops and the lags the batches were trained
at, then the async/sync ratios side by side.

Warm-up: the first step holds the start (the workers' env pools and model, about a minute), and at
``max_lag`` L the workers meanwhile play groups for up to L + 1 batches at version 0; the steps after it
eat that stock and run short. So the timed steps of lag L begin after step L + 1 (sync: after step 1),
when the stock made during the start is gone: the steady rate. The same run also prints the figures of
steps 2 to ``--steps`` (the window earlier versions of this script timed, start stock included) beside
them.

Beside each lag L it prints the ceiling no steady schedule can pass at that lag: a batch's samples were
answered by weights published L + 1 steps before the batch is trained, and each batch waits for its
slowest sample's episode to end after its first model answer, so the step period is at least the mean of
that wait (F, measured over the timed steps) over L + 1, and async/sync is at most (L + 1) x (sync's step
period) / F.

    .venv/bin/python benchmarks/async_vs_sync.py                 # throughput, about 12 minutes on an idle 2-core box
    .venv/bin/python benchmarks/async_vs_sync.py --lag-study     # final reward per (lag, correction); ~40 min

Numbers depend on the machine; on a shared 2-core box run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def base_config(steps: int) -> dict:
    import yaml

    cfg = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    cfg["train"].update({"steps": steps, "checkpoint_every": 0})
    cfg["eval"] = {"groups": 0}
    cfg["log"] = {"sample_episodes_every": 0}  # nothing but the loop in the timings
    return cfg


def warmup_steps(mode: str, lag: int) -> int:
    """Steps before the timed ones: the start, and at lag L the L further batches the workers could fill
    with version-0 groups while it lasted."""
    return 1 if mode == "sync" else lag + 1


def window(history: list[dict]) -> dict:
    """samples/s, steps/s and the step's parts over ``history`` (a run's steps in one window)."""
    seconds = sum(m["time/step"] for m in history)
    return {"steps": len(history), "samples_per_s": sum(m["samples"] for m in history) / seconds,
            "steps_per_s": len(history) / seconds,
            "wait_s": statistics.mean(m["time/wait_batch"] for m in history),
            "train_s": statistics.mean(m["time/train"] for m in history),
            "mean_lag": statistics.mean(m["lag/mean"] for m in history),
            "after_answer_max_s": statistics.mean(m.get("time/after_answer_max", float("nan")) for m in history)}


def throughput(args) -> list[dict]:
    from mintgym.config import RunConfig
    from mintgym.rl import train

    rows = []
    for mode, lag in [("sync", 0)] + [("async", lag) for lag in args.lags]:
        warmup = warmup_steps(mode, lag)
        raw = base_config(warmup + args.steps)
        raw["rollout"].update({"simulated_step_seconds": [args.step_seconds, args.step_sigma],
                               "groups_in_flight": args.groups_in_flight})
        raw["train"].update({"mode": mode, "max_lag": lag, "mismatch_snapshots": 0})
        cfg = RunConfig.from_dict(raw)
        with tempfile.TemporaryDirectory(prefix="mintgym-bench-") as out:
            result = train(cfg, out, log=lambda s: None)
        counts = result.buffer["counts"]
        row = {"mode": mode, "max_lag": lag if mode == "async" else None, "warmup_steps": warmup,
               **window(result.history[warmup:]),
               "from_step_2": window(result.history[1:args.steps]),
               "step_s": [m["time/step"] for m in result.history],
               "consumed_lags": result.buffer.get("consumed_lags", {}),
               "admitted": counts["admitted"], "denied": counts["denied"],
               "dropped_stale": sum(d["dropped_stale"] for d in result.buffer["domains"].values()),
               "run_s": result.seconds}
        rows.append(row)
        print(f"{mode:5s} max_lag={row['max_lag']!s:4s} samples/s={row['samples_per_s']:6.2f} "
              f"steps/s={row['steps_per_s']:.3f} over steps {warmup + 1}-{warmup + args.steps} (per step: "
              f"{row['wait_s']:.1f} s waiting for the batch, {row['train_s']:.1f} s training) mean lag="
              f"{row['mean_lag']:.2f} admitted={row['admitted']} denied={row['denied']} stale drops="
              f"{row['dropped_stale']} slowest sample after its answer {row['after_answer_max_s']:.1f} s run "
              f"{row['run_s']:.0f} s; step times " + " ".join(f"{t:.1f}" for t in row["step_s"]), flush=True)
    sync = rows[0]
    for row in rows[1:]:
        row["ceiling"] = lag_ceiling(row["max_lag"], 1 / sync["steps_per_s"], row["after_answer_max_s"])
    print(f"\n{'mode':16s} {'timed steps':>11s} {'samples/s':>9s} {'x sync':>7s} {'mean lag':>8s} "
          f"{'stale drops':>11s} {'F (s)':>6s} {'ceiling':>8s} | {'steps 2-' + str(args.steps):>10s} {'x sync':>7s}")
    for row in rows:
        name = "sync" if row["mode"] == "sync" else f"async max_lag {row['max_lag']}"
        ceiling = f"{row['ceiling']:7.2f}x" if "ceiling" in row else f"{'-':>8s}"
        early = row["from_step_2"]
        timed = f"{row['warmup_steps'] + 1}-{row['warmup_steps'] + args.steps}"
        print(f"{name:16s} {timed:>11s} {row['samples_per_s']:9.2f} "
              f"{row['samples_per_s'] / sync['samples_per_s']:6.2f}x "
              f"{row['mean_lag']:8.2f} {row['dropped_stale']:11d} {row['after_answer_max_s']:6.1f} {ceiling} | "
              f"{early['samples_per_s']:10.2f} {early['samples_per_s'] / sync['from_step_2']['samples_per_s']:6.2f}x")
    print("timed steps: after the warm-up (sync: the start; lag L: the start and the L batches its version-0 groups "
          "could fill); F: a batch's wait from its slowest sample's first model answer to that episode's end (mean "
          "over the timed steps); ceiling: (max_lag + 1) x sync's step period / F, the most a steady schedule "
          f"reaches at that lag; steps 2-{args.steps}: the window this script timed before, the start's stock "
          "included")
    return rows


def lag_ceiling(max_lag: int, sync_period: float, after_answer: float) -> float:
    """The most async at ``max_lag`` can gain over sync (steps/s): a batch holds samples answered by weights
    published ``max_lag`` + 1 steps earlier and cannot be full before its slowest sample's episode has ended,
    ``after_answer`` seconds after that answer on average, so a step takes at least after_answer /
    (max_lag + 1)."""
    return (max_lag + 1) * sync_period / after_answer


def lag_study(args) -> list[dict]:
    """Every sample at exactly lag L: ``max_lag`` L and ``publish_delay`` L (the samplers get the weights
    of L versions ago), so the bound is reached by every batch, not only in a straggler's tail. The final
    reward is the final weights' own (``eval.groups`` groups per task after the last step), since with
    delayed weights the last batches' rewards are those of weights L versions older."""
    from mintgym.config import RunConfig
    from mintgym.rl import train

    rows = []
    for correction in args.corrections:
        for lag in args.study_lags:
            raw = base_config(args.study_steps)
            raw["train"].update({"mode": "async", "max_lag": lag, "publish_delay": lag, "correction": correction,
                                 "mismatch_snapshots": 0, "seed": args.seed})
            raw["eval"] = {"groups": args.eval_groups}
            if args.keep:
                out = args.keep / f"{correction}-lag{lag}"
                shutil.rmtree(out, ignore_errors=True)
                result = train(RunConfig.from_dict(raw), out, log=lambda s: None)
            else:
                with tempfile.TemporaryDirectory(prefix="mintgym-lag-") as out:
                    result = train(RunConfig.from_dict(raw), out, log=lambda s: None)
            final = result.final_eval["domains"]
            batches = {d: (_domain_mean(result.history[:5], d), _domain_mean(result.history[-5:], d)) for d in final}
            row = {"correction": correction, "max_lag": lag, "first": result.mean_reward(True, 5),
                   "last_batches": result.mean_reward(False, 5), "batches_per_domain": batches,
                   "final": {d: v["mean_reward"] for d, v in final.items()},
                   "final_episodes": {d: v["episodes"] for d, v in final.items()},
                   "mean_lag": statistics.mean(m["lag/mean"] for m in result.history),
                   "max_ratio": max(m.get("is/ratio_max", float("nan")) for m in result.history),
                   "seconds": result.seconds}
            rows.append(row)
            finals = " ".join(f"{d} {r:.2f}" for d, r in row["final"].items())
            seen = " ".join(f"{d} {a:.2f}->{b:.2f}" for d, (a, b) in batches.items())
            print(f"{correction:20s} lag={lag:3d}  final weights: {finals}  (batches, first 5 -> last 5: {seen}; "
                  f"mean lag {row['mean_lag']:.1f}; max IS ratio {row['max_ratio']:.2f}; {row['seconds']:.0f} s)",
                  flush=True)
    return rows


def _domain_mean(history: list[dict], domain: str) -> float:
    values = [m[f"reward/{domain}"] for m in history if f"reward/{domain}" in m]
    return statistics.mean(values) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="timed steps, after the warm-up")
    parser.add_argument("--lags", type=int, nargs="+", default=[1, 2, 4, 16])
    parser.add_argument("--step-seconds", type=float, default=2.0)
    parser.add_argument("--step-sigma", type=float, default=0.5)
    parser.add_argument("--groups-in-flight", type=int, default=8,
                        help="per domain; each domain's env pool holds this many groups' sessions (8: 128)")
    parser.add_argument("--lag-study", action="store_true")
    parser.add_argument("--study-lags", type=int, nargs="+", default=[0, 4, 16, 64])
    parser.add_argument("--corrections", nargs="+", default=["unclipped_token_is", "none"])
    parser.add_argument("--study-steps", type=int, default=48)
    parser.add_argument("--eval-groups", type=int, default=4,
                        help="lag study: groups per task played by the final weights")
    parser.add_argument("--seed", type=int, default=0, help="lag study: train.seed")
    parser.add_argument("--keep", type=Path, help="lag study: keep each run's folder (logs, curve) under here")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    started = time.monotonic()
    try:
        rows = lag_study(args) if args.lag_study else throughput(args)
    finally:
        ray.shutdown()
    print(f"benchmark took {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    sys.exit(main())
