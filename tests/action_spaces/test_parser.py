"""The one parser: accepted forms, extraction from chatter, and error messages that name the problem."""

from __future__ import annotations

import pytest

from mintgym.action_spaces import (
    ANDROID,
    DESKTOP,
    PYTOOL,
    Click,
    Done,
    Drag,
    InvalidAction,
    Key,
    Python,
    Scroll,
    Type,
    Wait,
)
from mintgym.action_spaces.frames import Normalized1000, Relative, ResizedAbsolute
from mintgym.action_spaces.parser import MAX_TEXT_CHARS, parse_action, render_action

SCREEN = (1280, 800)


def parse(text, action_set=DESKTOP, **kw):
    return parse_action(text, action_set, screen_size=kw.pop("screen_size", SCREEN), **kw)


@pytest.mark.parametrize("text,want", [
    ("click(x=120, y=48)", Click(x=120, y=48)),
    ("click(120, 48)", Click(x=120, y=48)),
    ("click(120, 48, 'right', 2)", Click(x=120, y=48, button="right", clicks=2)),
    ("click(x=120, y=48, button=\"middle\")", Click(x=120, y=48, button="middle")),
    ("double_click(x=3, y=4)", Click(x=3, y=4, clicks=2)),
    ("right_click(3, 4)", Click(x=3, y=4, button="right")),
    ('key(keys=["ctrl","c"])', Key(keys=("ctrl", "c"))),
    ('key("ctrl+c")', Key(keys=("ctrl", "c"))),
    ("key('Control', 'C')", Key(keys=("ctrl", "c"))),
    ("key(keys='Return')", Key(keys=("enter",))),
    ('type(text="say \\"hi\\"\\n\\ttab \\u00e9")', Type(text='say "hi"\n\ttab é')),
    ("type(text='it\\'s')", Type(text="it's")),
    ("done(answer=None, success=true)", Done()),
    ("done(answer=null, success=False)", Done(success=False)),
    ("done(answer='42', success=True)", Done(answer="42")),
    ("wait(seconds=2)", Wait(seconds=2.0)),
    ("scroll(x=10, y=20, dy=-300)", Scroll(x=10, y=20, dy=-300)),
    ("CLICK(x=1, y=2)", Click(x=1, y=2)),
])
def test_canonical_calls(text, want):
    assert parse(text) == want


@pytest.mark.parametrize("text,want", [
    ('{"type": "click", "x": 1, "y": 2}', Click(x=1, y=2)),
    ('{"action": "click", "x": 1, "y": 2, "button": "right"}', Click(x=1, y=2, button="right")),
    ('{"name": "click", "arguments": {"x": 1, "y": 2}}', Click(x=1, y=2)),
    ('{"name": "type", "arguments": "{\\"text\\": \\"hi\\"}"}', Type(text="hi")),
    ('{"type": "function", "function": {"name": "key", "arguments": {"keys": ["alt", "tab"]}}}',
     Key(keys=("alt", "tab"))),
    ('{"name": "computer", "arguments": {"action": "left_click", "coordinate": [5, 6]}}', Click(x=5, y=6)),
    ("{'type': 'click', 'x': 1, 'y': 2, }", Click(x=1, y=2)),
    ('<tool_call>\n{"name": "double_click", "arguments": {"x": 7, "y": 8}}\n</tool_call>', Click(x=7, y=8, clicks=2)),
])
def test_json_and_tool_call_forms(text, want):
    assert parse(text) == want


@pytest.mark.parametrize("text,want", [
    ("pyautogui.click(120, 48)", Click(x=120, y=48)),
    ("pyautogui.click(x=120, y=48, button='right')", Click(x=120, y=48, button="right")),
    ("pyautogui.click((120, 48))", Click(x=120, y=48)),
    ("pyautogui.click(120, 48, clicks=2)", Click(x=120, y=48, clicks=2)),
    ("pyautogui.doubleClick(1, 2)", Click(x=1, y=2, clicks=2)),
    ("pyautogui.tripleClick(1, 2)", Click(x=1, y=2, clicks=3)),
    ("rightClick(1, 2)", Click(x=1, y=2, button="right")),
    ("pyautogui.moveTo(5, 6); pyautogui.dragTo(7, 8, duration=1)", Drag(x1=5, y1=6, x2=7, y2=8)),
    ("pyautogui.moveTo(5, 6)\npyautogui.mouseDown()\npyautogui.dragTo(7, 8)", Drag(x1=5, y1=6, x2=7, y2=8)),
    ("pyautogui.scroll(-3, x=100, y=200)", Scroll(x=100, y=200, dy=300)),
    ("pyautogui.moveTo(100, 200)\npyautogui.scroll(5)", Scroll(x=100, y=200, dy=-500)),
    ("pyautogui.hscroll(2, x=1, y=1)", Scroll(x=1, y=1, dx=200)),
    ("pyautogui.write('hello')", Type(text="hello")),
    ("pyautogui.typewrite('hello', interval=0.05)", Type(text="hello")),
    ("pyautogui.press('enter')", Key(keys=("enter",))),
    ("pyautogui.press(['esc'])", Key(keys=("escape",))),
    ("pyautogui.hotkey('ctrl', 'c')", Key(keys=("ctrl", "c"))),
    ("pyautogui.hotkey('command', 'shiftleft', 'z')", Key(keys=("meta", "shift", "z"))),
    ("```python\nimport pyautogui\npyautogui.click(10, 20)\n```", Click(x=10, y=20)),
    ("DONE", Done()),
    ("FAIL", Done(success=False)),
    ("```\nWAIT\n```", Wait()),
])
def test_pyautogui_forms(text, want):
    assert parse(text) == want


def test_chatter_layouts_and_last_action_wins():
    assert parse("Thought: the OK button is at the bottom.\nAction: click(x=5, y=6)") == Click(x=5, y=6)
    assert parse("I'll click(the user's button) now.\nAction: click(x=3, y=4)") == Click(x=3, y=4)
    assert parse("First click(x=1, y=1), then click(x=2, y=2).") == Click(x=2, y=2)
    assert parse("```\nclick(x=1, y=1)\n```\nOn reflection:\n```\nclick(x=9, y=9)\n```") == Click(x=9, y=9)
    expected = Type(text='click(x=1, y=2) and {"type": "key"}')
    assert parse('type(text="click(x=1, y=2) and {\\"type\\": \\"key\\"}")') == expected
    assert parse("Action: click(x=1, y=2)\nNote(s): this should work") == Click(x=1, y=2)
    assert parse('click(x=1, y=2)\n{"confidence": 0.9}') == Click(x=1, y=2)
    code = 'python(code="""\nimport os\nprint(os.listdir(\'.\'))\n""")'
    assert parse_action(code, PYTOOL) == Python(code="\nimport os\nprint(os.listdir('.'))\n")


@pytest.mark.parametrize("text,message", [
    ("", "empty model output"),
    ("   \n ", "empty model output"),
    ("I am not sure what to do.", "no action found.*valid actions: click, move, drag"),
    ("press_button(x=1, y=2)", "unknown action 'press_button'; valid actions in 'desktop': click"),
    ("goto(url='https://a.b')", "action 'goto' is not in the 'desktop' action set"),
    ("tap(x=1, y=2)", "'tap' is not in the 'desktop'"),
    ("click(x=1)", "missing field 'y'"),
    ("drag(x1=1, y1=2, x2=3)", "missing field 'y2'"),
    ("click(x='a', y=2)", "field 'x' must be a number, got str"),
    ("click(x=True, y=2)", "field 'x' must be a number, got bool"),
    ("type(text=5)", "field 'text'.*valid string.*got int"),
    ("click(x=1, y=2, clicks=9)", "field 'clicks'"),
    ("click(x=1, y=2, button='left2')", "field 'button'"),
    ("click(x=1, y=2, foo=3)", "unknown field 'foo'"),
    ("click(1, 2, 'left', 1, 5)", "at most 4 positional arguments \\(x, y, button, clicks\\)"),
    ("click(1, 2, x=3)", "field 'x' given both"),
    ("click(x=5000, y=1)", "'x'=5000 is off the screen \\(x from 0 to 1279\\)"),
    ("click(x=1e309, y=2)", "finite"),
    ("click(x=1+1, y=2)", "only literal values.*BinOp"),
    ("click(x=__import__('os'), y=1)", "only literal values.*Call"),
    ("click(x=left, y=1)", "bare name 'left'"),
    ("key(keys=['hyperdrive'])", "unknown key 'hyperdrive'"),
    ("click(x=", "unbalanced parentheses"),
    ("pyautogui.dragTo(5, 6)", "dragTo needs the start position"),
    ("pyautogui.locateOnScreen('x.png')", "pyautogui.locateOnScreen is not supported"),
    ("pyautogui.scroll(-3)", "give where to scroll"),
    ('{"x": 1, "y": 2}', "a JSON action needs a 'type'"),
    ('{"type": "teleport", "x": 1}', "unknown action 'teleport'"),
    ("click(x=" + "9" * 5000 + ", y=1)", "cannot read"),
])
def test_errors_name_the_problem(text, message):
    with pytest.raises(InvalidAction, match=message):
        parse(text)


def test_too_long_input_is_refused():
    with pytest.raises(InvalidAction, match="too long"):
        parse("click(x=1, y=2)" + "x" * MAX_TEXT_CHARS)
    with pytest.raises(InvalidAction, match="must be text"):
        parse(b"click(x=1, y=2)")


def test_frames_convert_parsed_coordinates():
    assert parse("click(x=500, y=500)", frame=Normalized1000()) == Click(x=640, y=400)
    assert parse("click(x=0.5, y=0.25)", frame=Relative()) == Click(x=640, y=200)
    assert parse('{"type": "click", "x": 0.5, "y": 0.25}', frame=Relative()) == Click(x=640, y=200)
    assert parse("pyautogui.click(0.5, 0.25)", frame=Relative()) == Click(x=640, y=200)
    assert parse("click(x=320, y=200)", frame=ResizedAbsolute((640, 400))) == Click(x=641, y=401)
    with pytest.raises(InvalidAction, match="outside the normalized_1000 frame"):
        parse("click(x=1200, y=5)", frame=Normalized1000())
    with pytest.raises(ValueError, match="needs screen_size"):
        parse_action("click(x=1, y=2)", DESKTOP, frame=Normalized1000())


def test_android_and_pytool_sets():
    assert parse_action("back()", ANDROID) == ANDROID.build({"type": "back"})
    assert parse_action("open_app(app='Clock')", ANDROID).app == "Clock"
    assert parse_action("key(keys=['home'])", ANDROID).keys == ("home",)
    assert parse_action("python(code='print(1)')", PYTOOL) == Python(code="print(1)")
    with pytest.raises(InvalidAction, match="'click' is not in the 'pytool' action set"):
        parse_action("click(x=1, y=2)", PYTOOL)


def test_render_is_canonical_keyword_form():
    assert render_action(Click(x=120, y=48)) == "click(x=120, y=48)"
    assert render_action(Click(x=1, y=2, button="right", clicks=2)) == 'click(x=1, y=2, button="right", clicks=2)'
    assert render_action(Key(keys=("ctrl", "c"))) == 'key(keys=["ctrl", "c"])'
    assert render_action(Done()) == "done()"
    assert render_action(Done(answer="a\"b", success=False)) == 'done(answer="a\\"b", success=False)'
    assert render_action({"type": "wait", "seconds": 0.5}) == "wait(seconds=0.5)"
    assert render_action(Click(x=640, y=400), Normalized1000(), SCREEN) == "click(x=500, y=501)"  # pixel centres
    assert render_action(Click(x=640, y=400), Relative(), SCREEN) == "click(x=0.5004, y=0.5006)"
    with pytest.raises(ValueError, match="needs screen_size"):
        render_action(Click(x=1, y=2), Relative())
