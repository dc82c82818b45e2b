"""Behaviour-cloning data through the front door: the pytool oracle played by ``mintgym eval``, replayed through
the answer agent by ``mintgym export --agent``, tokenized and trained on by :mod:`mintgym.trainer.sft`."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

_spec = importlib.util.spec_from_file_location("mintgym_tests_outside_imitation",
                                               Path(__file__).parents[1] / "cli" / "outside.py")
outside = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(outside)
mintgym = outside.mintgym

COLOURS = ["red", "green", "blue", "yellow", "purple", "orange", "cyan", "pink"]
PANEL = [8, 36, 488, 396]
OPTIONS = {"pick": "modulo", "choices": {"pytool": COLOURS}, "crop": {"pytool": PANEL}, "image_size": [112, 84]}


def _truth(seed: int) -> str:
    from mintgym.environments.pytool import generators as G

    rng = random.Random(seed)
    return G.largest_area(0, random.Random(f"pytool/largest-area-0:{rng.getrandbits(64)}"), "/tmp/unused.png").truth


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("oracle")
    proc = mintgym("eval", "--tasks", "pytool/largest-area-0", "--agent", "scripted", "--episodes", "3",
                   "--seed", "5", "--out", str(run))
    assert proc.returncode == 0, proc.stderr
    return run


def test_export_leaves_out_the_episodes_on_skipped_seeds(oracle_run, tmp_path):
    """What a warm start's held-out check asks for: the dataset again, without the held-out seeds' episodes."""
    import datasets

    from mintgym.trajectory.store import iter_run

    seeds = sorted(traj.seed for _, traj in iter_run(oracle_run))
    skipped = seeds[0]
    for agent in ([], ["--agent", "answer", "--agent-options", json.dumps(OPTIONS)]):
        data = tmp_path / f"data{len(agent)}"
        proc = mintgym("export", str(oracle_run), "--out", str(data), "--skip-seed", str(skipped), *agent)
        assert proc.returncode == 0, proc.stderr
        assert sorted(set(datasets.load_from_disk(str(data))["seed"])) == [s for s in seeds if s != skipped]


def test_the_answer_agent_learns_the_oracles_answer_on_the_first_screen(oracle_run, tmp_path):
    data = tmp_path / "bc"
    proc = mintgym("export", str(oracle_run), "--out", str(data), "--agent", "answer",
                   "--agent-options", json.dumps(OPTIONS))
    assert proc.returncode == 0 and "3 steps from 3 episodes" in proc.stdout, proc.stderr
    import datasets

    from mintgym.trajectory.store import iter_run

    rows = {r["trajectory_id"]: r for r in datasets.load_from_disk(str(data))}
    assert len(rows) == 3
    for path, traj in iter_run(oracle_run):
        row = rows[traj.id]
        truth = _truth(traj.seed)
        # the oracle ran code, then answered: the record is its answer, on the screen before the code ran
        assert [s.action["type"] for s in traj.steps] == ["python", "done"]
        assert row["response_token_ids"] == [COLOURS.index(truth)] and json.loads(row["action"])["answer"] == truth
        assert row["step"] == 1 and row["seed"] == traj.seed
        first = np.asarray(Image.open(path / traj.steps[0].screenshot).convert("RGB"))
        from mintgym.agents.vlm import resize_image

        shown = resize_image(first[PANEL[1]:PANEL[3], PANEL[0]:PANEL[2]], (112, 84))
        assert np.array_equal(np.asarray(row["images"][0].convert("RGB")), shown)
        [message] = json.loads(row["messages"])
        assert message["content"][0] == {"type": "image", "image": 0}
        assert "Options: 0) red" in message["content"][1]["text"]


def test_export_refuses_what_it_cannot_imitate(oracle_run, tmp_path):
    for args, said in (
        (("--agent", "scripted"), "imitation data is made for a training agent"),
        (("--agent", "vlm"), "--agent vlm needs --model"),
        (("--agent", "answer", "--agent-options", "{nope"), "--agent-options is not JSON"),
        (("--agent", "answer", "--agent-options", json.dumps({"choices": {"web": ["a"]}})),
         "no successful steps under"),
    ):
        proc = mintgym("export", str(oracle_run), "--out", str(tmp_path / "x"), *args)
        assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert said in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def tiny_vlm_path(tmp_path_factory) -> str:
    from mintgym.models.tiny import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny-vlm"), seed=0, vocab_size=256)


def test_supervised_steps_train_on_the_engines_own_tokens(oracle_run, tmp_path, tiny_vlm_path):
    """The warm start's sequences are the ones the sampler builds for the same prompt, and its loss falls."""
    import datasets

    from mintgym.inference import GenerationRequest, SamplingParams
    from mintgym.inference.hf import HFEngine
    from mintgym.trainer.sft import dataset_sequences, supervised_steps

    data = tmp_path / "bc"
    assert mintgym("export", str(oracle_run), "--out", str(data), "--agent", "answer",
                   "--agent-options", json.dumps(OPTIONS)).returncode == 0
    dataset = datasets.load_from_disk(str(data))
    engine = HFEngine(tiny_vlm_path)
    sequences = dataset_sequences(dataset, engine.model, engine.processor)
    row = dataset[0]
    messages = json.loads(row["messages"])
    messages[0]["content"][0]["image"] = np.asarray(row["images"][0].convert("RGB"))
    [gen] = engine.generate([GenerationRequest(messages, SamplingParams(max_new_tokens=1))])
    assert sequences[0].token_ids[:sequences[0].prompt_length] == gen.prompt_token_ids
    assert sequences[0].token_ids[sequences[0].prompt_length:] == row["response_token_ids"]
    losses = supervised_steps(engine.model, sequences, steps=12, lr=3e-3, batch_size=3)
    assert losses[-1] < losses[0] / 2, losses


def test_a_blind_students_data_shows_it_the_black_image_it_would_see(oracle_run, tmp_path):
    data = tmp_path / "blind"
    proc = mintgym("export", str(oracle_run), "--out", str(data), "--agent", "answer",
                   "--agent-options", json.dumps({**OPTIONS, "blind": True}))
    assert proc.returncode == 0, proc.stderr
    import datasets

    for row in datasets.load_from_disk(str(data)):
        image = np.asarray(row["images"][0].convert("RGB"))
        assert image.shape == (84, 112, 3) and not image.any()
        assert json.loads(row["messages"])[0]["content"][0] == {"type": "image", "image": 0}
