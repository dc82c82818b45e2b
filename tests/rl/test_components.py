"""The run's report of what the rollout workers' episodes did: which failures were trained on, and how many
groups each infrastructure cause dropped, as a share of the groups that ended."""

from __future__ import annotations

from mintgym.rl.components import EpisodeReport


def test_each_drop_cause_is_reported_as_its_share_of_the_groups_that_ended():
    report = EpisodeReport(episodes=40, errors=5, groups=6, lost_groups=2, agent_failures=7,
                           kinds={"reset failed: ServerError: 503": 3, "episode exceeded its budget of 300s": 2},
                           drop_causes={"reset_failed": 1, "env_stall": 1})
    metrics = report.metrics()
    assert metrics["rollout/drop_rate/reset_failed"] == metrics["rollout/drop_rate/env_stall"] == 1 / 8
    assert metrics["rollout/agent_failures"] == 7.0 and metrics["rollout/lost_groups"] == 2.0
    assert metrics["rollout/episode_errors"] == 5.0
    assert not any(k.startswith("rollout/drop_rate/") for k in EpisodeReport(episodes=8, groups=2).metrics())
    # the agent's own failures are trained on: a step whose episodes all failed that way is not a failed step
    assert not EpisodeReport(episodes=8, groups=2, agent_failures=8).all_failed
