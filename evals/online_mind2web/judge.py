"""WebJudge: Online-Mind2Web's LLM-as-a-judge, run as the authors run it against any OpenAI-compatible model.

The procedure is the authors' ``WebJudge_Online_Mind2Web_eval`` (src/methods/webjudge_online_mind2web.py)
and ``auto_eval`` (src/run.py) of OSU-NLP-Group/Online-Mind2Web, with the prompts of :class:`JudgePrompts`
(the authors', read from the user's copy by :func:`~.official.load_official`, or MintGym's labelled fallback):

1. **Key points**: one call with the task; :func:`~.rules.key_points_of` cuts the answer.
2. **Screenshots**: one call per screenshot (all of them, JPEG, ``detail: high``);
   :func:`~.rules.rate_screenshot` reads each score and thought, :func:`~.rules.select_screenshots` keeps
   those rated at least ``score_threshold`` (at most ``MAX_IMAGE``).
3. **Verdict**: the task, key points, numbered action history and kept screenshots with their thoughts;
   :func:`~.rules.predicted_label` reads the answer.

Requests carry the authors' image parts as they build them (JPEG bytes; labelled ``image/jpeg`` for a
screenshot's rating and ``image/png`` in the verdict, as their code labels them) and their token limits.
"""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from mintgym.evals.online_mind2web.prompts import JudgePrompts
from mintgym.evals.online_mind2web.results import read_result
from mintgym.evals.online_mind2web.rules import (
    key_points_of,
    numbered,
    predicted_label,
    rate_screenshot,
    select_screenshots,
)
from mintgym.inference.base import InferenceEngine
from mintgym.inference.types import GenerationRequest, SamplingParams


class ImageJudgement(BaseModel):
    """One screenshot's rating (the authors' ``image_judge_record`` entry, with the file's name)."""

    model_config = ConfigDict(extra="forbid")

    image: str
    Response: str
    Score: int


class Verdict(BaseModel):
    """WebJudge's judgment of one task, as written to ``<task_id>/judge.json``."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    predicted_label: int
    key_points: str
    image_judge_record: list[ImageJudgement]
    kept_images: list[str]
    input_text: str
    response: str
    #: The prompts' label (official with commit, or the MintGym fallback).
    prompts: str
    #: What made the verdict: prompt source and hash, model, threshold; a re-run must match it.
    judge: dict[str, Any]

    @property
    def success(self) -> bool:
        return self.predicted_label == 1


def encode_image(path: Path) -> str:
    """Base64 JPEG of a screenshot, as the authors' ``encode_image`` makes it (src/utils.py: RGBA made RGB,
    PIL's default JPEG quality)."""
    from PIL import Image, UnidentifiedImageError

    try:
        image = Image.open(path)
        if image.mode == "RGBA":
            image = image.convert("RGB")
        buffered = io.BytesIO()
        image.save(buffered, format="JPEG")
    except (OSError, UnidentifiedImageError) as err:
        raise ValueError(f"{path}: the authors' judge cannot send this screenshot as JPEG ({err})") from None
    return base64.b64encode(buffered.getvalue()).decode("utf-8")


def _image_part(path: Path, mime: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encode_image(path)}", "detail": "high"}}


class WebJudge:
    """Judges Online-Mind2Web results with a multimodal model behind ``engine``.

    Args:
        engine: an OpenAI-compatible engine (the image parts are OpenAI ``image_url`` parts).
        prompts: the authors' (``load_official``) or the fallback (``mintgym_fallback``).
        score_threshold: keep screenshots rated at least this (the authors' ``--score_threshold``, 3).
        max_new_tokens: one token limit for every call instead of the prompts' own.
    """

    def __init__(self, engine: InferenceEngine, prompts: JudgePrompts, *, score_threshold: int = 3,
                 max_new_tokens: int | None = None):
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.engine, self.prompts, self.score_threshold = engine, prompts, score_threshold
        self.max_new_tokens = max_new_tokens

    def key(self) -> dict[str, Any]:
        """What makes this judge's verdicts comparable: prompts, model, threshold and token limit."""
        ensure = getattr(self.engine, "ensure_model", None)
        model = ensure() if callable(ensure) else getattr(self.engine, "model", None)
        p = self.prompts
        return {"prompts": p.source, "commit": p.commit, "sha256": p.sha256, "model": model,
                "score_threshold": self.score_threshold, "max_new_tokens": self.max_new_tokens}

    def _ask(self, batch: list[tuple[str, list[dict[str, Any]], int]]) -> list[str]:
        requests = [GenerationRequest([{"role": "system", "content": system}, {"role": "user", "content": parts}],
                                      SamplingParams(max_new_tokens=self.max_new_tokens or tokens,
                                                     temperature=self.prompts.temperature))
                    for system, parts, tokens in batch]
        return [g.text for g in self.engine.generate(requests)]

    def judge(self, task_id: str, task: Any, action_history: list[Any], screenshots: list[Path],
              names: list[str] | None = None) -> Verdict:
        """Judge one task from its description, the actions it lists and its screenshots in order (``names``:
        how the verdict names them, by default their file names)."""
        p = self.prompts
        names = names or [s.name for s in screenshots]
        text = p.key_points_user.format(task=task)
        [raw] = self._ask([(p.key_points_system, [{"type": "text", "text": text}], p.key_points_max_tokens)])
        key_points = key_points_of(raw)
        question = p.image_user.format(task=task, key_points=key_points)
        answers = self._ask([(p.image_system, [{"type": "text", "text": question}, _image_part(s, "image/jpeg")],
                              p.image_max_tokens) for s in screenshots])
        ratings = [rate_screenshot(a) for a in answers]
        chosen = select_screenshots(ratings, self.score_threshold, p.max_images)
        template = p.verdict_user if chosen.kept else p.verdict_user_no_images
        text = template.format(task=task, last_actions=numbered(action_history), key_points=key_points,
                               thoughts=numbered(chosen.thoughts))
        parts = [{"type": "text", "text": text}, *(_image_part(screenshots[i], "image/png") for i in chosen.kept)]
        [response] = self._ask([(p.verdict_system, parts, p.verdict_max_tokens)])
        return Verdict(
            task_id=task_id, predicted_label=predicted_label(response), key_points=key_points,
            image_judge_record=[ImageJudgement(image=n, Response=a, Score=r.score)
                                for n, a, r in zip(names, answers, ratings, strict=True)],
            kept_images=[names[i] for i in chosen.kept], input_text=text, response=response,
            prompts=p.label, judge=self.key())

    def judge_folder(self, folder: str | Path) -> Verdict:
        """Judge one ``<task_id>/`` result folder (either result format)."""
        result = read_result(folder)
        names = [os.path.relpath(s, Path(folder) / "trajectory") for s in result.screenshots]
        return self.judge(result.task_id, result.task, result.action_history, result.screenshots, names)


def _differences(old: dict[str, Any], new: dict[str, Any]) -> str:
    return ", ".join(f"{k} {old.get(k)!r} vs {new.get(k)!r}" for k in sorted(set(old) | set(new))
                     if old.get(k) != new.get(k))


def judge_results(results_root: str | Path, judge: WebJudge, out: str | Path | None = None) -> list[Verdict]:
    """Judge every ``<task_id>/`` folder under ``results_root`` (each must hold result.json, as the authors'
    run.py requires); each verdict goes to ``<task_id>/judge.json`` (or under ``out``). A folder judged
    before by the same judge is read back; one judged by another (prompts, model, threshold) is refused."""
    root = Path(results_root)
    if not root.is_dir():
        raise FileNotFoundError(f"no results folder at {root}")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    if not folders:
        raise FileNotFoundError(f"{root} has no <task_id>/result.json folders")
    lacking = next((f for f in folders if not (f / "result.json").is_file()), None)
    if lacking is not None:
        raise ValueError(f"{lacking} has no result.json: the results folder must hold task folders only")
    key = judge.key()
    verdicts = []
    for folder in folders:
        target = (Path(out) / folder.name if out else folder) / "judge.json"
        if target.is_file():
            try:
                verdict = Verdict.model_validate_json(target.read_text())
            except ValidationError:
                raise ValueError(f"{target} is not a verdict of this judge's format: "
                                 "remove it to judge again") from None
            if verdict.judge != key:
                raise ValueError(f"{target} was judged by another judge ({_differences(verdict.judge, key)}): "
                                 f"remove it or judge into another --out")
            verdicts.append(verdict)
            continue
        try:
            verdict = judge.judge_folder(folder)
        except ValueError as err:
            raise ValueError(f"{folder.name}: {err}") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(verdict.model_dump(), indent=1))
        verdicts.append(verdict)
    return verdicts
