"""The mistaken oracle's mistakes, on a scripted oracle's actions (the server's oracle endpoint's JSON)."""

import asyncio

from mintgym.action_spaces import Done, Python, action_set_for
from mintgym.agents.scripted import MistakenOracle
from mintgym.policy import AgentContext


def _played(teacher: MistakenOracle, oracle_actions: list[dict]) -> list:
    queue = list(oracle_actions)

    async def oracle():
        return queue.pop(0) if queue else None

    async def play():
        await teacher.start(AgentContext(task_id="pytool/largest-area-1", domain="pytool", instruction="",
                                         action_set=action_set_for("pytool"), screen_size=(1024, 768), max_steps=5,
                                         seed=3, oracle=oracle))
        return [(await teacher.act(None)).action for _ in range(len(oracle_actions))]

    return asyncio.run(play())


def test_an_answer_held_back_by_the_order_rule_is_still_swapped_by_the_answers_rule():
    # a bug: an oracle whose second action is its answer had that answer held and played as the oracle gave it
    code, answer = {"type": "python", "code": "print(1)"}, {"type": "done", "answer": "red"}
    played = _played(MistakenOracle(answers={"red": "blue"}, rate=1.0, order_rate=1.0), [code, answer])
    assert played == [Python(code="print(1)"), Done(answer="blue")]


def test_the_order_rule_swaps_the_first_two_actions_the_answers_rule_leaves_others_alone():
    first, second = {"type": "python", "code": "a = 1"}, {"type": "python", "code": "b = 2"}
    done = {"type": "done", "answer": "green"}
    played = _played(MistakenOracle(answers={"red": "blue"}, rate=1.0, order_rate=1.0), [first, second, done])
    assert played == [Python(code="b = 2"), Python(code="a = 1"), Done(answer="green")]
    assert _played(MistakenOracle(order_rate=0.0, answers={"red": "blue"}), [first, second]) == [
        Python(code="a = 1"), Python(code="b = 2")]
