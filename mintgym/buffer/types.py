"""Layer 0 (beside the buffer that holds them): the records a rollout worker pushes and the trainer consumes.

A :class:`Turn` is one model call exactly as the engine made it: the prompt token ids it fed the model,
the token ids it sampled and their logprobs, the images of the prompt and the weights version; it is a view
of one step of the episode record (:class:`~mintgym.trajectory.types.StepRecord`), not a copy. A
:class:`Sample` is one episode (its record, its turns and final reward); a :class:`Group` holds the G samples of one
task and seed (the unit of advantage normalization); a :class:`Batch` is what one trainer step trains on,
with the per-domain accounting of how it was built.

Images are whatever the worker stored: numpy arrays in tests, Ray ``ObjectRef``s (``ray.put`` once per
screenshot) in a run, so a buffer hop never copies pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mintgym.trajectory.types import StepRecord, Trajectory

_STATUSES = ("success", "failure", "error", "timeout")


class _StepField:
    """A turn's attribute that reads and writes the field of its step (``default`` where the step has None)."""

    def __init__(self, field_name: str, doc: str, default: Any = None):
        self.field_name, self.__doc__, self.default = field_name, doc, default

    def __get__(self, turn: Turn | None, owner: type | None = None) -> Any:
        if turn is None:
            return self
        value = getattr(turn.step, self.field_name)
        return (list(self.default) if isinstance(self.default, list) else self.default) if value is None else value

    def __set__(self, turn: Turn, value: Any) -> None:
        setattr(turn.step, self.field_name, list(value) if isinstance(value, (list, tuple)) else value)


class Turn:
    """One sampled model response and the exact prompt it answered: a view of one episode step.

    The fields live in the step's :class:`~mintgym.trajectory.types.StepRecord` (``turn.step``), so what the
    learner trains on and what the trajectory writer stores are one record. ``Turn(prompt, response,
    logprobs, version, images, temperature)`` makes a bare step; :meth:`of` views an existing one.
    """

    def __init__(self, prompt_token_ids: list[int], response_token_ids: list[int], logprobs: list[float],
                 policy_version: int, images: list[Any] | None = None, temperature: float = 1.0):
        self.step = StepRecord(index=0, frame_id="", screenshot="", screen_size=(0, 0), action=None,
                               prompt_token_ids=list(prompt_token_ids),
                               response_token_ids=list(response_token_ids), logprobs=list(logprobs),
                               policy_version=policy_version, prompt_images=list(images or []),
                               temperature=temperature)
        _check(self.step)

    @classmethod
    def of(cls, step: StepRecord) -> Turn:
        """The turn of a recorded step (shares it: setting ``images`` sets the step's ``prompt_images``)."""
        _check(step)
        turn = cls.__new__(cls)
        turn.step = step
        return turn

    prompt_token_ids = _StepField("prompt_token_ids", "The exact token ids the engine fed the model.")
    response_token_ids = _StepField("response_token_ids", "The token ids it sampled.")
    logprobs = _StepField("logprobs", "The behaviour policy's logprob of each response token.")
    policy_version = _StepField("policy_version", "Weights version that sampled this turn.")
    images = _StepField("prompt_images", "The prompt's images in order (numpy arrays, Ray ObjectRefs to them, "
                        "or frame file paths).", default=[])
    temperature = _StepField("temperature", "Sampling temperature (0 = greedy, scored at 1 like the engine "
                             "does).", default=1.0)

    def __repr__(self) -> str:
        return (f"Turn(step {self.step.index}: {len(self.prompt_token_ids)} prompt + "
                f"{len(self.response_token_ids)} response tokens, version {self.policy_version}, "
                f"{len(self.images)} images)")


def _check(step: StepRecord) -> None:
    where = f"step {step.index}"
    if not step.prompt_token_ids or not step.response_token_ids:
        raise ValueError(f"{where}: a turn needs a non-empty prompt and response")
    if step.logprobs is None or len(step.logprobs) != len(step.response_token_ids):
        got = "no" if step.logprobs is None else len(step.logprobs)
        raise ValueError(f"{where}: {got} logprobs for {len(step.response_token_ids)} response tokens")
    if step.policy_version is None:
        raise ValueError(f"{where}: a turn needs the weights version that sampled it")


@dataclass
class Sample:
    """One finished episode, ready to train on: its record and a view of each sampled step as a turn."""

    task_id: str
    domain: str
    seed: int | None
    reward: float
    turns: list[Turn]
    #: The episode's ending: success, failure, error, timeout.
    status: str = "failure"
    worker_id: int = -1
    episode_id: str = ""
    #: The episode record the turns are views of (None: turns made bare, as in tests).
    episode: Trajectory | None = None

    @classmethod
    def from_episode(cls, episode: Trajectory, domain: str | None = None, worker_id: int = -1,
                     folder: str | Path | None = None) -> Sample:
        """The sample of a recorded episode: a turn per step with a model call (steps without one, such as
        a scripted ``done()``, are recorded but not trained on). ``folder``: the directory the episode was
        read from, so frame paths of its prompt images resolve."""
        if folder is not None:
            for step in episode.steps:
                if step.prompt_images:
                    step.prompt_images = [str(Path(folder) / p) if isinstance(p, str) else p
                                          for p in step.prompt_images]
        turns = [Turn.of(step) for step in episode.steps if step.response_token_ids is not None]
        if not turns:
            raise ValueError(f"episode {episode.id}: no step made a model call with token ids; nothing to train")
        return cls(episode.task_id, domain or episode.domain, episode.seed, float(episode.total_reward), turns,
                   episode.status, worker_id, episode.id, episode)

    def record(self) -> Trajectory:
        """The episode record: the one recorded, or for bare turns one whose last step ends with the reward."""
        if self.episode is not None:
            return self.episode
        steps = [replace(t.step, index=i, frame_id=f"turn-{i}", reward=self.reward if i == len(self.turns) - 1
                         else 0.0, terminated=i == len(self.turns) - 1) for i, t in enumerate(self.turns)]
        return Trajectory(id=self.episode_id, task_id=self.task_id, domain=self.domain, instruction="",
                          agent="train", seed=self.seed, steps=steps, total_reward=self.reward,
                          status=self.status if self.status in _STATUSES else "failure")

    @property
    def policy_version(self) -> int:
        """The oldest weights version among the turns: what the lag is measured from."""
        return min(t.policy_version for t in self.turns) if self.turns else -1

    @property
    def seconds_after_first_answer(self) -> float | None:
        """Seconds from the episode's first model answer to its end (None where not recorded): environment
        time after the sampling that no schedule can overlap with training on this sample."""
        answered = self.turns[0].step.timings.get("answered") if self.turns else None
        if self.episode is None or answered is None or not self.episode.ended:
            return None
        return max(0.0, self.episode.wall_seconds - answered)


@dataclass
class Group:
    """G samples of the same task and seed."""

    group_id: str
    task_id: str
    domain: str
    seed: int | None
    samples: list[Sample]
    #: The buffer reservation this group fills (admission control); None when pushed without one.
    reservation: int | None = None

    @property
    def policy_version(self) -> int:
        return min(s.policy_version for s in self.samples)

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.samples]

    def lag(self, trainer_version: int) -> int:
        return trainer_version - self.policy_version


@dataclass
class DomainStats:
    """How one domain's share of a batch went."""

    quota: int = 0
    taken: int = 0
    #: Groups thrown away as older than max_lag.
    dropped_stale: int = 0
    #: Quota left unfilled when the batch was built (never refilled from another domain).
    shortfall: int = 0


@dataclass
class Batch:
    """What one trainer step trains on."""

    groups: list[Group]
    #: The trainer's weights version the lag is measured against.
    trainer_version: int
    domains: dict[str, DomainStats] = field(default_factory=dict)

    @property
    def samples(self) -> list[Sample]:
        return [s for g in self.groups for s in g.samples]

    def lag_histogram(self) -> dict[int, int]:
        """Samples per lag (trainer version minus the sample's oldest turn version)."""
        hist: dict[int, int] = {}
        for s in self.samples:
            lag = self.trainer_version - s.policy_version
            hist[lag] = hist.get(lag, 0) + 1
        return dict(sorted(hist.items()))
