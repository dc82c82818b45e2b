"""Loaders for the ScreenSpot family, read from the layouts their authors publish.

* **ScreenSpot (v1)**, SeeClick's release: ``screenspot_{mobile,desktop,web}.json`` next to an image folder
  (``screenspot_imgs/``); each item has ``img_filename``, ``bbox`` = [x, y, w, h] in pixels, ``instruction``,
  ``data_type`` (text | icon) and ``data_source`` (ios, android, windows, macos, shop, forum, gitlab, tool).
* **ScreenSpot-v2** (OS-Copilot): the same items in ``screenspot_{mobile,desktop,web}_v2.json`` with the
  images in ``screenspotv2_image/``.
* **ScreenSpot-Pro** (likaixin/ScreenSpot-Pro): ``annotations/<app>_<platform>.json`` and ``images/``; each
  item has ``img_filename``, ``bbox`` = [x1, y1, x2, y2] in pixels, ``img_size``, ``instruction``,
  ``instruction_cn``, ``id``, ``group``, ``platform``, ``application`` and ``ui_type``.
* **Hugging Face parquet/arrow** copies (``rootsautomation/ScreenSpot``, ScreenSpot-v2 mirrors): rows with
  ``bbox``, ``instruction``, ``data_type``, ``data_source`` and an ``image`` column, read with
  ``datasets.load_dataset("parquet", ...)`` or ``datasets.load_from_disk``. A ``bbox`` whose four values are
  all within [0, 1] is normalized [x1, y1, x2, y2] (rootsautomation's form); otherwise it is v1's pixel
  [x, y, w, h].

Every loader returns :class:`GroundingSample` records with the box as pixel [x1, y1, x2, y2].
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The three splits of ScreenSpot v1/v2 and the ``data_source`` values each one holds.
SPLIT_OF_SOURCE = {"ios": "mobile", "android": "mobile", "windows": "desktop", "macos": "desktop"}
SPLITS = ("mobile", "desktop", "web")
VERSIONS = ("v1", "v2", "pro")
_V1_IMAGE_DIRS = ("screenspot_imgs", "images", "imgs")
_V2_IMAGE_DIRS = ("screenspotv2_image", "screenspot_imgs", "images", "imgs")


@dataclass
class GroundingSample:
    """One grounding instruction: an image, the text, and the target box in pixels."""

    id: str
    benchmark: str
    instruction: str
    #: Target box (x1, y1, x2, y2) in pixels of the image at its native size (None: a Pro negative sample may lack it).
    bbox: tuple[float, float, float, float] | None
    #: ``text`` or ``icon``.
    ui_type: str
    #: Pro: windows/macos/linux; v1/v2: the split (mobile, desktop, web).
    platform: str
    group: str | None = None
    application: str | None = None
    #: v1/v2 ``data_source`` (ios, android, windows, macos, shop, forum, gitlab, tool).
    source: str | None = None
    #: (width, height) when the annotation gives it; otherwise read from the image.
    img_size: tuple[int, int] | None = None
    image_path: str | None = None
    lang: str = "en"
    instruction_style: str = "instruction"
    gt_type: str = "positive"
    #: Pro: the Chinese instruction (``instruction_cn``), used when ``lang`` is ``cn``.
    instruction_cn: str | None = None
    #: Pro: the annotation file's stem (the official ``task_filename``).
    task: str | None = None
    #: Opens the image (PIL) when no path is given (rows of a parquet/arrow dataset).
    open_image: Callable[[], Any] | None = field(default=None, repr=False)

    def image(self):
        """The screenshot as an RGB PIL image at its native size."""
        from PIL import Image

        if self.open_image is not None:
            img = self.open_image()
        elif self.image_path:
            img = Image.open(self.image_path)
        else:
            raise ValueError(f"sample {self.id!r} has neither an image path nor an image")
        return img.convert("RGB")

    @property
    def key(self) -> str:
        """The sample's identity in a run: its id, with its style, ground truth and language when not the default."""
        if (self.instruction_style, self.gt_type, self.lang) == ("instruction", "positive", "en"):
            return self.id
        return f"{self.id}|{self.instruction_style}|{self.gt_type}|{self.lang}"

    def record(self) -> dict[str, Any]:
        """The sample's fields in the Pro results layout (what the breakdowns group by)."""
        return {"img_path": self.image_path or "", "group": self.group, "platform": self.platform,
                "application": self.application, "lang": self.lang, "instruction_style": self.instruction_style,
                "prompt_to_evaluate": self.instruction, "gt_type": self.gt_type, "ui_type": self.ui_type,
                "task_filename": self.task or self.benchmark, "bbox": None if self.bbox is None else list(self.bbox),
                "id": self.id, "key": self.key, "source": self.source}


def load_screenspot(path: str | Path, version: str | None = None, *, lang: str = "en") -> list[GroundingSample]:
    """Samples of a local ScreenSpot v1, v2 or Pro copy; ``version`` is guessed from the layout when None.

    ``lang="cn"`` gives Pro's Chinese instructions (the official ``--language cn``).
    """
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"no ScreenSpot data at {root}")
    if version is not None and version not in VERSIONS:
        raise ValueError(f"unknown ScreenSpot version {version!r}; known: {', '.join(VERSIONS)}")
    if lang not in ("en", "cn"):
        raise ValueError(f"lang must be 'en' or 'cn', got {lang!r}")
    if _is_hf_dataset(root):
        samples = load_hf(root, version or "v1")
    elif version == "pro" or (version is None and (root / "annotations").is_dir()):
        samples = load_pro(root)
    else:
        samples = load_v1_json(root, version or ("v2" if list(root.glob("screenspot_*_v2.json")) else "v1"))
    if samples[0].benchmark == "screenspot-pro":
        return expand_pro(samples, ("instruction",), ("positive",), (lang,))
    if lang != "en":
        raise ValueError("Chinese instructions (lang 'cn') exist only in ScreenSpot-Pro")
    return samples


def load_v1_json(root: Path, version: str = "v1") -> list[GroundingSample]:
    """ScreenSpot v1 or v2 in SeeClick's JSON layout (bbox [x, y, w, h] in pixels).

    Every field SeeClick's screenspot_test.py reads is required, ``data_source`` included: there a missing
    one is caught by its bare ``except`` after the sample was counted (screenspot_test.py:100-108), which
    counts it twice; here it is refused.
    """
    suffix = "_v2" if version == "v2" else ""
    image_dir = _first_dir(root, _V2_IMAGE_DIRS if version == "v2" else _V1_IMAGE_DIRS)
    samples = []
    found = False
    for split in SPLITS:
        file = root / f"screenspot_{split}{suffix}.json"
        if not file.is_file():
            continue
        found = True
        for i, item in enumerate(_read_json_list(file)):
            where = f"{file.name}[{i}]"
            x, y, w, h = _four_numbers(item.get("bbox"), where)
            samples.append(GroundingSample(
                id=f"{split}-{i}", benchmark=f"screenspot{'-v2' if version == 'v2' else ''}",
                instruction=_text(item, "instruction", where), bbox=(x, y, x + w, y + h),
                ui_type=_text(item, "data_type", where), platform=split, source=_text(item, "data_source", where),
                image_path=str(image_dir / _text(item, "img_filename", where))))
    if not found:
        raise FileNotFoundError(f"{root} holds no screenspot_{{mobile,desktop,web}}{suffix}.json")
    return samples


def load_pro(root: Path) -> list[GroundingSample]:
    """ScreenSpot-Pro: ``annotations/*.json`` (bbox [x1, y1, x2, y2], img_size) and ``images/``.

    The fields eval_screenspot_pro.py reads are required as there (``id``, ``img_filename``, ``img_size``,
    ``platform``, ``application``, ``ui_type``, ``instruction``: lines 383-413); ``group`` may be missing
    (None, line 406); ``bbox`` may be missing only for negative ground truth (it is read for positive, line
    138). Two samples with one ``id`` are refused.
    """
    files = sorted((root / "annotations").glob("*.json"))
    if not files:
        raise FileNotFoundError(f"{root / 'annotations'} holds no .json annotation files")
    samples: list[GroundingSample] = []
    seen: dict[str, str] = {}
    for file in files:
        for i, item in enumerate(_read_json_list(file)):
            where = f"{file.name}[{i}]"
            if item.get("id") is None:
                raise ValueError(f"{where}: field 'id' is missing")
            ident = str(item["id"])
            if ident in seen:
                raise ValueError(f"{where}: sample id {ident!r} is also {seen[ident]}; ids must be unique")
            seen[ident] = where
            cn = item.get("instruction_cn")
            samples.append(GroundingSample(
                id=ident, benchmark="screenspot-pro", instruction=_text(item, "instruction", where),
                instruction_cn=cn if isinstance(cn, str) else None,
                bbox=_four_numbers(item["bbox"], where) if "bbox" in item else None,
                ui_type=_text(item, "ui_type", where), platform=_text(item, "platform", where),
                group=item.get("group"), application=_text(item, "application", where), task=file.stem,
                img_size=_size(item.get("img_size"), where),
                image_path=str(root / "images" / _text(item, "img_filename", where))))
    return samples


def pro_image_sizes(root: Path) -> dict[str, tuple[int, int]]:
    """Each Pro sample's image size, by its id and by its ``img_filename`` (to rescore a results file exactly)."""
    sizes: dict[str, tuple[int, int]] = {}
    for s in load_pro(Path(root)):
        sizes[s.id] = sizes[Path(str(s.image_path)).relative_to(Path(root) / "images").as_posix()] = s.img_size  # type: ignore[assignment]
    return sizes


def expand_pro(samples: Sequence[GroundingSample], styles: Sequence[str], gt_types: Sequence[str],
               languages: Sequence[str]) -> list[GroundingSample]:
    """Each Pro sample once per instruction style, ground-truth type and language, in the official order.

    As eval_screenspot_pro.py:361-386: per annotation file, per style, per ground truth, per language, every
    item. The instruction text is the same for every style (the script only labels it); ``cn`` takes
    ``instruction_cn`` and, as there, only with the ``instruction`` style and positive ground truth.
    """
    for lang in languages:
        if lang == "cn" and (set(styles) != {"instruction"} or set(gt_types) != {"positive"}):
            raise ValueError("Chinese instructions (language cn) exist only for the 'instruction' style and "
                             "positive ground truth, as in eval_screenspot_pro.py")
    by_task: dict[str | None, list[GroundingSample]] = {}
    for s in samples:
        by_task.setdefault(s.task, []).append(s)
    out = []
    for task_samples in by_task.values():
        for style, gt, lang in itertools.product(styles, gt_types, languages):
            for s in task_samples:
                if lang == "cn" and s.instruction_cn is None:
                    raise ValueError(f"sample {s.id}: no instruction_cn for language cn")
                if gt == "positive" and s.bbox is None:
                    raise ValueError(f"sample {s.id}: field 'bbox' is missing (positive ground truth needs it)")
                out.append(dataclasses.replace(s, instruction_style=style, gt_type=gt, lang=lang,
                                               instruction=s.instruction_cn if lang == "cn" else s.instruction))
    return out


def load_hf(root: Path, version: str = "v1") -> list[GroundingSample]:
    """A Hugging Face copy: a ``save_to_disk`` folder, or parquet files (``data/*.parquet``)."""
    import datasets

    if (root / "dataset_info.json").is_file() or (root / "dataset_dict.json").is_file():
        ds = datasets.load_from_disk(str(root))
    else:
        files = sorted(str(p) for p in (root.rglob("*.parquet") if root.is_dir() else [root]))
        ds = datasets.load_dataset("parquet", data_files=files, split="train")
    if isinstance(ds, datasets.DatasetDict):
        ds = ds["test"] if "test" in ds else ds[next(iter(ds))]
    missing = {"bbox", "instruction", "data_type", "image"} - set(ds.column_names)
    if missing:
        raise ValueError(f"{root}: not a ScreenSpot dataset, missing columns {sorted(missing)}")
    name = "screenspot-v2" if version == "v2" else "screenspot"
    samples = []
    for i, row in enumerate(ds):
        where = f"{root} row {i}"
        img = row["image"]
        box = _four_numbers(row["bbox"], where)
        if all(0.0 <= v <= 1.0 for v in box):
            w, h = img.size
            box = (box[0] * w, box[1] * h, box[2] * w, box[3] * h)
        else:
            box = (box[0], box[1], box[0] + box[2], box[1] + box[3])
        source = row.get("data_source")
        samples.append(GroundingSample(
            id=str(row.get("file_name") or row.get("img_filename") or i) + f"#{i}", benchmark=name,
            instruction=_text(row, "instruction", where), bbox=box, ui_type=_text(row, "data_type", where),
            platform=SPLIT_OF_SOURCE.get(str(source), "web"), source=source, img_size=img.size,
            open_image=lambda img=img: img))
    return samples


def _is_hf_dataset(root: Path) -> bool:
    if root.is_file():
        return root.suffix == ".parquet"
    return ((root / "dataset_info.json").is_file() or (root / "dataset_dict.json").is_file()
            or any(root.rglob("*.parquet")))


def _first_dir(root: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        if (root / name).is_dir():
            return root / name
    return root


def read_json(file: str | Path, what: str = "file") -> Any:
    """A JSON document, or FileNotFoundError / ValueError naming the file and the problem."""
    file = Path(file)
    try:
        return json.loads(file.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {file}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{file}: not valid JSON ({err})") from None


def _read_json_list(file: Path) -> list[dict[str, Any]]:
    data = read_json(file, "annotation file")
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise ValueError(f"{file}: expected a JSON list of annotation objects")
    return data


def _four_numbers(value: Any, where: str) -> tuple[float, float, float, float]:
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        raise ValueError(f"{where}: bbox must be four numbers, got {value!r}")
    return float(value[0]), float(value[1]), float(value[2]), float(value[3])


def _size(value: Any, where: str) -> tuple[int, int]:
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        raise ValueError(f"{where}: img_size must be [width, height] in positive integers, got {value!r}")
    return int(value[0]), int(value[1])


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r} must be a string, got {value!r}")  # noqa: TRY004 - bad data, not a bad call
    return value
