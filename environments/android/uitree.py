"""The uiautomator dump (``uiautomator dump``) as typed nodes, a compact a11y text, and lookups.

The dump is XML: ``<hierarchy rotation="0">`` holding nested ``<node>`` elements whose attributes are
``index text resource-id class package content-desc checkable checked clickable enabled focusable
focused scrollable long-clickable password selected bounds`` with ``bounds="[x1,y1][x2,y2]"`` in screen
pixels (the same pixels as ``screencap`` and ``input tap``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_FLAGS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
          "long-clickable", "password", "selected")


@dataclass
class UiNode:
    """One view of the window hierarchy."""

    index: int
    text: str
    resource_id: str
    class_name: str
    package: str
    content_desc: str
    bounds: tuple[int, int, int, int]
    flags: frozenset[str]
    depth: int
    children: list[UiNode] = field(default_factory=list, repr=False)
    parent: UiNode | None = field(default=None, repr=False, compare=False)

    @property
    def center(self) -> tuple[int, int]:
        x1, y1, x2, y2 = self.bounds
        return (x1 + x2) // 2, (y1 + y2) // 2

    @property
    def label(self) -> str:
        """What a person would read: the text, else the content description."""
        return self.text or self.content_desc

    @property
    def visible(self) -> bool:
        x1, y1, x2, y2 = self.bounds
        return x2 > x1 and y2 > y1

    def has(self, flag: str) -> bool:
        return flag in self.flags


def parse_bounds(value: str) -> tuple[int, int, int, int]:
    m = _BOUNDS.fullmatch(value.strip())
    if not m:
        raise ValueError(f"bad uiautomator bounds {value!r}; expected [x1,y1][x2,y2]")
    x1, y1, x2, y2 = (int(v) for v in m.groups())
    return x1, y1, x2, y2


def parse_dump(xml_text: str) -> list[UiNode]:
    """Every node of a dump, in document order (parents before children)."""
    start = xml_text.find("<?xml")
    if start < 0:
        start = xml_text.find("<hierarchy")
    if start < 0:
        raise ValueError(f"not a uiautomator dump: {xml_text[:120]!r}")
    end = xml_text.rfind("</hierarchy>")
    body = xml_text[start: end + len("</hierarchy>")] if end >= 0 else xml_text[start:]
    try:
        root = ET.fromstring(body)
    except ET.ParseError as err:
        raise ValueError(f"uiautomator dump is not valid XML: {err}") from None
    if root.tag != "hierarchy":
        raise ValueError(f"uiautomator dump root is <{root.tag}>, expected <hierarchy>")
    nodes: list[UiNode] = []

    def walk(elem: ET.Element, depth: int, parent: UiNode | None) -> None:
        for child in elem:
            if child.tag != "node":
                continue
            a = child.attrib
            node = UiNode(
                index=int(a.get("index", "0") or 0),
                text=a.get("text", ""),
                resource_id=a.get("resource-id", ""),
                class_name=a.get("class", ""),
                package=a.get("package", ""),
                content_desc=a.get("content-desc", ""),
                bounds=parse_bounds(a.get("bounds", "[0,0][0,0]")),
                flags=frozenset(f for f in _FLAGS if a.get(f) == "true"),
                depth=depth,
                parent=parent,
            )
            nodes.append(node)
            if parent is not None:
                parent.children.append(node)
            walk(child, depth + 1, node)

    walk(root, 0, None)
    return nodes


def _interesting(node: UiNode) -> bool:
    return bool(node.text or node.content_desc or node.has("clickable") or node.has("checkable")
                or node.has("scrollable") or node.has("focused"))


def render(nodes: list[UiNode]) -> str:
    """A compact text tree: one line per node worth reading, indented by depth.

    ``[3] Switch "Wi-Fi" id=switch_widget (540,310) [0,260][1080,360] clickable checked``
    """
    lines = []
    for i, node in enumerate(nodes):
        if not (_interesting(node) and node.visible):
            continue
        short_class = node.class_name.rsplit(".", 1)[-1] or "View"
        parts = [f"[{i}]", short_class]
        if node.text:
            parts.append(f'"{node.text}"')
        if node.content_desc and node.content_desc != node.text:
            parts.append(f'desc="{node.content_desc}"')
        if node.resource_id:
            parts.append("id=" + node.resource_id.rsplit("/", 1)[-1])
        x1, y1, x2, y2 = node.bounds
        cx, cy = node.center
        parts.append(f"({cx},{cy}) [{x1},{y1}][{x2},{y2}]")
        flags = [f for f in ("clickable", "checked", "selected", "focused", "scrollable") if node.has(f)]
        if node.has("checkable") and not node.has("checked"):
            flags.append("unchecked")
        if not node.has("enabled"):
            flags.append("disabled")
        parts.extend(flags)
        lines.append("  " * node.depth + " ".join(parts))
    return "\n".join(lines)


def _norm(s: str) -> str:
    # Android writes "Wi\u2011Fi" with a non-breaking hyphen; a label written "Wi-Fi" must still match.
    s = s.replace("\u2011", "-").replace("\u2010", "-").replace("\u00a0", " ")
    return re.sub(r"\s+", " ", s).strip().casefold()


def find(nodes: list[UiNode], *labels: str, resource_id: str | None = None, class_name: str | None = None,
         exact: bool = True) -> UiNode | None:
    """The first visible node whose text or content description matches one of ``labels`` (in order).

    Labels are tried in the order given, so put the most specific first. With ``exact=False`` a label
    may be a substring. ``resource_id`` matches the id's last segment or the full id.
    """
    def id_ok(node: UiNode) -> bool:
        if resource_id is None:
            return True
        return node.resource_id == resource_id or node.resource_id.rsplit("/", 1)[-1] == resource_id

    def class_ok(node: UiNode) -> bool:
        return class_name is None or node.class_name.rsplit(".", 1)[-1] == class_name or node.class_name == class_name

    candidates = [n for n in nodes if n.visible and id_ok(n) and class_ok(n)]
    if not labels:
        return candidates[0] if candidates else None
    for label in labels:
        want = _norm(label)
        for node in candidates:
            for have in (_norm(node.text), _norm(node.content_desc)):
                if have and (have == want if exact else want in have):
                    return node
    return None


def tap_target(node: UiNode) -> UiNode:
    """The node to tap for ``node``: itself if clickable, else its nearest clickable ancestor.

    Labels are often plain TextViews inside a clickable row; tapping the row's centre is what a person does.
    """
    cand: UiNode | None = node
    while cand is not None:
        if cand.has("clickable") and _contains(cand.bounds, node.center):
            return cand
        cand = cand.parent
    return node


def _contains(bounds: tuple[int, int, int, int], point: tuple[int, int]) -> bool:
    x1, y1, x2, y2 = bounds
    return x1 <= point[0] < x2 and y1 <= point[1] < y2
