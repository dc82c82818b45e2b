"""What a domain declares about its screenshots reaches the agent through the env server: the server reports
its domain's ``screen_hint`` (in its spec and each new session), and the episode puts it into the
AgentContext, where the VLM agent's prompt takes it; agents never import environments."""

from __future__ import annotations

from mintgym.action_spaces import DESKTOP, Done
from mintgym.agents.vlm import VLMAgent
from mintgym.client.aio import AsyncEnvClient
from mintgym.env import declarations
from mintgym.env.declarations import Declaration
from mintgym.environments.null import NullHost
from mintgym.inference import make_engine
from mintgym.policy import AgentContext, AgentStep
from mintgym.rollout.episode import run_episode
from mintgym.server.app import create_app
from mintgym.testing import serve_asgi

HINT = "The screenshot is one flat colour."


class _Listener:
    name = "listener"

    def __init__(self):
        self.context: AgentContext | None = None

    async def start(self, context: AgentContext) -> None:
        self.context = context

    async def act(self, observation) -> AgentStep:
        return AgentStep(Done(answer="ok"))


async def test_the_declared_hint_reaches_the_agent_through_the_server():
    agent = _Listener()
    with declarations.declaring(null=Declaration(screen_hint=HINT)), \
            serve_asgi(create_app(NullHost(width=64, height=48))) as url:
        async with AsyncEnvClient(url) as client:
            assert (await client.spec())["screen_hint"] == HINT
            session = await client.session()
            traj = await run_episode(session, agent, "null/echo", seed=0)
    assert traj.success
    assert agent.context is not None and agent.context.screen_hint == HINT


async def test_the_vlm_prompt_says_what_the_context_says():
    agent = VLMAgent(engine=make_engine("openai", base_url="http://127.0.0.1:9/v1", model="m"))
    await agent.start(AgentContext(task_id="t/x", domain="null", instruction="Answer.", action_set=DESKTOP,
                                   screen_size=(64, 48), max_steps=3, screen_hint=HINT))
    system = agent.system_text(*agent.frame_for((64, 48)))
    assert system.startswith(f"You are an agent that completes tasks on a null screen, one action at a time. {HINT}")
    await agent.start(AgentContext(task_id="t/x", domain="null", instruction="Answer.", action_set=DESKTOP,
                                   screen_size=(64, 48), max_steps=3))
    assert agent.system_text(*agent.frame_for((64, 48))).split("\n")[0].endswith("one action at a time.")
    agent.close()
