"""A MiniWoB++ task: its page from the installed package, its instruction and reward from its own JavaScript.

An episode starts the way MiniWoB's gymnasium environment starts one: ``core.endEpisode(0)`` stops a
running episode, ``Math.seedrandom(seed)`` seeds the page's RNG, ``core.setDataMode('train')`` and
``core.startEpisodeReal()`` generate the problem, and the instruction is ``core.getUtterance()`` (the
``#query`` text). The episode ends when the page sets ``WOB_DONE_GLOBAL`` (a success, a failure, or
MiniWoB's own timer, ``core.EPISODE_MAX_TIME``, running out).

Reward mapping (MiniWoB rewards lie in [-1, 1]; the Task contract wants [0, 1]):
``evaluate = max(0, WOB_RAW_REWARD_GLOBAL)`` once the page says done, else 0. The raw reward is the
task's own score *without* MiniWoB's time penalty, so success is ``raw > 0`` (1.0 for every binary task)
and partial-credit tasks keep their fraction; failures (-1) and time-outs score 0. The time-scaled reward
the gymnasium environment returns (``WOB_REWARD_GLOBAL``) and the raw one are both kept in
``env.task_info["miniwob"]`` (``env_reward``, ``raw_reward``, ``reason``, ``done``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mintgym.action_spaces import ActionModel
from mintgym.environments.web.task import WebTask

if TYPE_CHECKING:
    import random

    from mintgym.environments.web.env import WebEnvironment

VIEWPORT = (160, 210)  # MiniWoB's task area (the gymnasium environment crops to it)
FLIGHT_VIEWPORT = (375, 667)

# Reads MiniWoB's globals only from the document this episode started in: the nonce is set by _START_JS and
# no other document (a new load of the same URL, another task, a page of the agent's making) carries it.
_METADATA_JS = """(nonce) => {
  if (window.__mintgymEpisode !== nonce || typeof WOB_DONE_GLOBAL === 'undefined') return null;
  return {done: !!WOB_DONE_GLOBAL, env_reward: Number(WOB_REWARD_GLOBAL), raw_reward: Number(WOB_RAW_REWARD_GLOBAL),
          reason: WOB_REWARD_REASON === null ? null : String(WOB_REWARD_REASON), episode: WOB_EPISODE_ID};
}"""
#: Tasks whose page ends the episode itself when MiniWoB's 10 s timer would (chase-circle scores the time the
#: pointer spent in the circle and calls endEpisode at 9.9 s): the timer gets a second more, so it cannot race
#: the page's own ending on a loaded machine. A session's ``miniwob_time_limit_ms`` still wins.
SELF_TIMED = {"chase-circle": 11_000}
#: The instruction: ``core.getUtterance()``, which some tasks (click-color, the natural-language e-mail tasks)
#: override to return ``{utterance, fields}`` in training mode; the text is its ``utterance``.
_UTTERANCE_JS = "() => { const u = core.getUtterance(); return typeof u === 'string' ? u : String(u.utterance); }"
_START_JS = """([seed, limit, nonce]) => {
  if (!document.getElementById('mintgym-style')) {
    const style = document.createElement('style');
    style.id = 'mintgym-style';
    // MiniWoB's reward HUD and click visualizer sit right of the 160 px task area (the gymnasium env crops
    // them away); hidden here so the page never scrolls sideways to them.
    style.textContent = '#reward-display, #click-canvas { display: none !important; }';
    document.head.appendChild(style);
  }
  core.endEpisode(0);
  if (limit !== null) core.EPISODE_MAX_TIME = limit;
  if (seed === null) Math.seedrandom(); else Math.seedrandom(seed);
  core.setDataMode('train');
  core.startEpisodeReal();
  window.__mintgymEpisode = nonce;
  window.scrollTo(0, 0);
  return [core.EPISODE_MAX_TIME, WOB_EPISODE_ID];
}"""


@dataclass
class MiniWobTask(WebTask):
    """One MiniWoB++ task (``miniwob/<name>``), loaded from ``/miniwob/<path>`` on the host's server."""

    name: str = ""
    path: str = ""
    viewport: tuple[int, int] = VIEWPORT
    max_steps: int = 25

    def _url(self, env: WebEnvironment) -> str:
        return f"{env.host.server_origin}/miniwob/{self.path}"

    async def setup(self, env: WebEnvironment, rng: random.Random) -> str:
        url = self._url(env)
        page = env.main_page
        if page.url != url:
            await env.open(url)
            await page.wait_for_function("() => typeof core !== 'undefined' && core.cover_div !== null",
                                         timeout=60_000)
        seed = rng.randrange(2**31)
        limit = env.options.miniwob_time_limit_ms or SELF_TIMED.get(self.name)
        nonce = secrets.token_hex(16)
        max_time, episode = await env.evaluate_js(_START_JS, [seed, limit, nonce])
        await page.wait_for_function("() => WOB_TASK_READY === true", timeout=60_000)
        env.task_info["miniwob"] = {"task": self.name, "seed": seed, "episode_max_time_ms": max_time,
                                    "done": False, "env_reward": 0.0, "raw_reward": 0.0, "reason": None}
        env.task_info["miniwob_episode"] = _Episode(url, nonce, episode, time.monotonic() + max_time / 1000 + 1.0)
        return await env.evaluate_js(_UTTERANCE_JS)

    async def state(self, env: WebEnvironment) -> dict:
        """MiniWoB's own episode record for this session (and it is stored in ``env.task_info``).

        The record is read only from the task page this episode started; once the main page shows anything
        else (another task, a reload, a 404, a page of the agent's making) the episode is over: ``done`` with
        raw reward 0 and the reason, never an error.
        """
        info = env.task_info.setdefault("miniwob", {})
        episode: _Episode | None = env.task_info.get("miniwob_episode")
        if episode is None or info.get("left_task_page"):
            return info
        meta = await self._read(env, episode)
        if meta is None:
            where = env.main_page.url
            info.update(done=True, env_reward=0.0, raw_reward=0.0, left_task_page=where,
                        reason=f"the agent left the task page (the main page shows {where[:200]}); "
                               "the episode ends with reward 0")
            return info
        info.update(done=meta["done"], env_reward=float(meta["env_reward"]), raw_reward=float(meta["raw_reward"]),
                    reason=meta["reason"])
        return info

    @staticmethod
    async def _read(env: WebEnvironment, episode: _Episode) -> dict | None:
        """MiniWoB's globals from this episode's document, or None when the main page shows another one."""
        from playwright.async_api import Error as PlaywrightError

        parts = urlsplit(env.main_page.url)
        if f"{parts.scheme}://{parts.netloc}{parts.path}" != episode.url:
            return None
        try:
            meta = await env.evaluate_js(_METADATA_JS, episode.nonce)
        except PlaywrightError:  # the document went away under the call (a navigation committed)
            return None
        if meta is None or meta["episode"] != episode.id + (1 if meta["done"] else 0):
            return None
        return meta

    async def finished(self, env: WebEnvironment) -> bool:
        if (await self.state(env))["done"]:
            return True
        episode: _Episode | None = env.task_info.get("miniwob_episode")
        return episode is not None and time.monotonic() > episode.deadline

    async def evaluate(self, env: WebEnvironment) -> float:
        info = await self.state(env)
        if not info["done"]:
            return 0.0
        return max(0.0, min(1.0, info["raw_reward"]))


@dataclass(frozen=True)
class _Episode:
    """What identifies the episode a session started: the task page, the document's nonce, MiniWoB's id."""

    url: str
    nonce: str
    id: int
    deadline: float


@dataclass
class SolvedMiniWobTask(MiniWobTask):
    """A MiniWoB++ task with a DOM-reading oracle (see :mod:`.oracles`)."""

    async def oracle(self, env: WebEnvironment) -> AsyncIterator[ActionModel]:
        from mintgym.environments.web.miniwob.oracles import SOLVERS

        query = await env.evaluate_js(_UTTERANCE_JS)
        async for action in SOLVERS[self.name](env, query):
            yield action
