"""Layer 4: one episode -- an agent against an env session, recorded as a Trajectory.

Agent mistakes (unparseable text, invalid actions) are steps with an error; a fault the agent's own action
caused (``info["agent_fault"]``) ends the episode as a ``failure`` with reward 0 and its reason (never
``error``: it is trained on and never retried), and so does a prompt that outgrew the model's context
(:class:`~mintgym.errors.ContextOverflow`, ``extra["fault"] = "context"``); an environment or server fault
ends the episode with status ``error`` and its reason; an episode over its wall-clock budget ends with
``timeout``, ``extra["timeout_in"]`` saying whether it was waiting on the ``agent`` (its model calls included)
or the ``env`` (a reset or a step) when the budget ran out. Nothing is dropped: every episode returns a
trajectory, and :func:`drop_cause` says which endings training may not use (infrastructure faults).

:func:`play_pooled` is the one episode loop over an :class:`~mintgym.runtime.pool.EnvPool` that evaluation
(``runner.run_jobs``) and training (the Ray rollout worker) share: take a reset session, play, and hand the
session back by the pool's one retirement rule; a reset that fails is an ``error`` trajectory too. An
episode cancelled or ended by an unexpected exception retires its session and raises.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from mintgym.action_spaces import action_set_for
from mintgym.client.aio import AsyncSession
from mintgym.errors import ContextOverflow, MintGymError, ServerError
from mintgym.observe import TEXT_CHANNELS
from mintgym.policy import Agent, AgentContext
from mintgym.runtime.pool import NO_SESSION, EnvPool
from mintgym.trajectory.store import TrajectoryWriter
from mintgym.trajectory.types import StepRecord, Trajectory
from mintgym.types import Observation

SUCCESS_THRESHOLD = 1.0 - 1e-6


def drop_cause(traj: Trajectory) -> str | None:
    """None when an episode's ending is the agent's own doing, trained on with its reward: a success, a
    failure (too many steps, an agent-made fault, a context overflow, unparseable answers) or a timeout while
    the agent was acting. Else the infrastructure cause for which its group is dropped: ``env_fault`` (the
    environment or its server failed), ``reset_failed``, ``env_stall`` (timed out waiting on the environment),
    ``policy_error`` (the agent or its inference engine raised)."""
    if traj.status in ("success", "failure"):
        return None
    if traj.status == "timeout":
        return "env_stall" if traj.extra.get("timeout_in") == "env" else None
    return {"env": "env_fault", "reset": "reset_failed", "agent": "policy_error"}.get(traj.extra.get("fault"),
                                                                                     "error")


def _status_for(reward: float, info: dict) -> str:
    if "success" in info:
        return "success" if info["success"] else "failure"
    return "success" if reward >= SUCCESS_THRESHOLD else "failure"


async def run_episode(session: AsyncSession, agent: Agent, task_id: str, *, seed: int | None = None,
                      run_dir: str | Path | None = None, max_seconds: float | None = None,
                      group_id: str | None = None, trajectory_id: str | None = None,
                      started: tuple[Observation, dict] | None = None,
                      observe: tuple[str, ...] = ("screenshot",)) -> Trajectory:
    """Play one episode and return its trajectory (written under ``run_dir`` when given).

    ``started``: the (observation, info) of a reset already done for this episode (an EnvPool's).
    ``observe``: the observation channels the agent is given (:mod:`mintgym.observe`; the session fills them).
    """
    traj = Trajectory(id=trajectory_id or f"{task_id.replace('/', '__')}-{seed}-{uuid.uuid4().hex[:8]}",
                      task_id=task_id, domain="", instruction="", agent=agent.name, seed=seed,
                      started=time.time(), group_id=group_id, observe=list(observe))
    recorder = _Recorder(run_dir, traj)
    try:
        coro = _play(session, agent, task_id, seed, traj, recorder, started)
        await (asyncio.wait_for(coro, max_seconds) if max_seconds else coro)
    except TimeoutError:
        traj.status, traj.error = "timeout", f"episode exceeded its budget of {max_seconds:.0f}s"
        traj.extra["fault"] = "timeout"
        traj.extra["timeout_in"] = recorder.waiting_on
    except _AgentFailed as failure:
        err = failure.__cause__
        if isinstance(err, ContextOverflow):  # the agent's turns outgrew the context: its failure, trained on
            traj.status, traj.error = "failure", f"context overflow: {err}"
            traj.extra["fault"] = "context"
        else:  # the policy's fault: recorded as the episode's error, the env is fine
            traj.status, traj.error = "error", f"agent {agent.name} failed: {type(err).__name__}: {err}"
            traj.extra["fault"] = "agent"
    except MintGymError as err:  # the environment's or the server's fault
        traj.status, traj.error = "error", f"{type(err).__name__}: {err}"
        traj.extra["fault"] = "env"
    traj.ended = time.time()
    if recorder.writer is not None:
        recorder.writer.close()
    return traj


async def play_pooled(pool: EnvPool, agent: Agent, task_id: str, seed: int | None, trajectory_id: str, *,
                      run_dir: str | Path | None = None, max_seconds: float | None = None,
                      group_id: str | None = None) -> Trajectory:
    """One episode on a session of ``pool`` (reset for ``task_id``/``seed``, or one prepared for it), the
    session returned by ``EnvPool.finish``. A failed reset gives an ``error`` trajectory (written under
    ``run_dir`` like any episode, so reports and resumes see it) with ``extra["fault"] = "reset"``.

    Raises what the episode raised (an unexpected error, a cancellation) after retiring its session (closed on
    its server, shielded from the cancellation; the pool reopens its slot when next needed), and the pool's
    ``ServerError`` (code ``no_session``) when it has no session and no server can open one."""
    try:
        prepared = await pool.checkout(task_id, seed)
    except MintGymError as err:
        if isinstance(err, ServerError) and err.code == NO_SESSION:
            raise  # the pool has no session and no server can open one: not this episode's failure
        now = time.time()
        traj = Trajectory(id=trajectory_id, task_id=task_id, domain="", instruction="", agent=agent.name, seed=seed,
                          status="error", error=f"reset failed: {type(err).__name__}: {err}", started=now,
                          ended=now, group_id=group_id, extra={"fault": "reset"}, observe=list(pool.observe))
        if run_dir is not None:
            TrajectoryWriter(run_dir, traj).close()
        return traj
    try:
        traj = await run_episode(prepared.session, agent, task_id, seed=seed, run_dir=run_dir,
                                 max_seconds=max_seconds, group_id=group_id, trajectory_id=trajectory_id,
                                 started=(prepared.observation, prepared.info), observe=pool.observe)
    except BaseException:  # cancelled, or an error no episode ending covers: the session's state is unknown
        await asyncio.shield(pool.retire(prepared.session))
        raise
    await asyncio.shield(pool.finish(prepared.session, traj.extra.get("fault")))
    return traj


def observed_channels(obs: Observation) -> dict[str, str] | None:
    """The text channels an observation carries (a11y, dom, text), for the step's record; None if none."""
    found = {name: value for name in TEXT_CHANNELS if (value := getattr(obs, name)) is not None}
    return found or None


class _AgentFailed(Exception):
    """Wraps any exception an agent raised, so it is told apart from environment faults."""


async def _ask(agent: Agent, call):
    try:
        return await call
    except asyncio.CancelledError:
        raise
    except Exception as err:
        raise _AgentFailed() from err


class _Recorder:
    """Holds the trajectory writer once the episode has started, so any ending can close it."""

    def __init__(self, run_dir: str | Path | None, traj: Trajectory):
        self.run_dir, self.traj = run_dir, traj
        self.writer: TrajectoryWriter | None = None
        #: What the episode is waiting on: ``env`` (a reset or a step) or ``agent`` (its start or act).
        self.waiting_on = "env"

    def open(self) -> TrajectoryWriter | None:
        if self.run_dir is not None:
            self.writer = TrajectoryWriter(self.run_dir, self.traj)
        return self.writer


async def _play(session: AsyncSession, agent: Agent, task_id: str, seed: int | None, traj: Trajectory,
                recorder: _Recorder, started: tuple[Observation, dict] | None) -> None:
    obs, info = started if started is not None else await session.reset(task_id, seed)
    traj.domain, traj.instruction = obs.domain, obs.instruction
    writer = recorder.open()
    context = AgentContext(task_id=task_id, domain=obs.domain, instruction=obs.instruction,
                           action_set=action_set_for(session.action_set), screen_size=obs.screen_size,
                           max_steps=int(info.get("max_steps", 0)), seed=seed, oracle=session.oracle_action,
                           screen_hint=session.screen_hint, observe=tuple(traj.observe))
    recorder.waiting_on = "agent"
    await _ask(agent, agent.start(context))
    reward = 0.0
    while True:
        t0 = time.perf_counter()
        recorder.waiting_on = "agent"
        decision = await _ask(agent, agent.act(obs))
        t_agent = time.perf_counter() - t0
        frame = writer.frame(obs.screenshot) if writer is not None else ""
        # The agent's typed action crosses the wire once; an action it could not express is an explicit
        # invalid step with its reason (its raw text is never parsed again, in another frame).
        recorder.waiting_on = "env"
        result = await session.step(decision.action, agent_error=decision.error or "the agent gave no action")
        record = StepRecord(
            index=len(traj.steps), frame_id=obs.frame_id, screenshot=frame, screen_size=obs.screen_size,
            action=decision.action.to_json() if decision.action is not None else None, text=decision.text,
            error=decision.error or result.info.get("error"), reward=result.reward, terminated=result.terminated,
            truncated=result.truncated, prompt_token_ids=decision.prompt_token_ids,
            response_token_ids=decision.response_token_ids, logprobs=decision.logprobs,
            policy_version=decision.policy_version, zoom=obs.zoom,
            timings={"agent": t_agent, "env": float(result.info.get("step_seconds", 0.0)),
                     "total": time.perf_counter() - t0},
            extra=decision.extra, messages=decision.messages, output=result.observation.text,
            channels=observed_channels(obs),
        )
        if writer is not None:
            writer.step(record)
        else:
            traj.steps.append(record)
        obs = result.observation
        if result.terminated or result.truncated:
            reward = result.reward
            traj.total_reward = reward
            traj.status = _status_for(reward, result.info)
            if result.info.get("agent_fault"):  # the agent broke its own episode: a failure, trained on
                traj.error = str(result.info.get("failure") or "")
                traj.extra["fault"] = "agent_action"
            break
    if writer is not None:
        traj.final_screenshot = writer.frame(obs.screenshot)
