"""Mind2Web, offline and step level: element accuracy, operation F1, step and task success rate.

``iter_steps(path, split, ranks)`` reads a local copy of ``osunlp/Multimodal-Mind2Web`` or of the original
Mind2Web JSON splits; ``run_split`` plays each step with an agent (teacher forcing) and scores it under the
official multiple-choice rules (:mod:`.metrics`) and SeeClick's protocol (:mod:`.seeclick`).
"""

from mintgym.evals.mind2web.data import SPLITS, Candidate, Mind2WebStep, iter_steps, load_ranks, step_from_row
from mintgym.evals.mind2web.metrics import TOP_K, aggregate, element_at, official_results, op_f1, score_step
from mintgym.evals.mind2web.options import Mind2WebOptions

__all__ = ["SPLITS", "TOP_K", "Candidate", "Mind2WebOptions", "Mind2WebStep", "aggregate", "element_at",
           "iter_steps", "load_ranks", "official_results", "op_f1", "score_step", "step_from_row"]
