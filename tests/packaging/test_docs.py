"""The README and docs/ stay true: every relative link and anchor resolves, every `mintgym` command line in
their shell blocks names a real command with real options, and the worked examples run as written (the
files a page shows are written out, the page's commands are run against them)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
MINTGYM = str(Path(sys.executable).with_name("mintgym"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def prose(page: Path) -> str:
    return FENCE.sub("", page.read_text())


def blocks(page: Path, language: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(page.read_text()) if m.group(1) == language]


def test_the_docs_exist_and_the_readme_links_into_each():
    names = {p.name for p in DOCS.glob("*.md")}
    assert {"design.md", "add-a-task.md", "bring-your-model.md", "evaluate.md", "train.md", "scale-out.md",
            "benchmarks.md", "security.md", "task-files.md"} <= names
    readme = prose(ROOT / "README.md")
    for name in ("design.md", "add-a-task.md", "bring-your-model.md", "evaluate.md", "train.md", "scale-out.md"):
        assert f"(docs/{name}" in readme, name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # an absolute URL
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert broken == [], "\n".join(broken)


def _commands():
    from mintgym.cli import app

    return typer.main.get_command(app)


def command_lines(page: Path) -> list[str]:
    """Each `mintgym ...` invocation of the page's bash blocks (continuation lines joined)."""
    found = []
    for block in blocks(page, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0]
            for part in re.split(r"&&|;|\|", line):
                words = part.split()
                if words[:1] == ["mintgym"]:
                    found.append(" ".join(words))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_line_names_real_commands_and_options(page):
    group = _commands()
    problems = []
    for line in command_lines(page):
        words = shlex.split(line)[1:]
        command = group  # typer's command objects (it ships its own click): a group has .commands
        while words and hasattr(command, "commands") and not words[0].startswith("-"):
            if words[0] not in command.commands:
                problems.append(f"{line}: no command {words[0]!r}")
                break
            command = command.commands[words.pop(0)]
        else:
            known = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
            known |= {"--debug", "--help"}
            problems += [f"{line}: {command.name} has no option {w.split('=')[0]}" for w in words
                         if w.startswith("--") and w.split("=")[0] not in known]
    assert problems == [], "\n".join(problems)


def write_example_files(page: Path, folder: Path) -> list[str]:
    """Write every block of ``page`` that starts with a ``# mypkg/...`` or ``# name.yaml`` line under
    ``folder``; return the names written."""
    written = []
    for language in ("python", "yaml"):
        for block in blocks(page, language):
            first = block.splitlines()[0]
            match = re.fullmatch(r"# ((?:mypkg/)?[\w-]+\.(?:py|yaml))", first.strip())
            if match:
                dest = folder / match.group(1)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(block)
                written.append(match.group(1))
    (folder / "mypkg").mkdir(exist_ok=True)
    (folder / "mypkg" / "__init__.py").touch()
    return written


def run(folder: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run([MINTGYM, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def page_commands(page: Path, *needles: str) -> list[list[str]]:
    """The page's distinct command lines that mention every needle, as argument lists (without `mintgym`)."""
    lines = dict.fromkeys(line for line in command_lines(page) if all(n in line for n in needles))
    return [shlex.split(line)[1:] for line in lines]


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("outside-the-repo")
    written = write_example_files(DOCS / "add-a-task.md", folder)
    written += write_example_files(DOCS / "bring-your-model.md", folder)
    assert {"mypkg/tasks.py", "mypkg/dots.py", "mypkg/desk.py", "tasks.yaml", "mypkg/agent.py"} <= set(written)
    return folder


def _run_page_commands(examples: Path, *needles: str) -> None:
    lines = page_commands(DOCS / "add-a-task.md", *needles)
    assert len(lines) == 2, lines  # a rollout and a check
    for args in lines:
        if args[0] == "rollout":  # a folder of its own: a run folder is resumed only by the run that made it
            args = [*args, "--out", str(examples / "runs" / "".join(c if c.isalnum() else "_" for c in needles[0]))]
        proc = run(examples, *args)
        assert proc.returncode == 0, f"mintgym {' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        assert "1/1 succeeded" in proc.stdout if args[0] == "rollout" else " 0 fail" in proc.stdout, proc.stdout


def test_the_pytool_task_example_runs_as_written(examples):
    _run_page_commands(examples, "mypkg.dots:tasks")


@pytest.mark.web
@pytest.mark.slow
def test_the_web_task_examples_run_as_written(examples):
    _run_page_commands(examples, "mypkg.tasks:tasks")
    _run_page_commands(examples, "tasks.yaml")


@pytest.mark.desktop
@pytest.mark.slow
def test_the_desktop_task_example_runs_as_written(examples):
    _run_page_commands(examples, "mypkg.desk:tasks")


def test_the_agent_example_evaluates_as_written(examples):
    (args,) = page_commands(DOCS / "bring-your-model.md", "mypkg.agent:MyAgent", "null/echo")
    args = [a if not a.startswith("runs/") else str(examples / a) for a in args]
    proc = run(examples, *args, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "1/1 succeeded" in proc.stdout and "0 of 1 episodes errored" in proc.stdout, proc.stdout
