"""The ``tab`` action: typed, in the web set only, parsed and rendered like every other action, with its field
combinations checked by ``Tab.problem``; and the documented way to report an infeasible task."""

from __future__ import annotations

import pytest

from mintgym.action_spaces import (
    ANDROID,
    DESKTOP,
    PYTOOL,
    WEB,
    Done,
    InvalidAction,
    Normalized1000,
    Tab,
    parse_action,
    render_action,
)

SCREEN = (160, 210)


def test_tab_is_in_the_web_set_only():
    assert "tab" in WEB
    for other in (DESKTOP, ANDROID, PYTOOL):
        assert "tab" not in other
        with pytest.raises(InvalidAction, match="not in the"):
            other.parse('tab(op="new")')


@pytest.mark.parametrize("text,expected", [
    ('tab(op="switch", index=1)', Tab(op="switch", index=1)),
    ('tab("close", 2)', Tab(op="close", index=2)),
    ("tab()", Tab()),
    ('Thought: the form is in the other tab.\nAction: tab(op="switch", index=0)', Tab(op="switch", index=0)),
    ('{"type": "tab", "op": "new", "url": "http://127.0.0.1:8000/x"}', Tab(url="http://127.0.0.1:8000/x")),
    ('{"name": "tab", "arguments": {"op": "close"}}', Tab(op="close")),
])
def test_tab_parses_in_every_form(text, expected):
    assert WEB.parse(text) == expected
    # coordinates frames do not touch it
    assert parse_action(text, WEB, Normalized1000(), SCREEN) == expected


@pytest.mark.parametrize("action", [Tab(), Tab(op="switch", index=3), Tab(op="close"), Tab(op="new", url='a "b"')])
def test_render_parse_round_trip(action):
    assert WEB.parse(render_action(action)) == action


@pytest.mark.parametrize("text,message", [
    ('tab(op="jump")', "field 'op'"),
    ('tab(op="switch", index=64)', "field 'index'"),
    ('tab(op="switch", index=-2)', "field 'index'"),
    ('tab(op="new", colour=1)', "unknown field 'colour'"),
])
def test_bad_fields_are_invalid_actions(text, message):
    with pytest.raises(InvalidAction, match=message):
        WEB.parse(text)


def test_problem_names_meaningless_combinations():
    assert Tab().problem() is None and Tab(op="switch", index=0).problem() is None
    assert Tab(op="close").problem() is None and Tab(url="http://x/").problem() is None
    assert "needs the index" in Tab(op="switch").problem()
    assert "takes no index" in Tab(op="new", index=1).problem()
    assert "url is only for" in Tab(op="close", index=1, url="http://x/").problem()


def test_prompt_describes_tabs_and_infeasible_tasks():
    text = WEB.describe(screen_size=SCREEN)
    assert '- tab(op: "new" | "switch" | "close" = "new", index: int (-1 to 63) = -1, url: str | None = None)' in text
    assert 'Example: tab(op="switch", index=1)' in text
    assert 'done(success=False, answer="infeasible: <the reason>")' in text
    assert "infeasible" not in DESKTOP.describe()
    # the documented report parses to exactly that Done
    assert WEB.parse('done(success=False, answer="infeasible: the shop has no such product")') == \
        Done(success=False, answer="infeasible: the shop has no such product")
