"""ActionSet validation, key aliases, the generated prompt, and the package's light imports."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from mintgym.action_spaces import (
    ACTION_TYPES,
    DESKTOP,
    DOMAIN_SETS,
    WEB,
    Click,
    InvalidAction,
    Key,
    Tap,
    action_set_for,
)
from mintgym.action_spaces.frames import Absolute, Normalized1000, Relative, ResizedAbsolute
from mintgym.action_spaces.keys import normalize_key
from mintgym.action_spaces.parser import parse_action
from mintgym.action_spaces.prompt import describe_action_set, example_action, signature

SCREEN = (1280, 800)
FRAMES = [Absolute(), Normalized1000(), Relative(), ResizedAbsolute((1288, 728))]


def test_validate_checks_the_screen():
    assert WEB.validate(Click(x=1279, y=799), SCREEN) == Click(x=1279, y=799)
    with pytest.raises(InvalidAction, match=r"click: point \(x=1280, y=5\) is off the 1280x800 screen"):
        WEB.validate(Click(x=1280, y=5), SCREEN)
    with pytest.raises(InvalidAction, match="y2=800"):
        WEB.validate({"type": "drag", "x1": 0, "y1": 0, "x2": 5, "y2": 800}, SCREEN)


def test_validate_checks_membership_and_fields():
    with pytest.raises(InvalidAction, match="'tap' is not in the 'web' action set"):
        WEB.validate(Tap(x=1, y=2))
    with pytest.raises(InvalidAction, match="'tap' is not in the 'web' action set"):
        WEB.validate({"type": "tap", "x": 1})
    with pytest.raises(InvalidAction, match="unknown action type 'fly'; expected one of click, move"):
        WEB.validate({"type": "fly"})
    with pytest.raises(InvalidAction, match="no 'type' field"):
        WEB.validate({"x": 1})
    with pytest.raises(InvalidAction, match="missing field 'y'"):
        WEB.validate({"type": "click", "x": 1})
    with pytest.raises(InvalidAction, match="field 'clicks'.*got int 7"):
        WEB.validate({"type": "click", "x": 1, "y": 1, "clicks": 7})
    with pytest.raises(InvalidAction, match="must be a JSON object"):
        WEB.validate([1, 2])


@pytest.mark.parametrize("alias,canonical", [
    ("Control", "ctrl"), ("CMD", "meta"), ("win", "meta"), ("Return", "enter"), ("esc", "escape"),
    ("ArrowLeft", "left"), ("PageDown", "pagedown"), ("pgup", "pageup"), ("BackSpace", "backspace"),
    ("shiftleft", "shift"), ("Super_L", "meta"), ("Prior", "pageup"), (" ", "space"), ("A", "a"), ("F5", "f5"),
])
def test_key_aliases(alias, canonical):
    assert normalize_key(alias) == canonical
    assert Key(keys=[alias]).keys == (canonical,)


def test_unknown_key_names_the_key():
    with pytest.raises(InvalidAction, match="unknown key 'hyper'"):
        normalize_key("hyper")
    with pytest.raises(InvalidAction, match="field 'keys'.*unknown key 'hyper'"):
        WEB.validate({"type": "key", "keys": ["ctrl", "hyper"]})


@pytest.mark.parametrize("domain", sorted(DOMAIN_SETS))
@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.spec)
def test_every_prompt_example_parses_back(domain, frame):
    action_set = DOMAIN_SETS[domain]
    text = describe_action_set(action_set, frame, SCREEN)
    examples = re.findall(r"^    Example: (.*)$", text, re.MULTILINE)
    assert len(examples) == len(action_set.types)
    for cls, example in zip(action_set.types, examples, strict=True):
        parsed = parse_action(example, action_set, frame, SCREEN)
        assert type(parsed) is cls
        if isinstance(frame, (Absolute, Relative)):
            assert parsed == example_action(cls, SCREEN)
    # the format rule's example is the first action's example
    assert f"e.g. {examples[0]}." in text


@pytest.mark.parametrize("domain", sorted(DOMAIN_SETS))
def test_prompt_is_generated_from_the_models(domain):
    action_set = action_set_for(domain)
    text = action_set.describe()
    assert action_set.description in text
    assert "one action per turn" in text
    for cls in action_set.types:
        assert signature(cls) in text
        assert cls.summary in text
        for field in cls.model_fields:
            if field != "type":
                assert f"{field}:" in signature(cls)
    for other in set(ACTION_TYPES) - set(action_set.type_names):
        assert f"- {other}(" not in text


def test_prompt_follows_the_frame_and_notes():
    relative = describe_action_set(DESKTOP, Relative(), SCREEN)
    assert Relative().describe() in relative and "x: float" in relative
    assert Normalized1000().describe() in describe_action_set(DESKTOP, Normalized1000())
    assert 'button: "left" | "right" | "middle" = "left"' in signature(Click)
    assert "clicks: int (1 to 3) = 1" in signature(Click)
    custom = DESKTOP.extend("desktop-notes")
    custom = type(custom)(custom.name, custom.types, custom.description, ("Prefer keyboard shortcuts.",))
    assert "Note: Prefer keyboard shortcuts." in custom.describe()


def test_every_required_field_has_an_example():
    for cls in ACTION_TYPES.values():
        example_action(cls)  # raises TypeError naming a field without examples


def test_importing_the_package_loads_nothing_heavy():
    code = (
        "import sys, mintgym.action_spaces as a; a.WEB.describe(); "
        "a.WEB.parse('click(x=1, y=2)'); import mintgym.action_spaces.frames; "
        "heavy = [m for m in ('torch', 'ray', 'playwright', 'fastapi', 'httpx', 'uvicorn', 'transformers') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
