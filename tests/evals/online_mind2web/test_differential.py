"""MintGym's WebJudge against the outcomes the authors' code gave on the same adversarial cases.

``differential/webjudge_cases.json`` was written by ``benchmarks/differential/webjudge.py``, which ran the
authors' ``auto_eval`` on each case with a scripted model (sources and hashes in the file). Here each case's
result folder is judged by :class:`WebJudge` through a loopback OpenAI-compatible server that answers from
the same script, with the miniature repository's placeholder prompts; every outcome must agree: the key
points, the screenshot order and scores, the screenshots sent to the verdict, the action list and thoughts
of the verdict text, the predicted label, and a one-line error wherever the authors' code fails.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from fastapi import FastAPI, Request
from PIL import Image

from mintgym.evals.online_mind2web.judge import WebJudge
from mintgym.evals.online_mind2web.official import METHODS, load_official
from mintgym.inference.openai import OpenAIEngine
from mintgym.testing import serve_asgi

CASES = json.loads((Path(__file__).parent / "differential" / "webjudge_cases.json").read_text())["cases"]
# The generator's own folder writer, so both sides judge the same bytes (it imports no official code).
_spec = importlib.util.spec_from_file_location(
    "mintgym_tests_webjudge_generator",
    Path(__file__).resolve().parents[3] / "benchmarks" / "differential" / "webjudge.py")
generator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generator)


def _name_of(part: dict, case: dict, mime: str) -> str:
    """The case file a request's image is, by its colour."""
    url = part["image_url"]["url"]
    assert url.startswith(f"data:{mime};base64,") and part["image_url"]["detail"] == "high"
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"), float)
    mean = pixels.reshape(-1, 3).mean(axis=0)
    files = [f for f in case["files"] if f["kind"] != "text"]
    colour = [f["colour"] if f["kind"] not in ("grey", "grey_alpha") else [np.mean(f["colour"])] * 3 for f in files]
    return files[int(np.argmin([np.linalg.norm(mean - np.asarray(c)) for c in colour]))]["name"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def scripted():
    """A loopback judge model answering the current case's script; it records the verdict call and a hash of
    each kind of call's system message and text."""
    state: dict = {}
    api = FastAPI()

    @api.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": "scripted", "object": "model"}]}

    @api.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        system, parts = body["messages"][0]["content"], body["messages"][1]["content"]
        case, prompts = state["case"], state["prompts"]
        if system == prompts.key_points_system:
            kind, answer = "key_points", case["key_points_response"]
        elif system == prompts.image_system:
            kind, answer = "image", case["image_responses"][_name_of(parts[1], case, "image/jpeg")]
        else:
            state["verdict"] = {"text": parts[0]["text"], "kept": [_name_of(p, case, "image/png") for p in parts[1:]]}
            kind, answer = "verdict", case["verdict_response"]
        state["sha256"].update({f"{kind}_system": _sha(system), f"{kind}_text": _sha(parts[0]["text"])})
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}

    with serve_asgi(api) as url:
        yield url, state


def _judge(case, prompts, scripted, tmp_path):
    """The case's folder judged by MintGym; the expected outcome; the server's record."""
    url, state = scripted
    state.clear()
    state.update(case=case, prompts=prompts, sha256={})
    folder = generator.write_folder(tmp_path, case)
    judge = WebJudge(OpenAIEngine(url, token_ids="off"), prompts, score_threshold=case["score_threshold"])
    expected = case["official"]
    if "error" in expected:
        with pytest.raises(ValueError) as err:
            judge.judge_folder(folder)
        assert "\n" not in str(err.value)
        return None, expected, state
    verdict = judge.judge_folder(folder)
    assert verdict.key_points == expected["key_points"]
    assert [r.image for r in verdict.image_judge_record] == expected["screenshots"]
    assert [r.Score for r in verdict.image_judge_record] == expected["scores"]
    assert state["verdict"]["kept"] == expected["kept"] == verdict.kept_images
    assert state["verdict"]["text"] == verdict.input_text
    assert verdict.predicted_label == expected["predicted_label"]
    return verdict, expected, state


@pytest.fixture(scope="module")
def prompts(tmp_path_factory, mini):
    return load_official(mini.build(tmp_path_factory.mktemp("repo") / "Online-Mind2Web"))


def test_there_are_at_least_100_cases_of_each_kind():
    assert len(CASES) >= 100 and len({c["name"] for c in CASES}) == len(CASES)
    kinds = {c["name"].split(":")[0].split(" ")[0] for c in CASES}
    assert {"status", "score", "key", "threshold", "v1", "v2"} <= kinds
    assert sum("error" in c["official"] for c in CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_mintgym_agrees_with_the_authors_code(case, scripted, prompts, mini, tmp_path):
    verdict, expected, _ = _judge(case, prompts, scripted, tmp_path)
    if verdict is None:
        return
    template = mini.verdict_user if expected["thoughts"] is not None else mini.verdict_user_bare
    assert verdict.input_text == template.format(task=case["result"]["task"], key_points=expected["key_points"],
                                                 last_actions=expected["last_actions"], thoughts=expected["thoughts"])


REAL = Path(os.environ.get("MINTGYM_WEBJUDGE_ROOT") or "/nonexistent")


@pytest.fixture(scope="module")
def real_prompts():
    if not (REAL / METHODS).is_file():
        pytest.skip("no copy of OSU-NLP-Group/Online-Mind2Web here (set MINTGYM_WEBJUDGE_ROOT)")
    return load_official(REAL)


@pytest.mark.parametrize("case", CASES[::6], ids=[c["name"] for c in CASES[::6]])
def test_with_a_real_copy_every_request_is_word_for_word_the_authors(case, scripted, real_prompts, tmp_path):
    verdict, expected, state = _judge(case, real_prompts, scripted, tmp_path)
    if verdict is not None:
        assert state["sha256"] == expected["sha256"]
