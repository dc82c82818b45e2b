"""The desktop's accessibility tree: a per-session AT-SPI bus, the tree read from it, and two views of it.

**The bus.** A session with accessibility on gets its own D-Bus session bus (``dbus-daemon`` as the
session user, its socket in the session's runtime folder); the AT-SPI bus launcher and registry start on
it by D-Bus activation, so each session's tree holds only its own applications. Apps started after it
expose themselves: GTK 3 (GIMP through ``gail:atk-bridge``), LibreOffice's GTK 3 front end, Thunderbird
(Gecko), Chromium (``ACCESSIBILITY_ENABLED=1``) and Qt (VLC, ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1``).
It is off by default (it costs three processes and slows app start-up a little): the session option
``accessibility``, the ``a11y`` side channel, or a task that reads the tree turn it on.

**The tree.** :mod:`.a11y_dump` runs inside the session (Debian's python3 with PyGObject) and prints the
tree as JSON, read with OSWorld's limits (50 levels, 1024 children, on-screen cells of Calc sheets).

**The views.**

* :func:`osworld_xml`: the XML OSWorld's VM server answers ``/accessibility`` with (root ``desktop-frame``,
  one element per node named by its role with ``-`` for spaces, ``name``, states ``st:*``, attributes
  ``attr:*``, ``cp:screencoord``/``cp:size``, values ``val:*``, actions ``act:*``, the text as element
  text), which OSWorld's ``accessibility_tree`` getter returns and ``check_accessibility_tree`` reads.
* :func:`snapshot`: the shared grounded format of :mod:`mintgym.grounding` (ids, roles, names, values,
  states, boxes in screenshot pixels) for the ``a11y`` side channel, the same as the web's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mintgym.grounding import Element, Snapshot, short_text

if TYPE_CHECKING:
    from mintgym.environments.desktop.sandbox import Sandbox

#: Debian's interpreter, which has PyGObject and the Atspi typelib (the project's venv has neither).
SYSTEM_PYTHON = "/usr/bin/python3"
#: What apps need to expose their tree on the session's bus (``NO_AT_BRIDGE`` is dropped).
APP_ENV = {"GTK_MODULES": "gail:atk-bridge", "ACCESSIBILITY_ENABLED": "1", "GNOME_ACCESSIBILITY": "1",
           "QT_ACCESSIBILITY": "1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1"}
#: OSWorld's namespaces for the Ubuntu tree (desktop-env's ``check_accessibility_tree`` reads these).
NAMESPACES = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}


class AccessibilityUnavailable(RuntimeError):
    """The session cannot give an accessibility tree (the bus or the reader is missing)."""


def missing_parts() -> str | None:
    """Why this machine cannot read AT-SPI trees, or None when it can."""
    if not Path(SYSTEM_PYTHON).exists():
        return f"{SYSTEM_PYTHON} is missing (apt install python3-gi gir1.2-atspi-2.0)"
    if not Path("/usr/bin/dbus-daemon").exists():
        return "dbus-daemon is missing (apt install dbus)"
    if not list(Path("/usr/lib").glob("*/girepository-1.0/Atspi-2.0.typelib")):
        return "the AT-SPI typelib is missing (apt install gir1.2-atspi-2.0 at-spi2-core)"
    return None


# ---- the bus ------------------------------------------------------------------------------------------------

def start_bus(box: Sandbox, display: str, timeout: float = 10.0) -> None:
    """Start the session's D-Bus session bus and point every later process of the session at it."""
    reason = missing_parts()
    if reason:
        raise AccessibilityUnavailable(f"desktop accessibility is unavailable here: {reason}")
    socket_path = box.run_dir / "bus"
    socket_path.unlink(missing_ok=True)
    box.spawn(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address=unix:path={socket_path}"],
              display, log_name="dbus")
    deadline = time.monotonic() + timeout
    while not socket_path.exists():
        if time.monotonic() > deadline:
            raise AccessibilityUnavailable(f"the session's D-Bus did not start within {timeout:g} s "
                                           f"(see {box.log_dir / 'dbus.log'})")
        time.sleep(0.01)
    box.extra_env.update(APP_ENV, DBUS_SESSION_BUS_ADDRESS=f"unix:path={socket_path}", NO_AT_BRIDGE=None)


def stop_bus(box: Sandbox) -> None:
    """Forget the bus (its processes die with the session's others at reset); apps start without a11y."""
    for key in (*APP_ENV, "DBUS_SESSION_BUS_ADDRESS", "NO_AT_BRIDGE"):
        box.extra_env.pop(key, None)


def bus_running(box: Sandbox) -> bool:
    return "DBUS_SESSION_BUS_ADDRESS" in box.extra_env


# ---- the tree -----------------------------------------------------------------------------------------------

def parse_dump(output: str) -> dict[str, Any]:
    """The tree :mod:`.a11y_dump` printed; a ValueError names what is wrong with it."""
    try:
        tree = json.loads(output)
    except json.JSONDecodeError as err:
        raise ValueError(f"the accessibility reader printed no JSON ({err}): {output[:200]!r}") from None
    if not isinstance(tree, dict) or not isinstance(tree.get("applications"), list):
        raise ValueError("the accessibility reader's JSON has no 'applications' list")
    return tree


def osworld_xml(tree: dict[str, Any], app_names: dict[str, str] | None = None) -> str:
    """The tree as OSWorld's ``/accessibility`` XML. ``app_names`` renames applications (the session's
    ``google-chrome`` is Chromium, which OSWorld's Chrome getters look for as ``Google Chrome``)."""
    from lxml import etree

    root = etree.Element("desktop-frame", nsmap=NAMESPACES)
    for app in tree["applications"]:
        if app_names and app.get("role") == "application" and app.get("name") in app_names:
            app = {**app, "name": app_names[app["name"]]}
        root.append(_xml_node(app, etree))
    return etree.tostring(root, encoding="unicode")


def _xml_node(node: dict[str, Any], etree) -> Any:
    attrib = {"name": node.get("name", "")}
    for state in node.get("states", ()):
        attrib[f"{{{NAMESPACES['st']}}}{state}"] = "true"
    for key, value in node.get("attributes", {}).items():
        if _xml_name(key):
            attrib[f"{{{NAMESPACES['attr']}}}{key}"] = value
    if "box" in node:
        x, y, w, h = node["box"]
        attrib[f"{{{NAMESPACES['cp']}}}screencoord"] = str((x, y))
        attrib[f"{{{NAMESPACES['cp']}}}size"] = str((w, h))
    if node.get("image"):
        attrib["image"] = "true"
    if node.get("selection"):
        attrib["selection"] = "true"
    for key, value in node.get("value", {}).items():
        attrib[f"{{{NAMESPACES['val']}}}{key}"] = value
    for name, description, binding in node.get("actions", ()):
        name = name.replace(" ", "-")
        if _xml_name(name):
            attrib[f"{{{NAMESPACES['act']}}}{name}_desc"] = description
            attrib[f"{{{NAMESPACES['act']}}}{name}_kb"] = binding
    tag = (node.get("role") or "unknown").strip().replace(" ", "-") or "unknown"
    element = etree.Element(tag if _xml_name(tag) else "unknown", attrib={k: _xml_text(v) for k, v in attrib.items()},
                            nsmap=NAMESPACES)
    if node.get("text"):
        element.text = _xml_text(node["text"])
    for child in node.get("children", ()):
        element.append(_xml_node(child, etree))
    return element


def _xml_name(name: str) -> bool:
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c in "-_." for c in name)


def _xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (control characters an app may report)."""
    return "".join(c for c in str(text) if c in "\t\n\r" or ord(c) >= 0x20 and c not in "\ufffe\uffff")


# ---- the grounded view ------------------------------------------------------------------------------------------

#: AT-SPI role -> the shared grounded role (roles not listed keep their AT-SPI name, spaces as ``-``).
ROLES = {
    "push button": "button", "toggle button": "button", "button": "button", "check box": "checkbox",
    "radio button": "radio", "entry": "textbox", "password text": "textbox", "combo box": "combobox",
    "menu item": "menuitem", "check menu item": "menuitemcheckbox", "radio menu item": "menuitemradio",
    "menu": "menuitem", "page tab": "tab", "spin button": "spinbutton", "slider": "slider", "link": "link",
    "list item": "option", "tree item": "treeitem", "table cell": "gridcell", "heading": "heading",
    "label": "text", "static": "text", "paragraph": "paragraph", "image": "img", "icon": "img",
    "frame": "window", "dialog": "dialog", "alert": "alert", "list box": "listbox", "tool tip": "tooltip",
    "status bar": "status", "scroll bar": "scrollbar",
}
#: Roles kept when they carry a name even though nothing is clicked there.
NAMED_ROLES = frozenset({"window", "dialog", "alert", "heading", "text", "paragraph", "img", "tooltip", "status"})
CLICK_ACTIONS = frozenset({"click", "press", "activate", "jump", "toggle", "open"})


def snapshot(tree: dict[str, Any], screen_size: tuple[int, int], limit: int = 400) -> Snapshot:
    """The grounded elements of ``tree`` on a screen of ``screen_size`` (ids in walk order from 1)."""
    elements: list[Element] = []
    omitted = 0

    def visit(node: dict[str, Any], depth: int) -> None:
        nonlocal omitted
        element = _element(node, len(elements) + omitted + 1, depth, screen_size)
        if element is not None:
            if len(elements) < limit:
                elements.append(element)
            else:
                omitted += 1
        for child in node.get("children", ()):
            visit(child, depth + (element is not None))

    for app in tree["applications"]:
        for child in app.get("children", ()):
            visit(child, 0)
    return Snapshot(tuple(elements), omitted,
                    error="the tree was cut at its size limit" if tree.get("truncated") else None)


def _element(node: dict[str, Any], eid: int, depth: int, screen_size: tuple[int, int]) -> Element | None:
    if "box" not in node:
        return None  # not both visible and showing: not on the screen the agent sees
    x, y, w, h = node["box"]
    if w <= 0 or h <= 0:
        return None
    raw_role = node.get("role", "")
    role = ROLES.get(raw_role, raw_role.replace(" ", "-").lower() or "unknown")
    states = set(node.get("states", ()))
    name = " ".join((node.get("name") or "").split())
    editable = "editable" in states
    value = None
    if editable or role in ("textbox", "combobox", "spinbutton"):
        value = node.get("text", "")
    elif "value" in node and "value" in node["value"]:
        value = node["value"]["value"]
    if raw_role == "text" and editable:
        role = "textbox"
    clickable = any(a[0].lower() in CLICK_ACTIONS for a in node.get("actions", ()))
    interactive = role in ROLES.values() and role not in NAMED_ROLES or clickable or editable
    if not interactive and not (name and role in NAMED_ROLES):
        text = " ".join((node.get("text") or "").split())
        if not (text and raw_role in ("label", "static", "paragraph", "heading", "text")):
            return None
        name = name or text
    flags = set()
    if "focused" in states:
        flags.add("focused")
    if role in ("checkbox", "radio", "menuitemcheckbox", "menuitemradio") or "checkable" in states:
        flags.add("checked" if "checked" in states else "mixed" if "indeterminate" in states else "unchecked")
    elif "pressed" in states:
        flags.add("checked")
    if "selected" in states:
        flags.add("selected")
    if "expandable" in states:
        flags.add("expanded" if "expanded" in states else "collapsed")
    if interactive and "enabled" not in states and "sensitive" not in states:
        flags.add("disabled")
    if clickable and role not in ROLES.values():
        flags.add("clickable")
    width, height = screen_size
    x1, y1, x2, y2 = x, y, x + w, y + h
    cx1, cy1, cx2, cy2 = max(0, x1), max(0, y1), min(width, x2), min(height, y2)
    point = None
    if cx2 > cx1 and cy2 > cy1:
        point = ((cx1 + cx2 - 1) // 2, (cy1 + cy2 - 1) // 2)
    else:
        flags.add("offscreen")
    return Element(id=eid, role=role, name=short_text(name), value=None if value is None else short_text(value),
                   box=(x1, y1, x2, y2), point=point, flags=frozenset(flags), depth=depth)
