"""The authors' WebJudge prompts, read at run time from the user's copy of OSU-NLP-Group/Online-Mind2Web.

MintGym ships none of the authors' wording. ``--webjudge-root`` names a local copy of their repository;
this module parses (never imports) its ``src/methods/webjudge_online_mind2web.py`` with :mod:`ast` and takes:

- from ``identify_key_points``, ``judge_image`` and ``WebJudge_Online_Mind2Web_eval``: the string literals
  assigned to ``system_msg`` and ``prompt`` (the verdict's second ``prompt`` is the one used when no
  screenshot is kept);
- the module constant ``MAX_IMAGE``;
- each call's token limit: a ``max_new_tokens=`` keyword on the ``model.generate`` call, else the default of
  ``OpenaiEngine.generate`` in ``src/utils.py`` (as is the verdict's, which ``src/run.py`` calls with none),
  and that method's default ``temperature``.

Parsing rather than importing: the module imports ``src/utils.py``, which needs the ``openai`` and ``backoff``
packages, and importing runs the user's code in MintGym's process; the literals are all MintGym needs, since
the procedure and its parsing rules are MintGym's code (:mod:`.rules`), held to the authors' by the
differential cases. A folder without that file, or whose functions lack those literals, is refused in one
line. The verdict label names the commit (``git rev-parse HEAD``, "+modified" when the two files differ from
it) and the judge file's SHA-256.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from pathlib import Path

from mintgym.evals.online_mind2web.prompts import JudgePrompts, check_templates

REPOSITORY = "OSU-NLP-Group/Online-Mind2Web"
METHODS = Path("src/methods/webjudge_online_mind2web.py")
UTILS = Path("src/utils.py")
#: The functions of the judge module, in the order of the procedure.
FUNCTIONS = ("identify_key_points", "judge_image", "WebJudge_Online_Mind2Web_eval")


def _strings(func: ast.AST, name: str) -> list[str]:
    """String literals assigned to ``name`` in ``func``, in source order."""
    found = [(node.lineno, node.value.value) for node in ast.walk(func)
             if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)
             and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
    return [value for _, value in sorted(found)]


def _int_keyword(func: ast.AST, keyword: str) -> int | None:
    """The int given as ``keyword=`` to a call that passes or calls ``*.generate``, if any."""
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        callees = [node.func, *node.args]
        if not any(isinstance(c, ast.Attribute) and c.attr == "generate" for c in callees):
            continue
        for kw in node.keywords:
            if kw.arg == keyword and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, int):
                return kw.value.value
    return None


def _generate_defaults(utils: Path) -> dict[str, object]:
    """Literal defaults of ``OpenaiEngine.generate`` in ``src/utils.py`` ({} when the file lacks it)."""
    if not utils.is_file():
        return {}
    tree = ast.parse(utils.read_text(encoding="utf-8"), str(utils))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OpenaiEngine"):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "generate"):
            args = fn.args.args[len(fn.args.args) - len(fn.args.defaults):]
            return {a.arg: d.value for a, d in zip(args, fn.args.defaults, strict=True) if isinstance(d, ast.Constant)}
    return {}


def _commit(root: Path) -> str | None:
    """HEAD of the copy, "+modified" when the judge files differ from it; None outside git."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if not head:
        return None
    dirty = git("status", "--porcelain", "--", str(METHODS), str(UTILS))
    return head + ("+modified" if dirty else "")


def load_official(root: str | Path) -> JudgePrompts:
    """The authors' prompts and limits from the copy of their repository at ``root``."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise ValueError(f"--webjudge-root {root}: no such folder (give a local copy of {REPOSITORY})")
    file = root / METHODS
    if not file.is_file():
        raise ValueError(f"{root} is not a copy of {REPOSITORY}: it has no {METHODS}")
    source = file.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, str(file))
    except SyntaxError as err:
        raise ValueError(f"{file}: cannot parse it ({err.msg}, line {err.lineno})") from None
    funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    texts: dict[str, tuple[list[str], list[str]]] = {}
    for name in FUNCTIONS:
        if name not in funcs:
            raise ValueError(f"{root} is not a copy of {REPOSITORY}: {METHODS} has no function {name}")
        systems, prompts = _strings(funcs[name], "system_msg"), _strings(funcs[name], "prompt")
        wanted = 2 if name == FUNCTIONS[2] else 1
        if len(systems) != 1 or len(prompts) != wanted:
            raise ValueError(f"{file}: {name} should assign one string system_msg and {wanted} string prompt, "
                             f"found {len(systems)} and {len(prompts)}")
        texts[name] = (systems, prompts)
    max_images = next((n.value.value for n in tree.body if isinstance(n, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id == "MAX_IMAGE" for t in n.targets)
                       and isinstance(n.value, ast.Constant) and isinstance(n.value.value, int)), None)
    if max_images is None:
        raise ValueError(f"{file}: no integer MAX_IMAGE")
    defaults = _generate_defaults(root / UTILS)
    default_tokens = defaults.get("max_new_tokens")
    if not isinstance(default_tokens, int):
        raise ValueError(f"{root / UTILS}: no OpenaiEngine.generate with an integer max_new_tokens default")
    temperature = defaults.get("temperature", 0)
    check_templates(str(file), {"key_points_user": texts[FUNCTIONS[0]][1][0], "image_user": texts[FUNCTIONS[1]][1][0],
                                "verdict_user": texts[FUNCTIONS[2]][1][0],
                                "verdict_user_no_images": texts[FUNCTIONS[2]][1][1]})
    commit = _commit(root)
    sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    (kp_system, [kp_user]), (img_system, [img_user]), (v_system, [v_user, v_user_bare]) = (
        texts[n] for n in FUNCTIONS)
    return JudgePrompts(
        source="official", commit=commit, sha256=sha,
        label=f"official WebJudge prompts ({REPOSITORY} @ {commit or 'commit unknown'}, {METHODS} "
              f"sha256 {sha[:12]})",
        key_points_system=kp_system[0], key_points_user=kp_user, image_system=img_system[0], image_user=img_user,
        verdict_system=v_system[0], verdict_user=v_user, verdict_user_no_images=v_user_bare,
        max_images=max_images,
        key_points_max_tokens=_int_keyword(funcs[FUNCTIONS[0]], "max_new_tokens") or default_tokens,
        image_max_tokens=_int_keyword(funcs[FUNCTIONS[1]], "max_new_tokens") or default_tokens,
        verdict_max_tokens=default_tokens, temperature=float(temperature) if isinstance(temperature, (int, float))
        else 0.0)
