"""Layer 6: the RL trainer: pure losses (loss.py), typed config (config.py), the training step
(learner.py), the run loop in sync or async mode (train.py) and checkpoints (ckpt.py)."""
