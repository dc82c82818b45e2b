"""Online-Mind2Web: live web tasks, the official result formats, WebJudge and success-rate reports.

``load_tasks`` reads a task list, ``write_result`` writes a trajectory in the authors' result layout,
``WebJudge`` judges result folders as the authors' code does with any OpenAI-compatible model and the
authors' prompts (``load_official``, from a local copy of their repository) or MintGym's labelled fallback
(``mintgym_fallback``), and ``success_rates`` turns judge verdicts or human labels into success rates per
difficulty level (``mintgym report online-mind2web``).
"""

from mintgym.evals.online_mind2web.judge import Verdict, WebJudge, judge_results
from mintgym.evals.online_mind2web.official import load_official
from mintgym.evals.online_mind2web.prompts import JudgePrompts, mintgym_fallback
from mintgym.evals.online_mind2web.report import load_human_labels, load_verdicts, success_rates, verdict_sources
from mintgym.evals.online_mind2web.results import OnlineTask, ResultFolder, load_tasks, read_result, write_result

__all__ = ["JudgePrompts", "OnlineTask", "ResultFolder", "Verdict", "WebJudge", "judge_results", "load_human_labels",
           "load_official", "load_tasks", "load_verdicts", "mintgym_fallback", "read_result", "success_rates",
           "verdict_sources", "write_result"]
