"""Which MiniWoB++ tasks the installed ``miniwob`` package ships, found without importing it.

Every HTML task under ``html/miniwob/`` and every environment id in ``miniwob/registration.py`` (the three
FlightWoB sites) is listed; categories come from AgentLab's table (``categories.json``).
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_REGISTERED = re.compile(r'id="miniwob/([A-Za-z0-9_.\-]+)-v1"')


def miniwob_package_dir() -> Path:
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the 'miniwob' package is not installed (pip install 'mintgym[web]')")
    return Path(next(iter(spec.submodule_search_locations)))


def miniwob_html_dir() -> Path:
    """The installed package's ``html`` folder (tasks, core.js, flight sites)."""
    path = miniwob_package_dir() / "html"
    if not (path / "miniwob").is_dir():
        raise FileNotFoundError(f"the miniwob package at {path.parent} ships no html/miniwob folder")
    return path


@dataclass(frozen=True)
class MiniWobEntry:
    name: str
    #: Path of the page under the host's ``/miniwob/`` mount.
    path: str
    category: str
    comment: str
    #: True when MiniWoB's own gymnasium registry has it (False: HTML only, e.g. simon-says).
    in_gym_registry: bool

    @property
    def is_flight(self) -> bool:
        return self.name.startswith("flight.")


@lru_cache(maxsize=1)
def entries() -> tuple[MiniWobEntry, ...]:
    base = miniwob_package_dir()
    html = {p.stem for p in (base / "html" / "miniwob").glob("*.html")}
    registered = set(_REGISTERED.findall((base / "registration.py").read_text()))
    table = json.loads((Path(__file__).parent / "categories.json").read_text())
    out = []
    for name in sorted(html | registered):
        if name.startswith("flight."):
            path = "flight/" + name.split(".", 1)[1] + "/wrapper.html"
        else:
            path = f"miniwob/{name}.html"
        row = table.get(name, {"category": "unlisted", "comment": ""})
        out.append(MiniWobEntry(name, path, row["category"], row["comment"], name in registered))
    return tuple(out)
