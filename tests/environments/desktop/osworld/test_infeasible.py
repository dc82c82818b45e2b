"""Infeasible OSWorld tasks: checked for availability like the others, their oracle answers FAIL (scores 1)
and anything else scores 0."""

from pathlib import Path

import pytest

from mintgym.environments.desktop.osworld.availability import why_unavailable
from mintgym.environments.desktop.osworld.loader import parse_task
from mintgym.environments.desktop.osworld.task import OSWorldTask
from mintgym.testing import check_task

pytestmark = [pytest.mark.desktop]


def infeasible(config):
    return parse_task({"id": "inf-1", "instruction": "Install a program that does not exist for Linux.",
                       "config": config, "evaluator": {"func": "infeasible"}}, Path("/x/os/inf-1.json"))


def test_infeasible_tasks_have_their_config_checked():
    needs_net = infeasible([{"type": "download", "parameters": {"files": [
        {"url": "https://example.org/setup.exe", "path": "/home/user/setup.exe"}]}}])
    assert "example.org" in why_unavailable(needs_net)
    assert why_unavailable(infeasible([{"type": "launch", "parameters": {"command": ["xterm"]}}])) is None


@pytest.mark.asyncio(loop_scope="module")
async def test_the_oracle_answers_fail_and_scores_one_untouched_scores_zero(host):
    task = OSWorldTask.from_spec(infeasible([{"type": "execute", "parameters": {"command": ["true"]}}]))
    assert task.has_oracle()
    report = await check_task(host, task)
    assert report.oracle_reward == 1.0 and report.untouched_score == 0.0
