"""The import contracts of DESIGN.md section 1, checked on the source: data flows one way, and the
interface layers import nothing heavy. (import-linter cannot follow setup.py's folder mapping.)"""

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "ray", "playwright", "fastapi", "uvicorn", "httpx", "aiohttp", "transformers", "vllm", "Xlib")


def imports_of(folder_or_file: Path) -> dict[str, set[str]]:
    files = [folder_or_file] if folder_or_file.is_file() else sorted(folder_or_file.rglob("*.py"))
    found = {}
    for path in files:
        names = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(REPO))] = names
    return found


def offenders(paths: list[str], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for path in paths:
        for file, names in imports_of(REPO / path).items():
            for name in names:
                if any(name == f or name.startswith(f + ".") for f in forbidden):
                    bad.append(f"{file} imports {name}")
    return bad


def test_action_spaces_import_nothing_heavy_nor_the_core():
    forbidden = HEAVY + ("mintgym.env", "mintgym.server", "mintgym.client", "mintgym.runtime", "mintgym.rollout",
                         "mintgym.environments", "mintgym.agents", "mintgym.evals")
    assert offenders(["action_spaces"], forbidden) == []


def test_layer_0_and_1_stay_light():
    forbidden = HEAVY + ("mintgym.server", "mintgym.client", "mintgym.runtime", "mintgym.rollout",
                         "mintgym.environments", "mintgym.agents")
    assert offenders(["mintgym/types.py", "mintgym/errors.py", "mintgym/spaces.py", "mintgym/wire.py",
                      "mintgym/policy.py", "mintgym/env"], forbidden) == []


def test_environments_and_agents_never_meet():
    assert offenders(["environments"], ("mintgym.agents",)) == []
    assert offenders(["agents"], ("mintgym.environments",)) == []


def test_core_names_no_plugin():
    """The core never imports a domain or a benchmark (plug-ins register themselves)."""
    core = [p for p in ("mintgym/env", "mintgym/server", "mintgym/client", "mintgym/runtime", "mintgym/rollout",
                        "mintgym/trajectory") if (REPO / p).exists()]
    assert offenders(core, ("mintgym.environments", "mintgym.evals")) == []


@pytest.mark.parametrize("module", ["mintgym", "mintgym.action_spaces"])
def test_import_is_cheap(module):
    import subprocess
    import sys

    code = f"import sys, {module}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing {module} pulled in {out}"


def _layer(path: Path) -> int | None:
    import re

    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    found = re.match(r"Layer (\d+)", doc)
    return int(found.group(1)) if found else None


def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        for candidate in (REPO.joinpath(*parts[:end]).with_suffix(".py"), REPO.joinpath(*parts[:end], "__init__.py")):
            if candidate.exists():
                return candidate
    return None


def test_each_core_module_imports_only_its_own_or_lower_layers():
    """Every module whose docstring names its layer (DESIGN.md section 1); imports inside functions count too."""
    layers = {path: _layer(path) for path in sorted((REPO / "mintgym").rglob("*.py"))}
    upward = []
    for path, layer in layers.items():
        if layer is None:
            continue
        for name in imports_of(path)[str(path.relative_to(REPO))]:
            target = _module_file(name) if name.startswith("mintgym.") else None
            if target is not None and (layers.get(target) or 0) > layer:
                upward.append(f"{path.relative_to(REPO)} (layer {layer}) imports {name} (layer {layers[target]})")
    assert upward == []
    assert sum(layer is not None for layer in layers.values()) > 40  # the check reads the docstrings it means to


CORE_PACKAGES = ("mintgym/env", "mintgym/server", "mintgym/client", "mintgym/runtime", "mintgym/rollout", "mintgym/cli",
                 "mintgym/trainer", "mintgym/rl", "mintgym/inference", "mintgym/buffer", "mintgym/weights",
                 "mintgym/trajectory", "mintgym/policy.py", "agents")


def _plugin_names() -> set[str]:
    """Every registered domain and task pack, read from the entry points (a new one is covered as it registers)."""
    from importlib.metadata import entry_points

    return {ep.name for group in ("mintgym.environments", "mintgym.tasks") for ep in entry_points(group=group)}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def plugin_literals(paths: tuple[str, ...], names: set[str]) -> list[str]:
    """``file:line: 'literal'`` for each string literal (docstrings aside) that is a plug-in's name or a task id
    under one (``"<name>/..."``)."""
    bad = []
    for path in paths:
        root = REPO / path
        for file in [root] if root.is_file() else sorted(root.rglob("*.py")):
            tree = ast.parse(file.read_text(), str(file))
            docstrings = _docstring_nodes(tree)
            for node in ast.walk(tree):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                        and (node.value in names or node.value.split("/")[0] in names and "/" in node.value)):
                    bad.append(f"{file.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    return bad


def test_core_keeps_no_table_of_plugins():
    """Domains and packs declare their own options, task-file fields, flags and prompt lines; the core reads
    them through the registry and never spells a plug-in's name (DESIGN.md: a new domain touches no core file)."""
    names = _plugin_names()
    assert {"null", "pytool"} <= names  # the check reads the names it means to
    assert plugin_literals(CORE_PACKAGES, names) == []


def test_the_plugin_name_check_can_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "core.py").write_text('"""Names pytool in a docstring only."""\nTABLE = {"pytool": 1, "x": '
                                      '"pytool/a-0"}\n')
    assert plugin_literals(("core.py",), {"pytool"}) == ["core.py:2: 'pytool'", "core.py:2: 'pytool/a-0'"]
