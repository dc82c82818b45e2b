"""ScreenSpot, ScreenSpot-v2 and ScreenSpot-Pro: GUI grounding scored by point-in-box, as their authors score it.

``load_screenspot(path)`` reads a local copy in its published layout; ``run_screenspot`` plays each sample
as a one-step episode with an agent; ``rescore``/``pro_breakdowns`` recompute the official verdicts and
tables from a results file (``mintgym report screenspot --predictions FILE``).
"""

from mintgym.evals.screenspot.data import GroundingSample, load_screenspot
from mintgym.evals.screenspot.scoring import breakdowns, classify, metrics, pro_breakdowns, read_results, rescore

__all__ = ["GroundingSample", "breakdowns", "classify", "load_screenspot", "metrics", "pro_breakdowns",
           "read_results", "rescore"]
