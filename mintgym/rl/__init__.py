"""Layer 7: the RL run, the one entry point that knows every part (prime-rl's orchestrator/trainer split).

- :mod:`mintgym.rl.wiring`: typed config -> the model, env servers (one :class:`~mintgym.runtime.fleet.ServerGroup`
  per domain, by provider), the weight transport, Ray.
- :mod:`mintgym.rl.components`: :class:`~mintgym.rl.components.Run`, the live parts of one run (buffer actor,
  learner, rollout worker actors) and their supervision; ``close()`` stops them all.
- :mod:`mintgym.rl.sync`: when weights are published and how long a worker may lag in loading them.
- :mod:`mintgym.rl.evaluate`: the final evaluation.
- :mod:`mintgym.rl.run`: :func:`~mintgym.rl.run.train`, the loop.
- :mod:`mintgym.rl.lockstep`: the run under torchrun: rank 0's learner calls followed by every rank's shard.

``mintgym.trainer`` keeps what the learner process needs alone: the learner, the loss, checkpoints, config.
"""

from mintgym.rl.run import RunResult, train

__all__ = ["RunResult", "train"]
