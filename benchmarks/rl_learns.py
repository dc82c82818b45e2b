"""Does RL, not imitation, do the learning? Runs the RL-beyond-imitation config (and its multi-turn variant) as a
user would (``mintgym train --config ... --out ...``), per training seed, with its two ablations, prints the
table and exits 1 when RL's gain falls under the bar.

For each training seed (``train.seed``) of ``--config`` (default examples/rl_beyond_imitation.yaml):

- the run itself: its held-out curve's step-0 point (``eval/mean`` at step 0 of ``metrics.jsonl``: the warm
  start alone, measured in the same run) and its final greedy eval on every held-out seed (``final_eval.json``);
  it must end at ``--final`` or more, ``--gain`` or more above its warm start, within ``--minutes``;
- the image-blanked ablation (``agent.options.blind=true``): must stay at the blind level (``--blind-max``);
- the RL-free ablation (``train.lr=0``: the same run whose RL steps move no weight): must stay at the warm
  start's level (its final eval at most ``--gain`` / 2 above its own step-0 point).

Then the multi-turn config (``--multi-turn``, default examples/rl_multi_turn.yaml; ``--multi-turn ''`` skips it)
on the first seed: its final eval must be ``--multi-gain`` or more above its step-0 point (a config that is not
there fails the benchmark: the issue asks for one).

    .venv/bin/python benchmarks/rl_learns.py [--seeds 0,1,2] [--out /tmp/rl-learns] [--no-ablations]

Runs already finished in ``--out`` are read, not run again (delete the folder to rerun). An ablation starts from
its seed's demonstrations (the teacher's episodes in ``<run>/warm_start/demos-*``, hard-linked): the same teacher
on the same seeds plays the same episodes, so each ablation pays for its own export, supervised steps and RL only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Outcome:
    """One run's numbers: its warm start (held-out curve at step 0), its final eval, its wall time."""

    name: str
    start: float
    final: float
    seconds: float
    curve: list[tuple[int, float]]

    @property
    def gain(self) -> float:
        return self.final - self.start


def read_run(name: str, out: Path, seconds: float) -> Outcome:
    """The numbers of the finished run in ``out`` (needs ``eval.every`` and ``eval.groups`` in its config)."""
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    curve = [(int(r["step"]), float(r["eval/mean"])) for r in rows if "eval/mean" in r]
    if not curve or curve[0][0] != 0:
        raise SystemExit(f"{out}: no held-out point at step 0 in metrics.jsonl (the config needs eval.every > 0)")
    final = json.loads((out / "final_eval.json").read_text())
    rewards = [d["mean_reward"] for d in final["domains"].values()]
    return Outcome(name, curve[0][1], sum(rewards) / len(rewards), seconds, curve)


def train(config: Path, out: Path, overrides: list[str], log: Path) -> Outcome:
    """``mintgym train --config config --out out *overrides``, or the finished run already in ``out``."""
    timing = out / "wall_seconds"
    if (out / "final_eval.json").is_file() and timing.is_file():
        return read_run(out.name, out, float(timing.read_text()))
    command = [sys.executable, "-m", "mintgym.cli", "train", "--config", str(config), "--out", str(out), *overrides]
    print("$ " + " ".join(command[2:]), flush=True)
    started = time.monotonic()
    with log.open("w") as sink:
        code = subprocess.run(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - started
    if code != 0:
        tail = log.read_text().splitlines()[-5:]
        raise SystemExit(f"{out.name}: mintgym train exited {code}:\n  " + "\n  ".join(tail))
    timing.write_text(f"{seconds:.1f}")
    return read_run(out.name, out, seconds)


def share_demonstrations(source: Path, out: Path) -> None:
    """Start the ablation folder ``out`` with the teacher's episodes of the finished run ``source`` (hard links)
    and its record (a run folder without a checkpoint takes the ablation's config over it)."""
    demonstrations = [d for d in (source / "warm_start").glob("*") if d.is_dir() and d.name != "dataset"]
    if out.exists() or not demonstrations or not (source / "config.json").is_file():
        return
    (out / "warm_start").mkdir(parents=True)
    shutil.copy(source / "config.json", out / "config.json")
    for folder in demonstrations:
        shutil.copytree(folder, out / "warm_start" / folder.name, copy_function=os.link)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{round(seconds % 60):02d}s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "examples/rl_beyond_imitation.yaml")
    parser.add_argument("--multi-turn", default=str(REPO / "examples/rl_multi_turn.yaml"),
                        help="the multi-turn config ('' skips it)")
    parser.add_argument("--seeds", default="0,1,2", help="training seeds (train.seed), comma-separated")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rl-learns"))
    parser.add_argument("--no-ablations", action="store_true", help="skip the blind and RL-free runs")
    parser.add_argument("--final", type=float, default=0.85, help="the least final held-out score")
    parser.add_argument("--gain", type=float, default=0.35, help="the least gain over the warm start")
    parser.add_argument("--blind-max", type=float, default=0.35,
                        help="the most the image-blanked run may score (blind level 1/4, plus noise)")
    parser.add_argument("--multi-gain", type=float, default=0.3, help="the multi-turn run's least gain")
    parser.add_argument("--minutes", type=float, default=15.0, help="the most wall time a run may take")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []

    def run(name: str, config: Path, overrides: list[str]) -> Outcome:
        return train(config, args.out / name, overrides, args.out / f"{name}.log")

    print(f"{'seed':>4}  {'warm start':>10}  {'final':>6}  {'gain':>6}  {'wall':>7}  {'blind':>6}  "
          f"{'RL-free':>7}  curve (step: held-out)")
    for seed in seeds:
        main_run = run(f"seed{seed}", args.config, [f"train.seed={seed}"])
        blind = free = None
        if not args.no_ablations:
            for ablation in ("blind", "rl-free"):
                share_demonstrations(args.out / f"seed{seed}", args.out / f"seed{seed}-{ablation}")
            blind = run(f"seed{seed}-blind", args.config, [f"train.seed={seed}", "agent.options.blind=true"])
            free = run(f"seed{seed}-rl-free", args.config, [f"train.seed={seed}", "train.lr=0"])
        curve = " ".join(f"{step}:{score:.2f}" for step, score in main_run.curve)
        print(f"{seed:>4}  {main_run.start:>10.3f}  {main_run.final:>6.3f}  {main_run.gain:>+6.3f}  "
              f"{minutes(main_run.seconds):>7}  {blind.final if blind else math.nan:>6.3f}  "
              f"{free.final if free else math.nan:>7.3f}  {curve}", flush=True)
        if main_run.final < args.final or main_run.gain < args.gain:
            failures.append(f"seed {seed}: final {main_run.final:.3f} (bar {args.final}), gain {main_run.gain:+.3f} "
                            f"(bar {args.gain})")
        if main_run.seconds > args.minutes * 60:
            failures.append(f"seed {seed}: {minutes(main_run.seconds)}, over {args.minutes:g} minutes")
        if blind and blind.final > args.blind_max:
            failures.append(f"seed {seed}: the image-blanked run scored {blind.final:.3f} > {args.blind_max}")
        if free and free.final > free.start + args.gain / 2:
            failures.append(f"seed {seed}: the RL-free run rose {free.gain:+.3f} over its warm start without RL")
    if args.multi_turn and not Path(args.multi_turn).is_file():
        failures.append(f"multi-turn: no config at {args.multi_turn} (--multi-turn '' skips it)")
    elif args.multi_turn:
        multi = run(f"multi-turn-seed{seeds[0]}", Path(args.multi_turn), [f"train.seed={seeds[0]}"])
        curve = " ".join(f"{step}:{score:.2f}" for step, score in multi.curve)
        print(f"multi-turn seed {seeds[0]}: start {multi.start:.3f} final {multi.final:.3f} gain {multi.gain:+.3f} "
              f"in {minutes(multi.seconds)}; curve {curve}")
        if multi.gain < args.multi_gain:
            failures.append(f"multi-turn: gain {multi.gain:+.3f} under {args.multi_gain}")
        if multi.seconds > args.minutes * 60:
            failures.append(f"multi-turn: {minutes(multi.seconds)}, over {args.minutes:g} minutes")
    for failure in failures:
        print("FAIL " + failure)
    print("RL earns its keep" if not failures else f"{len(failures)} check(s) under the bar")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
