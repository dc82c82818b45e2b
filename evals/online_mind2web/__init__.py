"""Online-Mind2Web: live web tasks, the official result format, WebJudge and success-rate reports.

``load_tasks`` reads a task list, ``write_result`` writes a trajectory in the authors' result layout,
``WebJudge`` judges result folders with any OpenAI-compatible model, and ``success_rates`` turns judge
verdicts or human labels into success rates per difficulty level (``mintgym report online-mind2web``).
"""

from mintgym.evals.online_mind2web.judge import Verdict, WebJudge, judge_results
from mintgym.evals.online_mind2web.report import load_human_labels, load_verdicts, success_rates
from mintgym.evals.online_mind2web.results import OnlineTask, load_tasks, read_result, write_result

__all__ = ["OnlineTask", "Verdict", "WebJudge", "judge_results", "load_human_labels", "load_tasks", "load_verdicts",
           "read_result", "success_rates", "write_result"]
