"""An agent that plays from the accessibility listing alone, never the pixels: an example of ``--observe a11y``.

    PYTHONPATH=examples/agents mintgym eval --suite miniwob-easy --agent a11y_agent:A11yAgent --observe a11y \\
        --out runs/a11y

Each step it reads the ``a11y`` channel (:mod:`mintgym.grounding`: ``[id] role "name" (x,y) ...`` per element,
the point in screenshot pixels), picks an element by what the instruction names, and clicks that element's point:

* text the instruction quotes or writes in capitals ("Click button ONE, then click button TWO") names elements,
  clicked in the order the instruction gives them, each once;
* text to enter ("Enter "Ada" into the text field") is typed into the first text box, after a click on it;
* then a Submit button if the page has one, else the first button not clicked yet; with nothing left: done().

It is a baseline, not a solver (a model given ``--observe a11y`` reads the same listing: the ``vlm`` agent shows
it to its model as text). It refuses to start unless the episode gives it the listing.
"""

from __future__ import annotations

import re

from mintgym.action_spaces import Click, Done, Type
from mintgym.grounding import Element, parse
from mintgym.policy import AgentContext, AgentStep
from mintgym.types import Observation

#: Quoted phrases and words in capitals (MiniWoB's ONE, TWO) name the elements a task is about.
_NAMED = re.compile(r'"([^"]+)"|\b([A-Z][A-Z0-9]+)\b')
_TO_TYPE = re.compile(r'\b(?:enter|type)\s+"([^"]*)"', re.IGNORECASE)
_TEXT_ROLES = ("textbox", "searchbox", "combobox")


class A11yAgent:
    """Clicks and types by the elements of the ``a11y`` listing (see the module docstring)."""

    name = "a11y"

    def __init__(self) -> None:
        self.instruction = ""
        self.clicked: set[str] = set()
        self.typed = False

    async def start(self, context: AgentContext) -> None:
        if "a11y" not in context.observe and "som" not in context.observe:
            raise ValueError(f"the a11y agent reads the a11y channel; this episode gives it {list(context.observe)} "
                             "(run it with --observe a11y)")
        self.instruction, self.clicked, self.typed = context.instruction, set(), False

    async def act(self, observation: Observation) -> AgentStep:
        elements = [e for e in parse(observation.a11y or "") if e.point is not None]
        to_type = _TO_TYPE.search(self.instruction)
        box = next((e for e in elements if e.role in _TEXT_ROLES), None)
        if to_type and box is not None and not self.typed:
            if "focused" not in box.flags:
                return self._click(box, "the text box to type into")
            self.typed = True
            return AgentStep(Type(text=to_type.group(1)), text=f"type {to_type.group(1)!r}")
        targets = [quoted or capitals for quoted, capitals in _NAMED.findall(self.instruction)]
        if to_type:
            targets = [t for t in targets if t != to_type.group(1)]
        for target in targets:
            found = _named(elements, target)
            if found is not None and _key(found) not in self.clicked:
                return self._click(found, f"the element named {target!r}")
        submit = _named(elements, "Submit")
        if submit is not None and _key(submit) not in self.clicked:
            return self._click(submit, "Submit")
        for element in elements:
            if element.role in ("button", "link", "checkbox", "radio", "tab") and _key(element) not in self.clicked:
                return self._click(element, f"the first {element.role} not clicked yet")
        if box is not None and _key(box) not in self.clicked:
            return self._click(box, "the text box")
        return AgentStep(Done(), text="nothing left to click")

    def _click(self, element: Element, why: str) -> AgentStep:
        self.clicked.add(_key(element))
        x, y = element.point
        return AgentStep(Click(x=x, y=y), text=f"click [{element.id}] {element.role} {element.name!r}: {why}")


def _key(element: Element) -> str:
    return f"{element.role}:{element.name}:{element.box}"


def _named(elements: list[Element], target: str) -> Element | None:
    """The element whose name is ``target`` (case-insensitive), else the first whose name contains it."""
    wanted = target.strip().lower()
    exact = [e for e in elements if e.name.strip().lower() == wanted]
    if exact:
        return exact[0]
    return next((e for e in elements if wanted and wanted in e.name.lower()), None)
