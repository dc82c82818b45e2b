"""Layer 6: run logs: TensorBoard scalars, ``metrics.jsonl``, optionally Weights & Biases, the progress line
(with elapsed time and ETA) and the reward curve PNG."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

from mintgym.errors import MintGymError

#: Holds the W&B run id, so a resumed run logs into the same W&B run.
WANDB_ID_FILE = "wandb_run_id"


def clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    if math.isnan(seconds) or math.isinf(seconds):
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class RunLogger:
    """Logs of a run that starts (or resumes) after ``start_step``.

    Steps logged after ``start_step`` by an earlier call (a run interrupted past its last checkpoint) were
    rolled back with the weights: their ``metrics.jsonl`` rows move to ``metrics.rolled_back.jsonl`` and
    TensorBoard purges their events, so each step appears once in the logs and the curve.
    """

    def __init__(self, out: Path, domains: list[str], start_step: int = 0, wandb: Any = None,
                 config: dict[str, Any] | None = None):
        """``wandb``: a :class:`mintgym.config.WandbConfig`; when enabled every step also goes to W&B
        (``config``: the run config it records)."""
        from torch.utils.tensorboard import SummaryWriter

        self.out = Path(out)
        self.domains = domains
        self.wandb = _start_wandb(self.out, wandb, config) if wandb is not None and wandb.enabled else None
        self.rolled_back = self._roll_back(start_step)
        self.tb = SummaryWriter(str(self.out / "tb"), purge_step=start_step + 1 if self.rolled_back else None)
        self.jsonl = open(self.out / "metrics.jsonl", "a")

    def _roll_back(self, start_step: int) -> int:
        """Move rows of steps after ``start_step`` (and unreadable rows) out of ``metrics.jsonl``."""
        path = self.out / "metrics.jsonl"
        if not path.exists():
            return 0
        keep, moved = [], []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                step = int(json.loads(line)["step"])
            except (ValueError, KeyError, TypeError):
                step = None  # e.g. a row cut short by a kill mid-write: kept aside, not parsed
            (keep if step is not None and step <= start_step else moved).append(line)
        if moved:
            with open(self.out / "metrics.rolled_back.jsonl", "a") as f:
                f.write("".join(line + "\n" for line in moved))
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(line + "\n" for line in keep))
            tmp.replace(path)
        return len(moved)

    def write(self, step: int, metrics: dict[str, float]) -> None:
        for k, v in metrics.items():
            if isinstance(v, (int, float)) and not math.isnan(v):
                self.tb.add_scalar(k, v, step)
        self.jsonl.write(json.dumps({"step": step, **metrics}) + "\n")
        self.jsonl.flush()
        if self.wandb is not None:
            self.wandb.log({k: v for k, v in metrics.items() if isinstance(v, (int, float))}, step=step)

    def progress(self, step: int, total: int, m: dict[str, float], elapsed: float | None = None,
                 eta: float | None = None) -> str:
        """The console line of a step; ``elapsed`` (seconds since the run started) and ``eta`` (seconds left)
        when given."""
        rewards = " ".join(f"{d}={m[f'reward/{d}']:.2f}" for d in self.domains if f"reward/{d}" in m)
        timing = "" if elapsed is None else f" [{clock(elapsed)} elapsed" + (
            f", ETA {clock(eta)}]" if eta is not None else "]")
        # Measured on turns sampled with the trainer's own weights (or kept snapshots): none in a batch, none shown.
        mismatch = f"{m['mismatch/max_abs']:.2e}" if m.get("mismatch/tokens") else "n/a"
        if "is/capped_fraction" in m:  # tokens whose IS ratio exceeded train.is_cap (truncated_is caps them)
            mismatch += f" capped {m['is/capped_fraction']:.1%}"
        kept = " (no signal: weights kept)" if m.get("optimizer/skipped_no_signal") else ""
        return (f"step {step}/{total}{timing} reward {m.get('reward/mean', float('nan')):.3f} [{rewards}] "
                f"lag {m.get('lag/mean', 0):.2f} (max {m.get('lag/max', 0):.0f}) mismatch {mismatch} "
                f"samples/s {m.get('throughput/samples_per_s', 0):.1f} loss {m.get('loss', float('nan')):+.4f}{kept}")

    def close(self) -> None:
        self.tb.close()
        self.jsonl.close()
        if self.wandb is not None:
            self.wandb.finish()
            self.wandb = None

    def plot(self, path: Path) -> None:
        """The reward curve (mean and per domain) over every step logged in ``metrics.jsonl``, and the held-out
        eval's points (``eval/mean``) where the run logged them."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = [json.loads(line) for line in (self.out / "metrics.jsonl").read_text().splitlines() if line.strip()]
        if not rows:
            return
        fig, ax = plt.subplots(figsize=(7, 4))
        for key, label in [("reward/mean", "mean")] + [(f"reward/{d}", d) for d in self.domains]:
            pts = [(r["step"], r[key]) for r in rows if key in r and r[key] == r[key]]
            if pts:
                ax.plot(*zip(*pts, strict=True), label=label, linewidth=2 if label == "mean" else 1)
        held_out = [(r["step"], r["eval/mean"]) for r in rows
                    if "eval/mean" in r and not math.isnan(r["eval/mean"])]
        if held_out:  # eval.every: the greedy held-out curve, beside the training reward
            ax.plot(*zip(*held_out, strict=True), "o-", color="black", label="held-out eval", linewidth=1.5,
                    markersize=4)
        ax.set_xlabel("step")
        ax.set_ylabel("reward")
        ax.set_ylim(-0.05, 1.05)
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)


def _start_wandb(out: Path, cfg: Any, config: dict[str, Any] | None) -> Any:
    """A W&B run writing under ``out/wandb``; a resumed run (same ``out``) continues the same W&B run."""
    try:
        import wandb
    except ImportError:
        raise MintGymError("log.wandb.enabled needs the wandb package: pip install 'mintgym[wandb]'") from None
    out.mkdir(parents=True, exist_ok=True)
    id_file = out / WANDB_ID_FILE
    run_id = id_file.read_text().strip() if id_file.exists() else uuid.uuid4().hex[:12]
    id_file.write_text(run_id)
    return wandb.init(project=cfg.project, entity=cfg.entity, name=cfg.name or out.resolve().name, dir=str(out),
                      mode=cfg.mode, tags=list(cfg.tags) or None, config=config, id=run_id, resume="allow",
                      settings=wandb.Settings(console="off", silent=True))
