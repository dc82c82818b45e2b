"""ScreenSpot, ScreenSpot-v2 and ScreenSpot-Pro: GUI grounding scored by point-in-box, as their authors score it.

``load_screenspot(path)`` reads a local copy in its published layout (``expand_pro`` adds Pro's instruction
styles, negative ground truth and languages); ``run_screenspot`` plays each sample as a one-step episode
with an agent; ``rescore``/``pro_breakdowns`` recompute the official verdicts and tables from a results
file (``mintgym report screenspot --predictions FILE``). Scored as SeeClick's ``pretrain/screenspot_test.py``
and ScreenSpot-Pro's ``eval_screenspot_pro.py`` score (tests/evals/screenspot/test_differential.py holds
MintGym to their outcomes).
"""

from mintgym.evals.screenspot.data import GroundingSample, expand_pro, load_screenspot
from mintgym.evals.screenspot.options import ProOptions, SeeClickOptions
from mintgym.evals.screenspot.scoring import (
    breakdowns,
    classify,
    metrics,
    negative_verdict,
    pro_breakdowns,
    read_results,
    rescore,
)

__all__ = ["GroundingSample", "ProOptions", "SeeClickOptions", "breakdowns", "classify", "expand_pro",
           "load_screenspot", "metrics", "negative_verdict", "pro_breakdowns", "read_results", "rescore"]
