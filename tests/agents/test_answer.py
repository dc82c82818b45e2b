import asyncio

import numpy as np
import pytest

from mintgym.action_spaces import Click, Done
from mintgym.agents.answer import AnswerAgent, grid_point
from mintgym.inference import Generation
from mintgym.types import Observation


class _NoEngine:
    policy_version = 0


class _OneToken:
    """Samples a fixed token id, counting calls (a stand-in engine: the agent only maps what it gets)."""

    policy_version = 3

    def __init__(self, token: int):
        self.token, self.calls = token, 0

    async def agenerate(self, requests):
        self.calls += 1
        return [Generation(text="x", prompt_token_ids=[1, 2], response_token_ids=[self.token],
                           response_logprobs=[-0.5], policy_version=3, finish_reason="length") for _ in requests]


def _obs(domain: str, width: int = 160, height: int = 210) -> Observation:
    return Observation(screenshot=np.zeros((height, width, 3), np.uint8), instruction="Click it.", domain=domain,
                       step=0, frame_id="f0")


def test_answer_mapping_digit_and_modulo():
    digit = AnswerAgent(_NoEngine(), choices={"null": ["no", "ok"]})
    assert digit.answer(" 1", "null") == "ok"
    assert digit.answer("7", "null") == "7"  # not an option: answered as typed
    assert digit.answer("42", "pytool") == "42"  # no menu for this domain
    modulo = AnswerAgent(_NoEngine(), choices={"null": ["no", "ok", "yes"]}, pick="modulo")
    assert modulo.answer("x", "null", [7]) == "ok" and modulo.answer("x", "null", [9]) == "no"
    with pytest.raises(ValueError, match="pick"):
        AnswerAgent(_NoEngine(), pick="argmax")


def test_grid_points_are_cell_centres_row_major():
    assert grid_point(0, (4, 5), (160, 210)) == (20, 21)
    assert grid_point(3, (4, 5), (160, 210)) == (140, 21)
    assert grid_point(4, (4, 5), (160, 210)) == (20, 63)
    assert grid_point(19, (4, 5), (160, 210)) == (140, 189)
    with pytest.raises(ValueError, match="outside"):
        grid_point(20, (4, 5), (160, 210))


def test_click_grid_maps_token_modulo_cells_and_validates():
    agent = AnswerAgent(_NoEngine(), click_grid={"web": [4, 5]}, pick="modulo")
    assert agent.click("web", [10], (160, 210)) == (10, Click(x=100, y=105))
    assert agent.click("web", [30], (160, 210))[0] == 10  # 30 mod 20
    with pytest.raises(ValueError, match="cols, rows"):
        AnswerAgent(_NoEngine(), click_grid={"web": [4]})
    with pytest.raises(ValueError, match="both choices and a click_grid"):
        AnswerAgent(_NoEngine(), choices={"web": ["a"]}, click_grid={"web": [2, 2]})


def test_one_decision_per_episode_then_done_without_a_model_call():
    engine = _OneToken(token=27)
    agent = AnswerAgent(engine, click_grid={"web": [4, 5]}, choices={"pytool": ["0", "1", "2"]}, pick="modulo")

    async def play():
        await agent.start(None)
        first = await agent.act(_obs("web"))
        second = await agent.act(_obs("web"))
        await agent.start(None)
        answer = await agent.act(_obs("pytool"))
        return first, second, answer

    first, second, answer = asyncio.run(play())
    assert first.action == Click(x=140, y=63) and first.extra["cell"] == 7  # 27 mod 20: column 3, row 1
    assert first.response_token_ids == [27] and first.logprobs == [-0.5] and first.policy_version == 3
    assert isinstance(second.action, Done) and second.action.success is False and second.response_token_ids is None
    assert answer.action == Done(answer="0") and answer.extra["answer"] == "0"  # 27 mod 3
    assert engine.calls == 2
    assert first.messages[0]["content"][0] == {"type": "image", "frame_id": "f0", "size": [112, 112]}
    assert first.messages[0]["content"][1]["text"].endswith("Cell:")  # the prompt as sent, for the inspector


def test_a_blind_agent_sees_black_whatever_the_screen():
    screen = _obs("web")
    screen.screenshot[:] = 200
    agent = AnswerAgent(_NoEngine(), click_grid={"web": [2, 3]}, blind=True)
    shown = agent.prompt(screen)[0]["content"][0]["image"]
    assert shown.shape == (112, 112, 3) and not shown.any()
    seeing = AnswerAgent(_NoEngine(), click_grid={"web": [2, 3]}).prompt(screen)[0]["content"][0]["image"]
    assert (seeing == 200).all()


def test_imitate_maps_a_teachers_click_to_its_cell_and_an_answer_to_its_choice():
    from mintgym.action_spaces import Python
    from mintgym.agents.answer import grid_cell

    assert [grid_cell(grid_point(c, (2, 3), (160, 210)), (2, 3), (160, 210)) for c in range(6)] == list(range(6))
    with pytest.raises(ValueError, match="off the 160x210 screen"):
        grid_cell((160, 5), (2, 3), (160, 210))
    grid = AnswerAgent(_NoEngine(), click_grid={"web": [2, 3]}, pick="modulo")
    asyncio.run(grid.start(None))
    step = asyncio.run(grid.imitate(_obs("web"), Click(x=150, y=200)))
    # the bottom-right cell: token 5, played as a click on that cell's centre, the prompt recorded
    assert step.response_token_ids == [5] and step.action == Click(x=120, y=175) and step.extra == {"cell": 5}
    assert step.messages[0]["content"][0]["frame_id"] == "f0"
    assert asyncio.run(grid.imitate(_obs("web"), Click(x=5, y=5))) is None  # one decision an episode

    choices = AnswerAgent(_NoEngine(), choices={"pytool": ["red", "blue", "green"]}, pick="modulo",
                          crop={"pytool": [0, 0, 80, 70]})
    asyncio.run(choices.start(None))
    first = _obs("pytool")
    later = Observation(screenshot=np.full((210, 160, 3), 255, np.uint8), instruction="Click it.",
                        domain="pytool", step=1, frame_id="f1")
    assert asyncio.run(choices.imitate(first, Python(code="print(1)"))) is None  # not an option: no record yet
    assert asyncio.run(choices.imitate(later, Done(answer="purple"))) is None  # not among the choices
    step = asyncio.run(choices.imitate(later, Done(answer="green")))
    # the answer, on the first screen it was shown (its one decision is made there), cropped as configured
    assert step.response_token_ids == [2] and step.action == Done(answer="green")
    part = step.messages[0]["content"][0]
    assert part["frame_id"] == "f0" and part["crop"] == [0, 0, 80, 70]


def test_a_crop_outside_the_screen_or_malformed_is_refused():
    with pytest.raises(ValueError, match=r"crop for 'web' is \[x0, y0, x1, y1\]"):
        AnswerAgent(_NoEngine(), crop={"web": [10, 10, 5, 20]})
    agent = AnswerAgent(_NoEngine(), choices={"web": ["a"]}, crop={"web": [0, 0, 400, 20]})
    with pytest.raises(ValueError, match="outside the 160x210 screen"):
        agent.prompt(_obs("web"))


def test_show_instruction_false_leaves_the_task_out_of_the_prompt():
    screen = _obs("pytool")
    shown = AnswerAgent(_NoEngine(), choices={"pytool": ["red", "blue"]}).prompt(screen)[0]["content"][1]["text"]
    hidden = AnswerAgent(_NoEngine(), choices={"pytool": ["red", "blue"]},
                         show_instruction=False).prompt(screen)[0]["content"][1]["text"]
    assert screen.instruction and screen.instruction in shown
    assert screen.instruction not in hidden and "Task:" not in hidden
    assert hidden == "Options: 0) red, 1) blue\nOption:"


def test_several_decisions_click_that_many_times_each_prompt_saying_which_then_done():
    engine = _OneToken(token=5)
    agent = AnswerAgent(engine, click_grid={"web": [4, 4]}, pick="modulo", decisions=2)

    async def play():
        await agent.start(None)
        steps = [await agent.act(_obs("web")) for _ in range(3)]
        await agent.start(None)  # a new episode: two decisions again
        steps.append(await agent.act(_obs("web")))
        return steps

    first, second, third, again = asyncio.run(play())
    assert first.action == second.action == again.action == Click(x=60, y=78)  # cell 5 of a 4x4 grid on 160x210
    assert [s.messages[0]["content"][1]["text"].splitlines()[-2] for s in (first, second, again)] == [
        "Click 1 of 2.", "Click 2 of 2.", "Click 1 of 2."]
    assert isinstance(third.action, Done) and third.action.success is False and third.extra == {"after_decision": True}
    assert engine.calls == 3
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="decisions is the number of model calls per episode"):
            AnswerAgent(engine, click_grid={"web": [4, 4]}, decisions=bad)


def test_a_click_grid_lies_over_the_crop_the_model_is_shown():
    agent = AnswerAgent(_OneToken(token=0), click_grid={"web": [4, 4]}, pick="modulo", crop={"web": [0, 50, 160, 210]})
    # the 160x160 task area under MiniWoB's 50-pixel query: 40-pixel cells, centres 20 + 40k
    assert agent.click("web", [0], (160, 210)) == (0, Click(x=20, y=70))
    assert agent.click("web", [15], (160, 210)) == (15, Click(x=140, y=190))
    asyncio.run(agent.start(None))
    assert asyncio.run(agent.imitate(_obs("web"), Click(x=100, y=20))) is None  # over the query: off the grid
    step = asyncio.run(agent.imitate(_obs("web"), Click(x=100, y=95)))
    assert step.extra == {"cell": 6} and step.action == Click(x=100, y=110) and step.response_token_ids == [6]


def test_imitating_several_decisions_takes_each_click_on_the_screen_it_was_made_on():
    agent = AnswerAgent(_NoEngine(), click_grid={"web": [2, 2]}, pick="modulo", decisions=2)
    asyncio.run(agent.start(None))
    first, later = _obs("web"), Observation(screenshot=np.full((210, 160, 3), 9, np.uint8), instruction="Click it.",
                                            domain="web", step=1, frame_id="f1")
    one = asyncio.run(agent.imitate(first, Click(x=10, y=10)))
    two = asyncio.run(agent.imitate(later, Click(x=150, y=200)))
    assert asyncio.run(agent.imitate(later, Click(x=10, y=10))) is None  # both decisions made
    assert (one.response_token_ids, two.response_token_ids) == ([0], [3])
    assert [s.messages[0]["content"][0]["frame_id"] for s in (one, two)] == ["f0", "f1"]
    assert [s.messages[0]["content"][1]["text"].splitlines()[-2] for s in (one, two)] == ["Click 1 of 2.",
                                                                                            "Click 2 of 2."]
