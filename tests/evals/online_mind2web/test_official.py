"""Reading the authors' prompts from a copy of their repository: the miniature copy of conftest.py, its
broken variants, and (when present) a real copy named by MINTGYM_WEBJUDGE_ROOT."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mintgym.evals.online_mind2web.official import METHODS, load_official
from mintgym.evals.online_mind2web.prompts import FIELDS, mintgym_fallback, template_fields


def test_the_miniature_s_prompts_limits_and_commit_are_read(miniature, mini):
    prompts = load_official(miniature)
    assert prompts.source == "official" and prompts.commit == mini.git(miniature, "rev-parse", "HEAD")
    assert (prompts.key_points_system, prompts.image_system, prompts.verdict_system) == (
        mini.key_points_system, mini.image_system, mini.verdict_system)
    assert (prompts.key_points_user, prompts.image_user) == ("Task: {task}", "T={task} K={key_points}")
    assert (prompts.verdict_user, prompts.verdict_user_no_images) == (mini.verdict_user, mini.verdict_user_bare)
    assert (prompts.max_images, prompts.key_points_max_tokens, prompts.verdict_max_tokens) == (50, 512, 512)
    assert prompts.commit in prompts.label and prompts.sha256[:12] in prompts.label
    assert "OSU-NLP-Group/Online-Mind2Web" in prompts.label


def test_an_edited_copy_is_labelled_modified_and_a_copy_outside_git_has_no_commit(tmp_path, miniature, mini):
    file = miniature / METHODS
    file.write_text(file.read_text().replace("PLACEHOLDER: rate", "PLACEHOLDER: grade"))
    edited = load_official(miniature)
    assert edited.commit.endswith("+modified") and edited.image_system == "PLACEHOLDER: grade this screenshot."
    bare = load_official(mini.build(tmp_path / "plain", commit=False))
    assert bare.commit is None and "commit unknown" in bare.label


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("async def judge_image", "async def rate_image"), "has no function judge_image"),
    (lambda t: t.replace('    if not images_path:\n        prompt = ', '    other = '),
     "WebJudge_Online_Mind2Web_eval should assign one string system_msg and 2 string prompt, found 1 and 1"),
    (lambda t: t.replace("K={key_points}\"\"\"", "\"\"\""), "the image_user template has fields ['task'], expected"),
    (lambda t: t.replace("MAX_IMAGE =50", "MAX_IMAGE = None"), "no integer MAX_IMAGE"),
    (lambda t: t + "\ndef broken(:\n", "cannot parse it"),
])
def test_a_copy_that_is_not_the_authors_is_refused_in_one_line(miniature, edit, message):
    file = miniature / METHODS
    file.write_text(edit(file.read_text()))
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")) as err:
        load_official(miniature)
    assert "\n" not in str(err.value)


def test_missing_folders_and_files_are_named(tmp_path, miniature):
    with pytest.raises(ValueError, match="nowhere: no such folder"):
        load_official(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="is not a copy of OSU-NLP-Group/Online-Mind2Web: it has no src/methods"):
        load_official(tmp_path)
    (miniature / "src" / "utils.py").unlink()
    with pytest.raises(ValueError, match="no OpenaiEngine.generate with an integer max_new_tokens default"):
        load_official(miniature)


def test_the_fallback_has_every_field_of_the_authors_templates():
    fallback = mintgym_fallback()
    assert all(template_fields(getattr(fallback, name)) == fields for name, fields in FIELDS.items())
    assert fallback.source == "mintgym-fallback" and fallback.commit is None


REAL = Path(os.environ.get("MINTGYM_WEBJUDGE_ROOT") or "/nonexistent")


@pytest.mark.skipif(not (REAL / METHODS).is_file(), reason="no copy of OSU-NLP-Group/Online-Mind2Web here "
                                                          "(set MINTGYM_WEBJUDGE_ROOT)")
def test_a_real_copy_of_the_authors_repository_loads():
    prompts = load_official(REAL)
    assert prompts.max_images == 50 and prompts.image_max_tokens >= 1 and prompts.temperature == 0.0
    assert "{key_points}" in prompts.image_user and "{thoughts}" not in prompts.verdict_user_no_images
    assert "Status" in prompts.verdict_system and "Score" in prompts.image_system
