"""The trainer's records: how long a sample's episode ran on after its first model answer."""

from mintgym.buffer.types import Sample, Turn
from mintgym.trajectory.types import StepRecord, Trajectory


def _played(started: float, ended: float, answered: list[float | None]) -> Sample:
    steps = []
    for i, at in enumerate(answered):
        step = StepRecord(index=i, frame_id=f"f{i}", screenshot="", screen_size=(4, 4), action=None,
                          prompt_token_ids=[1, 2], response_token_ids=[3], logprobs=[-0.5], policy_version=0,
                          timings={} if at is None else {"answered": at})
        steps.append(step)
    episode = Trajectory(id="e", task_id="null/echo", domain="null", instruction="", agent="answer", steps=steps,
                         started=started, ended=ended)
    return Sample.from_episode(episode)


def test_the_time_after_the_first_answer_runs_from_the_first_turn_to_the_episodes_end():
    sample = _played(100.0, 110.0, [2.5, 6.0])
    assert sample.seconds_after_first_answer == 7.5  # 110 - (100 + 2.5): the second turn does not move it


def test_the_time_after_the_first_answer_is_unknown_without_its_record():
    assert _played(100.0, 110.0, [None]).seconds_after_first_answer is None  # recorded before the field
    assert _played(100.0, 0.0, [1.0]).seconds_after_first_answer is None  # the episode has not ended
    bare = Sample("null/echo", "null", 0, 1.0, [Turn([1, 2], [3], [-0.5], 0)])
    assert bare.seconds_after_first_answer is None
