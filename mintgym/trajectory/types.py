"""Layer 0: typed, flat, versioned trajectory records (DESIGN section 5).

On disk a trajectory is a directory: ``meta.json`` (a :class:`Trajectory` without its steps),
``steps.jsonl`` (one :class:`StepRecord` a line) and ``frames/NNNN.png`` (each screenshot stored once,
referenced by path). Step *i* records the frame the action was chosen on, so every action is tied to
the pixels its coordinates refer to.

The same records carry an episode from the rollout to the learner (one episode record): a step holds the
engine's exact prompt and response token ids, the sampler's logprobs, the weights version, the images of
its prompt (``prompt_images``), the action or the action error, the reward, terminated vs truncated. The
buffer's ``Turn`` is a view of one step; the viewer reads the same file a training episode is written to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

SCHEMA_VERSION = 1
Status = Literal["success", "failure", "error", "timeout", "running"]


@dataclass
class StepRecord:
    index: int
    #: The observation the action was chosen on.
    frame_id: str
    screenshot: str
    screen_size: tuple[int, int]
    #: The action as sent (JSON), or None when the agent produced nothing parseable.
    action: dict[str, Any] | None
    #: The agent's raw output (model text).
    text: str = ""
    #: Why the action failed: the agent's parse error or the environment's refusal.
    error: str | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    prompt_token_ids: list[int] | None = None
    response_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    policy_version: int | None = None
    zoom: tuple[int, int, int, int] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: The prompt the agent sent for this step, or None when it records none (the scripted agent; runs
    #: written before this field existed). JSON-safe: ``[{"role": ..., "content": [part, ...]}, ...]`` where a
    #: part is ``{"type": "text", "text": ...}`` or ``{"type": "image", "frame_id": ..., "size": [w, h]}``: the
    #: image the model was shown, referenced by the ``frame_id`` of the step whose screenshot it was made from
    #: (that step's ``screenshot`` file), at the size it was shown.
    messages: list[dict[str, Any]] | None = None
    #: The text the environment returned after the action (pytool: the cell's output), when the session asked
    #: for the ``text`` side channel.
    output: str | None = None
    #: The images of this step's prompt, in order, as the model saw them (None: not recorded). In memory:
    #: numpy arrays, or Ray ObjectRefs once a trajectory buffer owns them; on disk: frame paths relative
    #: to the trajectory directory (the writer stores each array once).
    prompt_images: list[Any] | None = None
    #: The sampling temperature of the step's model call (None: no model call recorded).
    temperature: float | None = None
    #: The text channels of the observation the action was chosen on, as the agent was given them (``a11y``,
    #: ``dom``, ``text``; see :mod:`mintgym.observe`); None when the episode asked for none.
    channels: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data; ``prompt_images`` must be frame paths by then (the writer stores arrays)."""
        images = self.prompt_images
        if images is not None and not all(isinstance(p, str) for p in images):
            raise ValueError(f"step {self.index}: prompt images are still pixels; write the step with "
                             "TrajectoryWriter, which stores them as frames")
        data = asdict(replace(self, prompt_images=None))
        data["prompt_images"] = None if images is None else list(images)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepRecord:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"step record has unknown fields {sorted(unknown)}")
        data = dict(data)
        data["screen_size"] = tuple(data["screen_size"])
        if data.get("zoom") is not None:
            data["zoom"] = tuple(data["zoom"])
        return cls(**data)


@dataclass
class Trajectory:
    id: str
    task_id: str
    domain: str
    instruction: str
    agent: str
    seed: int | None = None
    steps: list[StepRecord] = field(default_factory=list)
    total_reward: float = 0.0
    status: Status = "running"
    #: Why an episode ended in error or timeout.
    error: str | None = None
    final_screenshot: str | None = None
    started: float = 0.0
    ended: float = 0.0
    group_id: str | None = None
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    #: The observation channels the agent was given (:mod:`mintgym.observe`; older records: the screenshot).
    observe: list[str] = field(default_factory=lambda: ["screenshot"])

    @property
    def success(self) -> bool:
        return self.status == "success"

    @property
    def wall_seconds(self) -> float:
        return max(0.0, self.ended - self.started)

    def meta_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("steps")
        data["num_steps"] = len(self.steps)
        return data

    @classmethod
    def from_meta(cls, data: dict[str, Any], steps: list[StepRecord]) -> Trajectory:
        data = dict(data)
        data.pop("num_steps", None)
        version = data.get("schema_version", SCHEMA_VERSION)
        if version > SCHEMA_VERSION:
            raise ValueError(f"trajectory schema version {version} is newer than this MintGym ({SCHEMA_VERSION})")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"trajectory meta has unknown fields {sorted(unknown)}")
        return cls(steps=steps, **data)
