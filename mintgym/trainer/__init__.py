"""Layer 6: what the learner process needs alone: pure losses (loss.py), typed config (config.py), the
training step (learner.py), supervised warm-start steps (sft.py) and checkpoints (ckpt.py). The run loop
that wires them to env servers, workers and weights is :mod:`mintgym.rl`."""
