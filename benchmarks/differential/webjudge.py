"""Official outcomes of MintGym's WebJudge differential cases, produced by running the authors' judge code.

Each case is a result folder (result.json in either format, a trajectory of small images) with scripted
model answers: the key points, one answer per screenshot, the verdict. The authors' ``auto_eval``
(``src/run.py``) judges it in a temporary folder with its own ``WebJudge_Online_Mind2Web_eval``
(``src/methods/webjudge_online_mind2web.py``) and ``extract_predication`` (``src/utils.py``), imported from the
folder the caller gives; only the model is a stand-in that answers from the script (and the ``openai`` and
``backoff`` modules, which the authors' code imports for its network client, are empty stand-ins):

    python benchmarks/differential/webjudge.py --official /tmp/official/online-mind2web/src \
        --source "run.py: OSU-NLP-Group/Online-Mind2Web@ccdeb0d6..." \
        --out tests/evals/online_mind2web/differential/webjudge_cases.json

Nothing of the authors' code or prompts is copied: the output holds the case inputs and what their code
gave: the key points, the scores and screenshot order of its ``image_judge_record``, the screenshots in its
verdict call, the action list and thoughts of its verdict text (cut out of the text with the verdict
template's own fields, the wording dropped), the predicted label, or the exception it raised; and SHA-256
hashes of each call's system message and text, so that a test with a real copy of the repository can check
MintGym's requests word for word without the repository holding the wording.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib
import io
import json
import os
import re
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

from PIL import Image

MODE = "WebJudge_Online_Mind2Web_eval"
TASK_ID = "a1b2c3"

# -- cases ----------------------------------------------------------------------------------------------------

KEY_POINTS = "**Key Points**:\n1. Open the page\n\n2. Sort by price"
GOOD_IMAGE = "**Reasoning**: The sorted list is shown.\n\n**Score**: 5"
SUCCESS = "Thoughts: all key points met.\nStatus: success"


def palette(i: int) -> list[int]:
    """A colour per file, far enough apart to tell apart after JPEG."""
    return [(40 + 67 * i) % 256, (90 + 151 * i) % 256, (200 + 29 * i) % 256]


def v1(actions: Any = ("click(a)", "type(b)"), task: Any = "Find the cheapest item", **extra: Any) -> dict:
    return {"task_id": TASK_ID, "task": task, "action_history": list(actions) if isinstance(actions, tuple)
            else actions, **extra}


def case(name: str, *, result: dict | None = None, files: list[Any] = ("0.png",), images: dict | None = None,
         verdict: str = SUCCESS, key_points: str = KEY_POINTS, threshold: int = 3) -> dict[str, Any]:
    """A case: ``files`` are names (a png of the next colour) or ``{name, kind}``; ``images`` answers by name."""
    entries = None if files is None else []
    for i, f in enumerate(files or ()):
        entry = {"name": f, "kind": "png"} if isinstance(f, str) else dict(f)
        entry.setdefault("colour", palette(i))
        entries.append(entry)
    answers = {e["name"]: GOOD_IMAGE for e in entries or ()}
    answers.update(images or {})
    return {"name": name, "result": result if result is not None else v1(), "files": entries,
            "image_responses": answers, "key_points_response": key_points, "verdict_response": verdict,
            "score_threshold": threshold}


def status_cases() -> list[dict]:
    verdicts = {
        "plain success": "Thoughts: ok\nStatus: success",
        "plain failure": "Thoughts: no\nStatus: failure",
        "quoted success": 'Thoughts: ok\nStatus: "success"',
        "first failure then success": "Status: failure\nStatus: success",
        "first success then failure": "Status: success\nStatus: failure",
        "space before colon": "Thoughts: ok\nStatus : success",
        "lower case": "status: success",
        "upper case": "STATUS: SUCCESS",
        "title case value": "Status: Success!",
        "status inside thoughts first": "Thoughts: the order status: pending\nStatus: success",
        "unsuccessful": "Status: unsuccessful",
        "not a success": "Status: not a success",
        "empty": "",
        "no status line": "The task was a success.",
        "bold status no colon inside": "**Status**: success",
        "bold status colon inside": "**Status:** success",
        "no space": "Status:success",
        "newline after colon": "Status:\nsuccess",
        "failure then success words": "Status: failure. Otherwise a success",
        "success only in thoughts": "Thoughts: success everywhere\nStatus: failure",
        "blank line between two": "Status: Failure\n\nStatus: Success",
        "status at end": "Thoughts: hmm\nStatus:",
        "success in later text": "Status: failure\nThoughts: success",
        "two on one line": "status: success status: failure",
        "bold value": "Status: **success**",
        "fullwidth letters": "\uff33\uff54\uff41\uff54\uff55\uff53: success",
        "fullwidth colon": "Status\uff1a success",
        "cyrillic s in success": "Status: \u0455uccess",
        "zero width space in status": "Sta\u200btus: success",
        "dotted capital I before": "\u0130 Status: success",
        "markdown heading": "## Status: success",
        "success uppercase in failure line": "Status: FAILURE (SUCCESS criteria unmet)",
        "json like": '{"status": "success"}',
        "status colon in json": '{"status:": "failure", "result": "success"}',
        "crlf": "Thoughts: ok\r\nStatus: success\r\n",
        "tab after colon": "Status:\tsuccess",
    }
    return [case(f"status: {k}", verdict=v) for k, v in verdicts.items()]


def score_cases() -> list[dict]:
    answers = {
        "bold form": "**Reasoning**: A form.\n\n**Score**: 4",
        "plain form": "Reasoning: A form.\nScore: 4",
        "lower case score": "Reasoning: x\nscore: 4",
        "upper case score": "Reasoning: x\nSCORE: 5",
        "score 10": "**Reasoning**: x\n**Score**: 10",
        "score 0": "**Reasoning**: x\n**Score**: 0",
        "score 6 then 5": "**Reasoning**: x\n**Score**: 6 (of 5)",
        "placeholder range": "**Reasoning**: x\n**Score**: [1-5]",
        "two score lines": "**Reasoning**: x\nScore: 2\nScore: 5",
        "no digit then score": "**Reasoning**: x\nScore: none\nScore: 5",
        "scores word first": "Scores are low. Score: 4",
        "scoreboard digit": "The Scoreboard shows 3 teams\nScore: 1",
        "score before reasoning": "**Score**: 4\n**Reasoning**: after",
        "two reasonings": "**Reasoning**: first\n**Reasoning**: second\n\n**Score**: 3",
        "reasoning paragraphs": "**Reasoning**: line one\nline two\n\nmore\n**Score**: 3",
        "empty reasoning at end": "**Score**: 5\n**Reasoning**:",
        "fullwidth digit": "**Reasoning**: x\n**Score**: \uff14",
        "arabic digit": "**Reasoning**: x\n**Score**: \u0664",
        "empty": "",
        "score word only": "Score",
        "decimal": "**Reasoning**: x\n**Score**: 3.5",
        "negative": "**Reasoning**: x\n**Score**: -4",
        "bold reasoning no colon": "**Reasoning** the page\n**Score**: 4",
        "digits in reasoning": "**Reasoning**: 2 filters applied\n**Score**: none",
    }
    return [case(f"score: {k}", images={"0.png": v}) for k, v in answers.items()]


def key_point_cases() -> list[dict]:
    answers = {
        "bold": "**Key Points**:\n1. a\n\n2. b",
        "plain": "Key Points:\n  1. a\n  2. b",
        "bold twice": "**Key Points**: x **Key Points**: y",
        "lower case": "key points: 1. a",
        "plain twice": "Key Points: a\nKey Points: b",
        "colon inside bold": "**Key Points:**\n1. a",
        "triple newline": "**Key Points**:\n\n\n1. a",
        "crlf": "Key Points:\r\n\r\n1. a\r\n2. b",
        "line separator": "Key Points: a\u2028  b",
        "empty": "",
        "preamble": "Here you go.\n**Key Points**:\n   - a\n   - b",
    }
    return [case(f"key points: {k}", key_points=v) for k, v in answers.items()]


def selection_cases() -> list[dict]:
    files = ["0.png", "1.png", "2.png", "3.png"]
    scored = {"0.png": "**Reasoning**: zero\n**Score**: 2", "1.png": "**Reasoning**: one\n**Score**: 3",
              "2.png": "no rating at all", "3.png": "**Reasoning**: three\n**Score**: 5"}
    out = [case(f"threshold {t}", files=files, images=scored, threshold=t) for t in (1, 2, 3, 4, 5, 6)]
    out.append(case("threshold 0, unrated screenshot after a rated one", files=files, images=scored, threshold=0))
    out.append(case("threshold -1, first screenshot unrated", files=files, threshold=-1,
                    images={**scored, "0.png": "nothing"}))
    out.append(case("none kept", files=files, threshold=3, images={f: "**Reasoning**: r\n**Score**: 1" for f in files}))
    out.append(case("kept with empty thought", files=files, threshold=3,
                    images={"0.png": "**Score**: 5\n**Reasoning**:", "1.png": "**Reasoning**: one\n**Score**: 4",
                            "2.png": "**Score**: 1", "3.png": "**Reasoning**: \n\n**Score**: 3"}))
    many = [f"{i}.png" for i in range(53)]
    answers = {f: ("**Score**: 5\n**Reasoning**:" if i % 10 == 0 else f"**Reasoning**: shot {i}\n**Score**: 4")
               for i, f in enumerate(many)}
    out.append(case("more than MAX_IMAGE kept", files=many, images=answers))
    out.append(case("no screenshots", files=[]))
    return out


def format_cases() -> list[dict]:
    def step(i: int, **kw: Any) -> dict:
        return {"step": i, "screenshot": f"{i:04d}.png", "url": "https://x.test", "action": f"act {i}",
                "action_status": None, "thought": f"t{i}", **kw}

    def v2(steps: Any, **kw: Any) -> dict:
        return {"schema_version": "online-mind2web-v2", "task": "Find it", "task_id": TASK_ID,
                "agent_final_answer": "done", "reference_length": 3, "action_history": steps, **kw}

    def names(steps: list[dict]) -> list[str]:
        return [s["screenshot"] for s in steps]

    three = [step(0), step(1), {**step(2), "action": "TASK_COMPLETE -> ANSWER: done"}]
    return [
        case("v1 numeric order", files=["10.png", "2.png", "1.png", "0.png"]),
        case("v1 names with prefixes", files=["step_3.png", "step_12.png", "shot-1-final.png"]),
        case("v1 number after letters and second number", files=["a9b1.png", "x10y0.png", "z2.png"]),
        case("v1 jpeg and png", files=["1.jpg", "0.png", "2.jpeg"]),
        case("v1 file without a number", files=["0.png", "cover.png"]),
        case("v1 non-image file", files=["0.png", {"name": "1.txt", "kind": "text"}]),
        case("v1 palette image", files=["0.png", {"name": "1.png", "kind": "palette"}]),
        case("v1 rgba image", files=["0.png", {"name": "1.png", "kind": "rgba"}]),
        case("v1 grey image", files=[{"name": "0.png", "kind": "grey"}]),
        case("v1 grey with alpha", files=[{"name": "0.png", "kind": "grey_alpha"}]),
        case("v1 no action_history", result={"task_id": TASK_ID, "task": "t"}),
        case("v1 action_history null", result=v1(None)),
        case("v1 action_history a string", result=v1("abc")),
        case("v1 action_history a number", result=v1(7)),
        case("v1 action_history an object", result=v1({"click": 1, "type": 2})),
        case("v1 action_history of mixed values", result=v1([1, None, {"a": "b"}, ["x"], "ok"])),
        case("v1 empty action_history", result=v1([])),
        case("v1 unicode actions", result=v1(["click(\u00e9l\u00e9ment)", "type(\u6771\u4eac)", "\U0001f600"])),
        case("v1 task a number", result=v1(task=42)),
        case("v1 task with braces", result=v1(task="Find {item} under {price}")),
        case("v1 no task", result={"task_id": TASK_ID, "action_history": []}),
        case("v1 no trajectory folder", files=None),
        case("v1 empty trajectory folder", files=[]),
        case("v1 done action kept", result=v1(["click(a)", 'done(answer="x")'])),
        case("v2 drops the last action", result=v2(three), files=names(three)),
        case("v2 single step", result=v2([three[2]]), files=names(three)[2:]),
        case("v2 empty steps", result=v2([]), files=[]),
        case("v2 step without screenshot", result=v2([step(0), {"step": 1, "action": "x"}]), files=["0000.png"]),
        case("v2 middle step without action", result=v2([step(0), {"step": 1, "screenshot": "0001.png"}, step(2)]),
             files=["0000.png", "0001.png", "0002.png"]),
        case("v2 last step without action", result=v2([step(0), {"step": 1, "screenshot": "0001.png"}]),
             files=["0000.png", "0001.png"]),
        case("v2 screenshot missing on disk", result=v2([step(0), step(1)]), files=["0000.png"]),
        case("v2 order from steps not names", result=v2([step(2), step(0), step(1)]),
             files=["0000.png", "0001.png", "0002.png"]),
        case("v2 same screenshot twice", result=v2([step(0), {**step(1), "screenshot": "0000.png"}]),
             files=["0000.png"]),
        case("v2 extra files ignored", result=v2([step(0), step(1)]), files=["0000.png", "0001.png", "notes.txt"]),
        case("v2 screenshot in a subfolder", result=v2([{**step(0), "screenshot": "sub/0000.png"}, step(1)]),
             files=["sub/0000.png", "0001.png"]),
        case("v2 action objects", result=v2([{**step(0), "action": {"type": "click"}}, step(1)]),
             files=["0000.png", "0001.png"]),
        case("other schema version read as v1", result=v2([step(0), step(1)], schema_version="online-mind2web-v3"),
             files=["0000.png", "0001.png"]),
        case("v2 schema version not a string", result=v2([step(0)], schema_version=2), files=["0000.png"]),
    ]


def all_cases() -> list[dict]:
    return status_cases() + score_cases() + key_point_cases() + selection_cases() + format_cases()


# -- running the authors' code ---------------------------------------------------------------------------------


def write_folder(root: Path, c: dict) -> Path:
    """The case's ``<task_id>/`` folder under ``root``."""
    folder = root / TASK_ID
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(c["result"]))
    if c["files"] is None:
        return folder
    (folder / "trajectory").mkdir()
    for f in c["files"]:
        path = folder / "trajectory" / f["name"]
        path.parent.mkdir(parents=True, exist_ok=True)
        colour = tuple(f["colour"])
        if f["kind"] == "text":
            path.write_text("not an image")
            continue
        image = Image.new("RGB", (16, 12), colour)
        image = {"png": image, "palette": image.convert("P"), "rgba": image.convert("RGBA"),
                 "grey": image.convert("L"), "grey_alpha": image.convert("LA")}[f["kind"]]
        image.save(path, format="JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else "PNG")
    return folder


def _stand_in_modules() -> None:
    """Empty ``openai`` and ``backoff`` modules: the authors' utils import them for the network client only."""
    openai = types.ModuleType("openai")
    for name in ("APIConnectionError", "APIError", "RateLimitError"):
        setattr(openai, name, type(name, (Exception,), {}))
    openai.AzureOpenAI = openai.OpenAI = object
    backoff = types.ModuleType("backoff")
    backoff.expo = None
    backoff.on_exception = lambda *a, **k: (lambda fn: fn)
    sys.modules.setdefault("openai", openai)
    sys.modules.setdefault("backoff", backoff)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ScriptedModel:
    """The model: answers each call of the authors' code from the case's script, and keeps a hash of the
    system message and text of each kind of call (so a copy's wording can be checked without storing it)."""

    def __init__(self, c: dict):
        self.case, self.text_calls, self.verdict_images, self.lock = c, 0, None, threading.Lock()
        self.hashes: dict[str, str] = {}

    def generate(self, messages: list[dict], **_: Any) -> list[str]:
        system, parts = messages[0]["content"], messages[1]["content"]
        shots = [p["image_url"]["url"].split("IMG:", 1)[1] for p in parts if p.get("type") == "image_url"]
        with self.lock:
            if len(parts) == 2 and shots and parts[1]["image_url"]["url"].startswith("data:image/jpeg"):
                kind, answer = "image", self.case["image_responses"][shots[0]]
            else:
                self.text_calls += 1
                kind = "key_points" if self.text_calls == 1 else "verdict"
                answer = self.case["key_points_response" if kind == "key_points" else "verdict_response"]
                self.verdict_images = shots if kind == "verdict" else self.verdict_images
            self.hashes.update({f"{kind}_system": sha256(system), f"{kind}_text": sha256(parts[0]["text"])})
            return [answer]


def verdict_templates(methods_file: Path) -> list[str]:
    """The verdict function's ``prompt`` literals (to cut the filled fields out of its text)."""
    tree = ast.parse(methods_file.read_text())
    func = next(n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == MODE)
    found = [(n.lineno, n.value.value) for n in ast.walk(func) if isinstance(n, ast.Assign)
             and isinstance(n.value, ast.Constant) and any(getattr(t, "id", "") == "prompt" for t in n.targets)]
    return [v for _, v in sorted(found)]


def fields_of(text: str, templates: list[str]) -> dict[str, str]:
    """The ``str.format`` fields that made ``text`` from one of ``templates`` (the last field takes the rest)."""
    import string

    for template in templates:
        parsed = list(string.Formatter().parse(template))
        last = max(i for i, (_, name, _, _) in enumerate(parsed) if name)
        pattern = "".join(re.escape(literal) + (f"(?P<{name}>.*{'' if i == last else '?'})" if name else "")
                          for i, (literal, name, _, _) in enumerate(parsed))
        match = re.fullmatch(pattern, text, re.DOTALL)
        if match:
            out = match.groupdict()
            out.setdefault("thoughts", None)
            return out
    raise ValueError("the verdict text matches no verdict template")


def run_case(src: Path, c: dict, templates: list[str]) -> dict[str, Any]:
    run = importlib.import_module("run")
    methods = importlib.import_module("methods.webjudge_online_mind2web")
    utils = importlib.import_module("utils")
    seen: dict[str, Any] = {}
    original = methods.WebJudge_Online_Mind2Web_eval

    async def observed(task, last_actions, images_path, model, score_threshold):
        seen["screenshots"] = [os.path.relpath(p, seen["trajectory"]) for p in images_path]
        return await original(task, last_actions, images_path, model, score_threshold)

    def marked(image):  # the authors' encoding runs (and fails where it fails); the model sees the file's name
        utils.encode_image(image)
        return "IMG:" + os.path.relpath(image.filename, seen["trajectory"])

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        write_folder(root, c)
        seen["trajectory"] = str(root / TASK_ID / "trajectory")
        model = ScriptedModel(c)
        args = argparse.Namespace(output_path=str(Path(tmp) / "out"), mode=MODE, model="scripted",
                                  score_threshold=c["score_threshold"], trajectories_dir=str(root))
        run.WebJudge_Online_Mind2Web_eval, methods.encode_image = observed, marked
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                run.auto_eval(args, [TASK_ID], [], threading.Lock(), model)
        except Exception as err:  # noqa: BLE001  (the authors' code failed on this case: that is the outcome)
            return {"error": type(err).__name__}
        finally:
            run.WebJudge_Online_Mind2Web_eval, methods.encode_image = original, utils.encode_image
        [line] = (Path(tmp) / "out").glob("*.json")
        record = json.loads(line.read_text().splitlines()[0])
    fields = fields_of(record["input_text"], templates)
    return {"key_points": record["key_points"], "screenshots": seen["screenshots"],
            "scores": [r["Score"] for r in record["image_judge_record"]],
            "kept": model.verdict_images, "last_actions": fields["last_actions"], "thoughts": fields["thoughts"],
            "predicted_label": record["predicted_label"], "sha256": model.hashes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="the authors' src/ folder")
    parser.add_argument("--source", action="append", required=True, help="where each official file came from")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    src = args.official.resolve()
    _stand_in_modules()
    sys.path.insert(0, str(src))
    templates = verdict_templates(src / "methods" / "webjudge_online_mind2web.py")
    cases = all_cases()
    for c in cases:
        c["official"] = run_case(src, c, templates)
    names = [c["name"] for c in cases]
    if len(set(names)) != len(names):
        raise SystemExit("case names must be unique")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    hashes = {f: hashlib.sha256((src / f).read_bytes()).hexdigest()
              for f in ("run.py", "utils.py", "methods/webjudge_online_mind2web.py")}
    head = json.dumps({"official": args.source, "sha256": hashes}, indent=1, ensure_ascii=False)[:-2]
    rows = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in cases)  # one case a line
    args.out.write_text(f"{head},\n \"cases\": [\n  {rows}\n ]\n}}\n")
    errors = sum("error" in c["official"] for c in cases)
    print(f"{len(cases)} cases ({errors} where the authors' code fails) -> {args.out}")


if __name__ == "__main__":
    main()
