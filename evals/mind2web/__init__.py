"""Multimodal-Mind2Web, offline and step level: element accuracy, operation F1, step and task success rate.

``iter_steps(path, split)`` reads a local copy of ``osunlp/Multimodal-Mind2Web``; ``run_split`` plays each
step with an agent (teacher forcing) and writes the paper's metrics, macro-averaged per task.
"""

from mintgym.evals.mind2web.data import SPLITS, Candidate, Mind2WebStep, iter_steps, step_from_row
from mintgym.evals.mind2web.metrics import aggregate, element_at, op_f1, score_step

__all__ = ["SPLITS", "Candidate", "Mind2WebStep", "aggregate", "element_at", "iter_steps", "op_f1", "score_step",
           "step_from_row"]
