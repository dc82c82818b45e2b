"""Official outcomes of MintGym's ScreenSpot differential cases, produced by running the official scoring code.

The official scripts load models; here their model parts are replaced by stand-ins that answer each sample
with the case's prepared response, and everything else (reading the annotations, expanding instruction
styles / ground-truth types / languages, the point-in-box test, the outcome classes, the metric tables and,
for ScreenSpot-Pro, the results file) is the official code, imported from folders the caller gives:

    python benchmarks/differential/screenspot.py \
        --seeclick /tmp/official/seeclick --seeclick-commit <sha> \
        --pro /tmp/official/pro --pro-commit <sha> \
        --out tests/evals/screenspot/differential/screenspot_cases.json

``--seeclick`` holds SeeClick's ``pretrain/screenspot_test.py`` and ``process_utils.py`` (njucckevin/SeeClick);
``--pro`` holds ``eval_screenspot_pro.py`` (likaixin2000/ScreenSpot-Pro-GUI-Grounding). Nothing of them is
copied: the output holds the case inputs and the outcomes the official code gave on them.

A case's response is the model's own numbers in a coordinate frame. The stand-in model turns them into the
normalized point the official model wrappers return (ScreenSpot-Pro ``models/qwen2_5vl.py``: x / resized
width; ``models/cogagent24.py`` and ``models/osatlas7b.py``: x / 1000; ``models/uground.py``: x / image
width; SeeClick: the 0-1 floats as written).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import logging
import math
import runpy
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from PIL import Image

# -- the model's numbers, as the official model wrappers normalize them ------------------------------------


def wrapper_point(frame: str, point: list[float] | None, img_size: list[int]) -> list[float] | None:
    """The normalized point an official model wrapper returns for ``point`` written in ``frame``."""
    if point is None:
        return None
    kind, _, arg = frame.partition(":")
    if kind == "relative":
        return [point[0], point[1]]
    if kind == "normalized_1000":
        return [point[0] / 1000, point[1] / 1000]
    if kind == "resized_absolute":
        rw, rh = (int(v) for v in arg.split("x"))
        return [point[0] / rw, point[1] / rh]
    if kind == "absolute":
        return [point[0] / img_size[0], point[1] / img_size[1]]
    raise ValueError(f"unknown frame {frame!r}")


def qwen_resized(width: int, height: int) -> tuple[int, int]:
    """Qwen2.5-VL's smart_resize as ScreenSpot-Pro's ``models/qwen2_5vl.py`` calls it (max_pixels=99999999)."""
    factor, low, high = 28, 56 * 56, 99999999
    h, w = max(factor, round(height / factor) * factor), max(factor, round(width / factor) * factor)
    if h * w > high:
        beta = math.sqrt(height * width / high)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < low:
        beta = math.sqrt(low / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return w, h


# -- the cases -----------------------------------------------------------------------------------------------

SIZES = [(1000, 800), (3000, 2000), (2560, 1440), (1919, 1079), (5120, 2880), (3840, 2160), (1366, 768)]


def _edge_points(frame: str, size: tuple[int, int], bbox: list[float]) -> list[tuple[str, list[float]]]:
    """Model numbers that land on, just inside and just outside each edge of ``bbox`` in ``frame``."""
    w, h = size
    x1, y1, x2, y2 = bbox
    cy = (y1 + y2) / 2
    kind, _, arg = frame.partition(":")
    out: list[tuple[str, list[float]]] = []
    if kind == "relative":
        cyr = cy / h
        for name, x in (("left edge", x1 / w), ("right edge", x2 / w)):
            out += [(f"{name} exactly", [x, cyr]), (f"{name} one ulp out",
                                                    [math.nextafter(x, -1 if name[0] == "l" else 2), cyr]),
                    (f"{name} 4 decimals", [round(x, 4), cyr])]
        out.append(("top edge exactly", [(x1 + x2) / 2 / w, y1 / h]))
        out.append(("bottom edge one ulp out", [(x1 + x2) / 2 / w, math.nextafter(y2 / h, 2)]))
    elif kind == "normalized_1000":
        for name, x in (("left edge", x1), ("right edge", x2)):
            v = x * 1000 / w
            out += [(f"{name} floor", [math.floor(v), round(cy * 1000 / h)]),
                    (f"{name} ceil", [math.ceil(v), round(cy * 1000 / h)])]
    elif kind == "resized_absolute":
        rw, rh = (int(v) for v in arg.split("x"))
        for name, x in (("left edge", x1), ("right edge", x2)):
            v = x * rw / w
            out += [(f"{name} floor", [math.floor(v), round(cy * rh / h)]),
                    (f"{name} ceil", [math.ceil(v), round(cy * rh / h)])]
    else:
        out += [("left edge exactly", [x1, round(cy)]), ("left edge minus half", [x1 - 0.5, round(cy)]),
                ("right edge exactly", [x2, round(cy)]), ("right edge plus half", [x2 + 0.5, round(cy)]),
                ("bottom edge plus 0.4", [round((x1 + x2) / 2), y2 + 0.4])]
    return out


def pro_point_cases() -> list[dict[str, Any]]:
    """Positive ScreenSpot-Pro samples: borders in every frame, off-image points, no point."""
    cases: list[dict[str, Any]] = []
    for w, h in SIZES:
        rw, rh = qwen_resized(w, h)
        bx1, by1 = round(w * 0.3), round(h * 0.4)
        boxes = [[bx1, by1, bx1 + 37, by1 + 23], [w - 41, h - 19, w, h], [0, 0, 13, 11]]
        for j, bbox in enumerate(boxes):
            for frame in ("relative", "normalized_1000", f"resized_absolute:{rw}x{rh}", "absolute"):
                for name, point in _edge_points(frame, (w, h), bbox):
                    cases.append({"name": f"{w}x{h} box{j} {frame.split(':')[0]} {name}", "img_size": [w, h],
                                  "bbox": bbox, "frame": frame, "point": point})
    # the two examples
    cases.append({"name": "relative 0.3002 against a right edge at 300 px", "img_size": [1000, 800],
                  "bbox": [250, 300, 300, 340], "frame": "relative", "point": [0.3002, 0.4]})
    cases.append({"name": "Qwen2.5-VL x = resized width on the right edge at 3000 px", "img_size": [3000, 2000],
                  "bbox": [2950, 900, 3000, 960],
                  "frame": f"resized_absolute:{'x'.join(map(str, qwen_resized(3000, 2000)))}",
                  "point": [qwen_resized(3000, 2000)[0], qwen_resized(3000, 2000)[1] * 0.465]})
    for name, frame, point in (("negative relative x", "relative", [-0.01, 0.5]),
                               ("relative x above 1", "relative", [1.2, 0.5]),
                               ("0-1000 grid y above 1000", "normalized_1000", [500, 1001]),
                               ("absolute x past the width", "absolute", [1000, 300]),
                               ("absolute negative y", "absolute", [300, -2]),
                               ("no point", "relative", None), ("no point, absolute frame", "absolute", None)):
        cases.append({"name": name, "img_size": [1000, 800], "bbox": [0, 200, 1000, 400], "frame": frame,
                      "point": point})
    # a stored pred just below an edge that the normalized test still counts as inside (the 122.99999999999999)
    found = 0
    for w in (1919, 2560, 3000, 3840, 5120, 1366, 1000):
        for edge in range(100, 1500, 7):
            p = edge / w
            if p * w < edge and found < 6:
                found += 1
                cases.append({"name": f"stored pred {p * w!r} for a left edge at {edge} (width {w})",
                              "img_size": [w, 1000], "bbox": [edge, 100, edge + 30, 200], "frame": "relative",
                              "point": [p, 0.15]})
    return cases


def pro_annotation(case: dict[str, Any], index: int, **fields: Any) -> dict[str, Any]:
    """The case as an item of a ScreenSpot-Pro annotation file."""
    platforms = ("windows", "macos", "linux")
    apps = (("vscode", "Dev"), ("photoshop", "Creative"), ("excel", "Office"), ("autocad", "CAD"))
    app, group = apps[index % len(apps)]
    item = {"img_filename": f"case_{index:04d}.png", "bbox": case["bbox"], "img_size": case["img_size"],
            "instruction": f"click target {index}", "instruction_cn": f"点击目标 {index}",
            "id": f"case_{index:04d}", "application": app, "platform": platforms[index % 3], "group": group,
            "ui_type": "text" if index % 2 == 0 else "icon"}
    item.update(fields)
    return item


# -- the stand-ins for the model imports ----------------------------------------------------------------------


class _Stub(types.ModuleType):
    """A module whose every attribute is a callable returning itself (from_pretrained(...).eval() ...)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self


def install_stubs(responder: Any) -> None:
    """torch, transformers and peft as stubs; SeeClick's model answers through ``responder``."""
    for name in ("torch", "transformers", "transformers.generation", "peft"):
        sys.modules[name] = _Stub(name)

    class Model:
        generation_config = None

        def eval(self) -> Model:
            return self

        def chat(self, tokenizer: Any, query: list[dict[str, str]], history: Any = None) -> tuple[str, None]:
            return responder(Path(query[0]["image"]).name), None

    class Tokenizer:
        @staticmethod
        def from_list_format(items: list[dict[str, str]]) -> list[dict[str, str]]:
            return items

    loader = types.SimpleNamespace(from_pretrained=lambda *a, **k: Model())
    sys.modules["transformers"].AutoModelForCausalLM = loader  # type: ignore[attr-defined]
    sys.modules["peft"].AutoPeftModelForCausalLM = loader  # type: ignore[attr-defined]
    sys.modules["transformers"].AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda *a, **k: Tokenizer())  # type: ignore[attr-defined]


# -- ScreenSpot-Pro ---------------------------------------------------------------------------------------------


def run_pro(pro_dir: Path, files: dict[str, list[dict[str, Any]]], responses: dict[str, dict[str, Any]],
            options: dict[str, str]) -> dict[str, Any]:
    """The official ``main`` of eval_screenspot_pro.py on these annotation files; its report or its error."""

    class Model:
        def _answer(self, instruction: str, image: str) -> dict[str, Any]:
            r = responses[Path(image).name]
            return {"point": r["official_point"], "raw_response": r["raw_response"], "result": r.get("result")}

        ground_only_positive = ground_allow_negative = _answer

    factory = types.ModuleType("model_factory")
    factory.build_model = lambda args: Model()  # type: ignore[attr-defined]
    sys.modules["model_factory"] = factory
    sys.path.insert(0, str(pro_dir))
    try:
        module = importlib.import_module("eval_screenspot_pro")
    finally:
        sys.path.remove(str(pro_dir))
    module.build_model = factory.build_model  # bound by its first import: each run answers with its own responses
    with tempfile.TemporaryDirectory() as tmp:
        ann = Path(tmp) / "annotations"
        ann.mkdir()
        for name, items in files.items():
            (ann / f"{name}.json").write_text(json.dumps(items, ensure_ascii=False))
        log = Path(tmp) / "out" / "results.json"
        args = argparse.Namespace(model_type="stub", model_name_or_path=None, screenspot_imgs="/images",
                                  screenspot_test=str(ann), task=",".join(files), log_path=str(log),
                                  inst_style=options.get("inst_style", "instruction"),
                                  language=options.get("language", "en"), gt_type=options.get("gt_type", "positive"))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                module.main(args)
        except Exception as err:  # noqa: BLE001 - the official code refused the input: that is the outcome
            return {"error": type(err).__name__, "message": str(err)}
        return json.loads(log.read_text())


# -- SeeClick (ScreenSpot v1; v2 uses the same scoring) ------------------------------------------------------------


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_seeclick(seeclick_dir: Path, splits: dict[str, list[dict[str, Any]]], sizes: dict[str, list[int]],
                 texts: dict[str, str]) -> dict[str, Any]:
    """SeeClick's screenspot_test.py over these split files; per-sample verdicts (from its log) and tables."""
    install_stubs(lambda name: texts[name])
    handler = _Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        imgs, test = Path(tmp) / "imgs", Path(tmp) / "test"
        imgs.mkdir()
        test.mkdir()
        for name, (w, h) in sizes.items():
            Image.new("RGB", (w, h)).save(imgs / name)
        for split, items in splits.items():
            (test / f"screenspot_{split}.json").write_text(json.dumps(items, ensure_ascii=False))
        task = "all" if set(splits) == {"mobile", "desktop", "web"} else next(iter(splits))
        sys.argv = ["screenspot_test.py", "--qwen_path", "stub", "--lora_path", "stub", "--screenspot_imgs",
                    str(imgs), "--screenspot_test", str(test), "--task", task]
        sys.path.insert(0, str(seeclick_dir))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                scope = runpy.run_path(str(seeclick_dir / "screenspot_test.py"), run_name="__main__")
            outcome: dict[str, Any] = {"tasks_result": scope["tasks_result"]}
        except Exception as err:  # noqa: BLE001 - SeeClick's script crashed on the input: that is the outcome
            outcome = {"error": type(err).__name__, "message": str(err)}
        finally:
            sys.path.remove(str(seeclick_dir))
            sys.modules.pop("process_utils", None)
            root.removeHandler(handler)
    verdicts = []
    for line in handler.lines:
        if line.startswith("match "):
            verdicts.append("correct")
        elif line.startswith("unmatch "):
            verdicts.append("wrong")
        elif line.startswith("Step: ") and line.endswith("wrong format"):
            verdicts.append("wrong_format")
    outcome["verdicts"] = verdicts
    outcome["log"] = [line for line in handler.lines if line.split(":")[0] in
                      ("Action Acc", "Total num", "Wrong format num", "Text Acc", "Icon Acc")]
    return outcome


def seeclick_cases() -> list[dict[str, Any]]:
    """ScreenSpot v1 samples: SeeClick's 0-1 points and Qwen <box> answers at borders, off-image, unparseable."""
    cases: list[dict[str, Any]] = []
    splits = ("mobile", "desktop", "web")
    sources = {"mobile": ("ios", "android"), "desktop": ("windows", "macos"), "web": ("shop", "forum")}
    for i, (w, h) in enumerate([(1170, 2532), (1920, 1080), (2880, 1800), (1280, 720)]):
        split = splits[i % 3]
        x, y, bw, bh = round(w * 0.3), round(h * 0.6), 57, 31
        for k, (name, frame, point, text) in enumerate([
            ("left edge exactly", "relative", [x / w, (y + 10) / h], None),
            ("left edge one ulp out", "relative", [math.nextafter(x / w, -1), (y + 10) / h], None),
            ("right edge exactly", "relative", [(x + bw) / w, (y + 10) / h], None),
            ("right edge 2 decimals", "relative", [round((x + bw) / w, 2), round((y + 10) / h, 2)], None),
            ("bottom edge 3 decimals", "relative", [(x + 5) / w, round((y + bh) / h, 3)], None),
            ("qwen box centred on the left edge", "normalized_1000", None,
             (math.floor(x * 1000 / w) - 1, math.floor(x * 1000 / w) + 1)),
            ("qwen box centred right of the right edge", "normalized_1000", None,
             (math.ceil((x + bw) * 1000 / w), math.ceil((x + bw) * 1000 / w) + 1)),
            ("four numbers: a box whose centre is inside", "relative", None, "box"),
            ("negative x", "relative", [-0.2, (y + 10) / h], None),
            ("x above 1", "relative", [1.5, (y + 10) / h], None),
            ("no coordinates", "relative", None, "none"),
            ("three numbers", "relative", None, "three"),
        ]):
            cy = round((y + bh / 2) * 1000 / h)
            if isinstance(text, tuple):
                response = f"<box>({text[0]},{cy}),({text[1]},{cy})</box>"
                point = [(text[0] + text[1]) / 2, float(cy)]
            elif text == "box":
                response = f"({(x + 2) / w:.4f},{(y + 2) / h:.4f},{(x + bw - 2) / w:.4f},{(y + bh - 2) / h:.4f})"
                nums = [float(v) for v in response.strip("()").split(",")]
                point = [(nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2]
            elif text == "none":
                response, point = "I cannot find that element.", None
            elif text == "three":
                response, point = "(0.31, 0.62, 0.5)", None
            else:
                response = f"({point[0]!r},{point[1]!r})"
            data_type = "text" if k % 2 == 0 else "icon"
            cases.append({"name": f"{w}x{h} {name}", "split": split, "img_size": [w, h], "bbox": [x, y, bw, bh],
                          "data_type": data_type, "data_source": sources[split][k % 2], "response": response,
                          "frame": frame, "point": point, "img_filename": f"v1_{i}_{k}.png",
                          "instruction": f"target {i}.{k} ✓"})
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeclick", type=Path, required=True)
    parser.add_argument("--seeclick-commit", required=True)
    parser.add_argument("--pro", type=Path, required=True)
    parser.add_argument("--pro-commit", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    # SeeClick's run (its model stand-in must be installed before the Pro module is imported: both import torch)
    v1 = seeclick_cases()
    splits: dict[str, list[dict[str, Any]]] = {"mobile": [], "desktop": [], "web": []}
    for case in v1:
        splits[case["split"]].append({k: case[k] for k in ("img_filename", "bbox", "instruction", "data_type",
                                                            "data_source")})
    sizes = {c["img_filename"]: c["img_size"] for c in v1}
    texts = {c["img_filename"]: c["response"] for c in v1}
    seeclick = run_seeclick(args.seeclick, splits, sizes, texts)
    ordered = [c for split in ("mobile", "desktop", "web") for c in v1 if c["split"] == split]
    for case, verdict in zip(ordered, seeclick["verdicts"], strict=True):
        case["official"] = verdict
    seeclick_records = []
    broken = dict(ordered[0])
    for missing in ("data_source", "data_type", "bbox"):
        item = {k: broken[k] for k in ("img_filename", "bbox", "instruction", "data_type", "data_source")}
        item.pop(missing)
        out = run_seeclick(args.seeclick, {"mobile": [item]}, {broken["img_filename"]: broken["img_size"]},
                           {broken["img_filename"]: broken["response"]})
        seeclick_records.append({"name": f"item without {missing}", "item": item, "img_size": broken["img_size"],
                                 "response": broken["response"], "official": out})

    # ScreenSpot-Pro runs
    points = pro_point_cases()
    items, responses = [], {}
    for i, case in enumerate(points):
        item = pro_annotation(case, i)
        if i % 9 == 4:
            item.pop("group")  # official records get group None
        items.append(item)
        official_point = wrapper_point(case["frame"], case["point"], case["img_size"])
        responses[item["img_filename"]] = {"official_point": official_point, "raw_response": json.dumps(case["point"]),
                                           "frame": case["frame"], "point": case["point"]}
    files = {"cases_windows": items[: len(items) // 2], "cases_macos": items[len(items) // 2:]}
    pro_runs = [{"name": "positive points in every frame", "options": {}, "files": files,
                 "responses": responses, "cases": points}]

    mixed = [pro_annotation(c, i) for i, c in enumerate(points[:24])]
    mixed[3]["instruction"] = "Klicke auf „Speichern“ — 保存 🙂"
    mixed_responses = {}
    for i, (item, case) in enumerate(zip(mixed, points[:24], strict=True)):
        result = ("negative", "positive", "wrong_format")[i % 3]
        point = None if result == "wrong_format" else wrapper_point(case["frame"], case["point"], case["img_size"])
        mixed_responses[item["img_filename"]] = {"official_point": point, "raw_response": result, "result": result,
                                                 "frame": case["frame"],
                                                 "point": None if point is None else case["point"]}
    for item in mixed[::5]:
        item.pop("group")
    pro_runs.append({"name": "every instruction style and ground-truth type", "files": {"mixed_linux": mixed},
                     "options": {"inst_style": "all", "gt_type": "all", "language": "en"},
                     "responses": mixed_responses})
    pro_runs.append({"name": "negative ground truth only", "files": {"mixed_linux": mixed},
                     "options": {"inst_style": "instruction", "gt_type": "negative", "language": "en"},
                     "responses": mixed_responses})
    pro_runs.append({"name": "Chinese instructions", "files": {"mixed_linux": mixed},
                     "options": {"inst_style": "instruction", "gt_type": "positive", "language": "cn"},
                     "responses": mixed_responses})
    pro_runs.append({"name": "Chinese instructions with the action style", "files": {"mixed_linux": mixed[:2]},
                     "options": {"inst_style": "action", "gt_type": "positive", "language": "cn"},
                     "responses": mixed_responses})
    pro_runs.append({"name": "both languages", "files": {"mixed_linux": mixed[:4]},
                     "options": {"inst_style": "instruction", "gt_type": "positive", "language": "all"},
                     "responses": mixed_responses})
    dup = [pro_annotation(points[0], 0), pro_annotation(points[1], 1, id="case_0000")]
    pro_runs.append({"name": "two samples with one id", "files": {"dup_windows": dup}, "options": {},
                     "responses": {d["img_filename"]: responses[d["img_filename"]] for d in dup}})
    for field in ("platform", "application", "ui_type", "id", "img_size", "bbox", "instruction_cn"):
        item = pro_annotation(points[0], 0)
        item.pop(field)
        options = {"language": "cn"} if field == "instruction_cn" else {}
        pro_runs.append({"name": f"annotation without {field}", "files": {"broken_windows": [item]},
                         "options": options, "responses": {item["img_filename"]: responses[item["img_filename"]]}})
    item = pro_annotation(points[0], 0)
    item.pop("bbox")
    pro_runs.append({"name": "negative annotation without bbox", "files": {"broken_windows": [item]},
                     "options": {"gt_type": "negative"},
                     "responses": {item["img_filename"]: {**responses[item["img_filename"]], "result": "negative"}}})
    for run in pro_runs:
        run["official"] = run_pro(args.pro, run["files"], run["responses"], run["options"])
        if "cases" in run:
            verdicts = {d["id"]: d for d in run["official"]["details"]}
            for i, case in enumerate(run["cases"]):
                case["official"] = verdicts[f"case_{i:04d}"]["correctness"]

    doc = {
        "about": "ScreenSpot differential cases and the outcomes the official code gave on them "
                 "(benchmarks/differential/screenspot.py); MintGym's scorers must agree on every case.",
        "official": {
            "seeclick": {"repository": "njucckevin/SeeClick", "commit": args.seeclick_commit,
                         "files": ["pretrain/screenspot_test.py", "pretrain/process_utils.py"]},
            "pro": {"repository": "likaixin2000/ScreenSpot-Pro-GUI-Grounding", "commit": args.pro_commit,
                    "files": ["eval_screenspot_pro.py"]}},
        "seeclick": {"cases": v1, "official": {k: v for k, v in seeclick.items() if k != "verdicts"},
                     "records": seeclick_records},
        "pro": pro_runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, ensure_ascii=False))
    print(f"wrote {args.out}: {len(v1)} SeeClick point cases, {len(seeclick_records)} SeeClick item cases, "
          f"{len(points)} Pro point cases, {len(pro_runs)} Pro runs")


if __name__ == "__main__":
    main()
