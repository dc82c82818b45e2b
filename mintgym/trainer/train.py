"""Layer 7, moved: the RL loop lives in :mod:`mintgym.rl` (``from mintgym.rl import train``).

Kept only so that older imports (``from mintgym.trainer.train import train``) go on working.
"""

from mintgym.rl.run import RunResult, train

__all__ = ["RunResult", "train"]
