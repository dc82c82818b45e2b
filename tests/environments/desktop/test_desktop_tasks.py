import pytest

from mintgym.environments.desktop.tasks import tasks
from mintgym.testing import check_task

pytestmark = [pytest.mark.desktop, pytest.mark.asyncio(loop_scope="module")]


@pytest.mark.parametrize("task", tasks(), ids=lambda t: t.id)
async def test_native_task_oracle_scores_one_and_untouched_zero(host, task):
    report = await check_task(host, task)
    assert report.oracle_reward == 1.0
