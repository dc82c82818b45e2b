"""Layer 0: which MintGym extra provides the module an import error names as missing.

A domain's pack that imports a module of an extra not installed (``Xlib`` without ``mintgym[desktop]``) fails
with ``ModuleNotFoundError``; every place that reports it (``mintgym envs``, ``tasks``, an unknown task id, a
command's one error line) names the extra to install instead, read from the installed package's metadata.
"""

from __future__ import annotations

import importlib.metadata
import re

#: Import names that differ from their distribution's name (the others are the name, less a python-/py prefix).
_IMPORT_NAMES = {"cv2": "opencv-python-headless", "bs4": "beautifulsoup4", "skimage": "scikit-image",
                 "fitz": "pymupdf", "PIL": "pillow"}


def missing_module(error: str) -> str | None:
    """The top-level module ``No module named 'x.y'`` in ``error`` names (``x``), else None."""
    found = re.search(r"No module named '([^']+)'", error)
    return found.group(1).split(".")[0] if found else None


def missing_extra(error: str, pack: str | None = None) -> str | None:
    """The MintGym extra whose install provides the module an import ``error`` names as missing (the one named
    like ``pack`` when several do); None when no extra does."""
    module = missing_module(error)
    if module is None:
        return None
    try:
        requires = importlib.metadata.metadata("mintgym").get_all("Requires-Dist") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    wanted = _IMPORT_NAMES.get(module, module).lower().replace("_", "-")
    extras = []
    for requirement in requires:
        found = re.match(r"\s*([A-Za-z0-9._-]+).*extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        if not found or found.group(2) == "all":
            continue
        dist = found.group(1).lower().replace("_", "-")
        if wanted in (dist, dist.removeprefix("python-"), dist.removeprefix("py")):
            extras.append(found.group(2))
    if not extras:
        return None
    return pack if pack in extras else extras[0]


def install_hint(error: str, pack: str | None = None) -> str | None:
    """``needs 'Xlib', from the desktop extra: pip install 'mintgym[desktop]'`` for an import ``error`` that an
    extra would fix, else None.

    >>> install_hint("ModuleNotFoundError: No module named 'no_such_module_anywhere'") is None
    True
    """
    extra = missing_extra(error, pack)
    if extra is None:
        return None
    return f"needs {missing_module(error)!r}, from the {extra} extra: pip install 'mintgym[{extra}]'"
