"""The pytool task pack: conformance (oracle scores 1, untouched 0), determinism, answer parsing, scoring."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mintgym.action_spaces import Done, Python
from mintgym.env import registration
from mintgym.env.episode import Episode
from mintgym.environments.pytool import generators as G
from mintgym.environments.pytool.answers import parse_number, parse_point, parse_word
from mintgym.environments.pytool.host import PytoolHost
from mintgym.environments.pytool.tasks import PytoolTask, all_tasks, score
from mintgym.testing import check_task

TASKS = all_tasks()


@pytest.fixture
async def host():
    h = PytoolHost(cpu_seconds=5, wall_seconds=15)
    await h.start()
    yield h
    await h.stop()


def test_pack_size_and_ids():
    ids = [t.id for t in TASKS]
    assert len(ids) >= 40 and len(set(ids)) == len(ids)
    families = {t.family for t in TASKS}
    assert len(families) >= 4
    for t in TASKS:
        assert t.id == f"pytool/{t.family}-{t.index}"
        assert t.domain == "pytool" and t.has_oracle()


def test_registered_by_entry_points():
    assert registration.host_class("pytool") is PytoolHost
    registered = registration.tasks(prefix="pytool/")
    assert {t.id for t in registered} == {t.id for t in TASKS}


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
async def test_oracle_scores_one_untouched_zero(host, task, seed):
    report = await check_task(host, task, seed=seed)
    assert report.steps == 2  # one python cell, one done


def _instance(task: PytoolTask, seed: int) -> G.Instance:
    generate, _ = G.FAMILIES[task.family]
    rng = random.Random(f"{task.id}:{random.Random(seed).getrandbits(64)}")
    return generate(task.index, rng, "/task/image.png")


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_same_seed_same_instance_different_seed_differs(task):
    a, b, c = _instance(task, 3), _instance(task, 3), _instance(task, 4)
    assert np.array_equal(np.asarray(a.image), np.asarray(b.image))
    assert a.truth == b.truth and a.instruction == b.instruction
    assert not np.array_equal(np.asarray(a.image), np.asarray(c.image))


async def test_reset_seed_reproduces_through_the_environment(host):
    env = await host.create({})
    try:
        episode = Episode(env)
        task = next(t for t in TASKS if t.family == "locate-marker")
        await episode.reset(task, 11)
        first, truth = np.asarray(env.task_image), env.ground_truth["truth"]
        await episode.reset(task, 12)
        other = np.asarray(env.task_image)
        await episode.reset(task, 11)
        assert np.array_equal(first, np.asarray(env.task_image)) and env.ground_truth["truth"] == truth
        assert not np.array_equal(first, other)
        # the sandbox sees exactly the image the task generated
        code = ("import numpy as np\nfrom PIL import Image\n"
                "a = np.asarray(Image.open(TASK_IMAGE)); print(a.shape, int(a.sum()))")
        outcome = await episode.step(Python(code=code))
        assert outcome.info.get("error") is None
        assert env.last_output.strip() == f"{first.shape} {int(first.astype(np.int64).sum())}"
    finally:
        await env.close()


async def test_wrong_and_missing_answers_score_zero(host):
    env = await host.create({})
    try:
        episode = Episode(env)
        for family in G.FAMILIES:
            task = next(t for t in TASKS if t.family == family)
            await episode.reset(task, 5)
            truth = env.ground_truth["truth"]
            if family == "locate-marker":
                wrong = f"({truth[0] + 30}, {truth[1]})"
            elif family == "largest-area":
                wrong = next(c for c in G.PALETTE if c != truth)
            else:
                wrong = str(truth + 3)
            outcome = await episode.step(Done(answer=wrong))
            assert outcome.terminated and outcome.reward == 0.0, (family, wrong, truth)
            await episode.reset(task, 5)
            outcome = await episode.step(Done())
            assert outcome.reward == 0.0
    finally:
        await env.close()


@pytest.mark.parametrize("text,value", [("7", 7.0), ("7.0", 7.0), (" 7 ", 7.0), ("answer: 7", 7.0),
                                        ("1,234", 1234.0), ("-3.5", -3.5)])
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", [None, "", "seven", "3 or 4", "(1, 2)"])
def test_parse_number_rejects(text):
    assert parse_number(text) is None


@pytest.mark.parametrize("text", ["(120, 48)", "120,48", "x=120, y=48", "[120 48]", " ( 120.0 , 48.0 ) ",
                                  "Y: 48, X: 120"])
def test_parse_point(text):
    assert parse_point(text) == (120.0, 48.0)


@pytest.mark.parametrize("text", [None, "120", "1, 2, 3", "left"])
def test_parse_point_rejects(text):
    assert parse_point(text) is None


def test_parse_word():
    choices = ("red", "blue", "green")
    assert parse_word("Red", choices) == "red"
    assert parse_word(" the BLUE one. ", choices) == "blue"
    assert parse_word("red or blue", choices) is None
    assert parse_word("reddish", choices) is None


def test_score_rules():
    assert score("count-shapes", 7, "7.0") == 1.0 and score("count-shapes", 7, "8") == 0.0
    assert score("table-sum", 1234, "1,234") == 1.0
    assert score("bar-chart", 40, "40.4", tolerance=0.5) == 1.0
    assert score("bar-chart", 40, "41", tolerance=0.5) == 0.0
    assert score("locate-marker", (100.0, 50.0), "x=105, y=46") == 1.0
    assert score("locate-marker", (100.0, 50.0), "(120, 50)") == 0.0
    assert score("largest-area", "red", "red") == 1.0 and score("largest-area", "red", None) == 0.0
