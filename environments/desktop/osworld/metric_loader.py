"""Load OSWorld's own metric functions from the ``desktop-env`` package, one module at a time.

``desktop_env/evaluators/metrics/__init__.py`` imports every metric module, and one of them (``docs.py``)
imports ``easyocr`` at module level, which pulls torch/torchvision builds that clash with MintGym's. So the
package is installed without its dependencies (``pip install --no-deps desktop-env``, plus the light
libraries of the ``osworld`` extra) and this module loads single metric modules without running that
``__init__``: the ``metrics`` package object is created from its spec but not executed, then
``desktop_env.evaluators.metrics.<module>`` is imported the ordinary way. The metric code runs unchanged.

Two things are set around it, never inside it:

* a module-level import that is deliberately not installed (:data:`PLACEHOLDERS`) is served by a
  placeholder module while its metric module loads; anything taken from it raises
  :class:`MissingDependency` when a metric actually *uses* it, naming the package to install;
* ``tldextract`` (used by ``compare_urls``) would fetch the public suffix list from the internet; unless
  the user configured it, the list bundled with tldextract is used (``TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS``
  set to empty before tldextract is first imported).

Example:
    >>> from mintgym.environments.desktop.osworld.metric_loader import function_index
    >>> function_index().get("compare_table")  # doctest: +SKIP
    'table'
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

PACKAGE = "desktop_env.evaluators.metrics"
DISTRIBUTION = "desktop-env==1.0.2"
INSTALL_HINT = (f"pip install --no-deps '{DISTRIBUTION}' && pip install -e '.[osworld]' "
                "(OSWorld's metric functions; see README, 'OSWorld scoring')")
#: Module-level imports of metric modules that MintGym does not install, and why.
PLACEHOLDERS = {
    "easyocr": "OCR for docs.compare_image_text; it pulls a CUDA torchvision that breaks MintGym's CPU torch",
    "pydrive": "the Google Drive getters, which need the user's own Google account",
}
#: Submodules of a placeholder that desktop-env imports from (``from pydrive.auth import GoogleAuth``).
PLACEHOLDER_SUBMODULES = {"pydrive": ("auth", "drive")}
GETTERS_PACKAGE = "desktop_env.evaluators.getters"


_LOADING = threading.RLock()  # metrics run in worker threads; the placeholders are process-wide while held


class DesktopEnvMissing(ImportError):
    """The desktop-env package (OSWorld's metric code) is not installed."""


class MissingDependency(BaseException):
    """A metric used a library MintGym leaves out (:data:`PLACEHOLDERS`).

    A BaseException on purpose: OSWorld's metrics wrap much of their work in ``except Exception`` and would
    turn a missing library into a silent score; this must reach the caller instead.
    """


class _Unavailable:
    """Stands in for an attribute of a placeholder module; using it raises :class:`MissingDependency`."""

    def __init__(self, dotted: str):
        self._dotted = dotted

    def _fail(self) -> MissingDependency:
        root = self._dotted.split(".")[0]
        return MissingDependency(f"this OSWorld metric needs {self._dotted}, but {root!r} is not installed "
                                 f"({PLACEHOLDERS.get(root, 'not part of the osworld extra')}); "
                                 f"install it with 'pip install {root}' to use this metric")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._fail()


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unavailable(f"{self.__name__}.{name}")


def package_dir() -> Path | None:
    """The installed ``desktop_env/evaluators/metrics`` folder, or None without desktop-env."""
    try:
        spec = importlib.util.find_spec("desktop_env")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "evaluators" / "metrics"
    return folder if (folder / "__init__.py").is_file() else None


def available() -> bool:
    """True when desktop-env's metric modules can be loaded."""
    return package_dir() is not None


@functools.cache
def function_index() -> dict[str, str]:
    """Metric name -> metric module (``"table"``), read from the package ``__init__`` without running it."""
    folder = package_dir()
    if folder is None:
        return {}
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    index: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                index[alias.asname or alias.name] = node.module
    return index


def _bare_package(dotted: str, folder: Path) -> types.ModuleType:
    """The package object ``dotted`` (``desktop_env.evaluators.metrics`` or ``.getters``), created but not
    executed (its ``__init__`` imports every module of the package)."""
    existing = sys.modules.get(dotted)
    if existing is not None:
        return existing
    importlib.import_module("desktop_env.evaluators")  # both __init__ files are empty
    spec = importlib.util.spec_from_file_location(dotted, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    if dotted == PACKAGE:
        # ``from desktop_env.evaluators.metrics import name`` still works: names resolve through this loader.
        package.__getattr__ = _package_getattr  # type: ignore[attr-defined]
    sys.modules[dotted] = package
    setattr(sys.modules["desktop_env.evaluators"], dotted.rsplit(".", 1)[1], package)
    return package


def _package_getattr(name: str) -> Any:
    if name in function_index():
        return load_function(name)
    raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")


def _offline_suffix_list() -> None:
    if "tldextract" not in sys.modules:
        os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")


@functools.cache
def load_module(short: str) -> types.ModuleType:
    """Import ``desktop_env.evaluators.metrics.<short>`` (e.g. ``"table"``) without the package ``__init__``.

    Raises:
        DesktopEnvMissing: desktop-env is not installed.
        ImportError: a library the module imports is missing (the message names it).
    """
    folder = package_dir()
    if folder is None:
        raise DesktopEnvMissing(f"OSWorld's metric functions need the desktop-env package: {INSTALL_HINT}")
    if not (folder / f"{short}.py").is_file():
        raise ValueError(f"desktop-env has no metric module {short!r} (modules: "
                         f"{', '.join(sorted(set(function_index().values())))})")
    with _LOADING:
        return _import(folder, short)


def _import(folder: Path, short: str, dotted: str = PACKAGE) -> types.ModuleType:
    _bare_package(dotted, folder)
    _offline_suffix_list()
    placed = []
    for name in PLACEHOLDERS:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            for dotted_name in (name, *(f"{name}.{sub}" for sub in PLACEHOLDER_SUBMODULES.get(name, ()))):
                sys.modules[dotted_name] = _PlaceholderModule(dotted_name)
                placed.append(dotted_name)
    try:
        return importlib.import_module(f"{dotted}.{short}")
    except ImportError as err:
        raise ImportError(f"desktop-env's module {dotted}.{short} cannot be imported: {err}; "
                          f"install the osworld extra: {INSTALL_HINT}") from err
    finally:
        # The loaded module keeps its reference; nobody else should mistake the placeholder for the library.
        for name in placed:
            del sys.modules[name]


@functools.cache
def load_getter_module(short: str) -> types.ModuleType:
    """Import ``desktop_env.evaluators.getters.<short>`` (e.g. ``"chrome"``) without the package ``__init__``."""
    folder = package_dir()
    if folder is None:
        raise DesktopEnvMissing(f"OSWorld's getter functions need the desktop-env package: {INSTALL_HINT}")
    with _LOADING:
        return _import(folder.parent / "getters", short, GETTERS_PACKAGE)


def load_function(name: str) -> Callable[..., Any]:
    """desktop-env's metric function ``name``, loaded through :func:`load_module`."""
    module = function_index().get(name)
    if module is None:
        if not available():
            raise DesktopEnvMissing(f"OSWorld's metric functions need the desktop-env package: {INSTALL_HINT}")
        raise KeyError(f"desktop-env has no metric function {name!r}")
    return getattr(load_module(module), name)
