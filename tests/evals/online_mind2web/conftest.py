"""A miniature copy of the authors' repository: their layout and prompt structure, the tests' own placeholder
wording (none of the authors' text), committed to git so the commit can be recorded."""

from __future__ import annotations

import subprocess
import types
from pathlib import Path

import pytest

KEY_POINTS_SYSTEM = "PLACEHOLDER: list the key points."
IMAGE_SYSTEM = "PLACEHOLDER: rate this screenshot."
VERDICT_SYSTEM = "PLACEHOLDER: decide the verdict."
VERDICT_USER = "T={task}|K={key_points}|A={last_actions}|S={thoughts}"
VERDICT_USER_BARE = "T={task}|K={key_points}|A={last_actions}"

METHODS = f'''from utils import encode_image
import asyncio
MAX_IMAGE ={{max_image}}

async def identify_key_points(task, model):
    system_msg = """{KEY_POINTS_SYSTEM}"""
    prompt = """Task: {{{{task}}}}"""
    text = prompt.format(task=task)
    responses = await asyncio.to_thread(model.generate, [system_msg, text]{{key_points_tokens}})
    return responses[0]

async def judge_image(task, image_path, key_points, model):
    system_msg = """{IMAGE_SYSTEM}"""
    prompt = """T={{{{task}}}} K={{{{key_points}}}}"""
    return (await asyncio.to_thread(model.generate, [system_msg, prompt]))[0]

async def WebJudge_Online_Mind2Web_eval(task, last_actions, images_path, model, score_threshold):
    system_msg = """{VERDICT_SYSTEM}"""
    prompt = """{VERDICT_USER.replace("{", "{{").replace("}", "}}")}"""
    if not images_path:
        prompt = """{VERDICT_USER_BARE.replace("{", "{{").replace("}", "}}")}"""
    return prompt
'''

UTILS = '''class OpenaiEngine():
    def generate(self, messages, max_new_tokens={tokens}, temperature=0, model=None, **kwargs):
        return []
'''


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


def build_miniature(root: Path, *, max_image: int = 50, tokens: int = 512, key_points_tokens: int | None = None,
                    commit: bool = True) -> Path:
    """``root`` laid out as the authors' repository (src/methods/..., src/utils.py, src/run.py)."""
    (root / "src" / "methods").mkdir(parents=True)
    extra = f", max_new_tokens={key_points_tokens}" if key_points_tokens else ""
    (root / "src" / "methods" / "webjudge_online_mind2web.py").write_text(
        METHODS.format(max_image=max_image, key_points_tokens=extra))
    (root / "src" / "utils.py").write_text(UTILS.format(tokens=tokens))
    (root / "src" / "run.py").write_text("# the judge's driver\n")
    if commit:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "miniature")
    return root


@pytest.fixture(scope="session")
def mini() -> types.SimpleNamespace:
    """The miniature's builder and placeholder wording, for the tests to build and check against."""
    return types.SimpleNamespace(build=build_miniature, git=git, key_points_system=KEY_POINTS_SYSTEM,
                                 image_system=IMAGE_SYSTEM, verdict_system=VERDICT_SYSTEM,
                                 verdict_user=VERDICT_USER, verdict_user_bare=VERDICT_USER_BARE)


@pytest.fixture
def miniature(tmp_path) -> Path:
    return build_miniature(tmp_path / "Online-Mind2Web")
