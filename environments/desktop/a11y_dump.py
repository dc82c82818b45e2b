"""Print the session's AT-SPI tree as JSON (run inside a desktop session by Debian's python3 with PyGObject).

It runs as the session user with the session's ``DBUS_SESSION_BUS_ADDRESS``, so it sees only the
applications of its own session. It uses only the standard library and ``gi`` (python3-gi,
gir1.2-atspi-2.0), and reads; it never acts on an element.

One node is ``{"role", "name", "states", "attributes", "box", "text", "image", "selection", "value",
"actions", "children"}`` (keys without content are left out). What is read, and the limits, follow OSWorld's
VM server so that :mod:`mintgym.environments.desktop.accessibility` can write OSWorld's XML from it:
states by their AT-SPI names with ``_`` (``selectable_text``); ``box`` = screen extents ``[x, y, w, h]``,
only for nodes both ``visible`` and ``showing``; the text with U+FFFC/U+FFFD removed; at most 50 levels
and 1024 children a node; in LibreOffice Calc's sheet tables only the cells on screen.
"""

import json
import sys

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402 -- gi.require_version must run before this import

MAX_DEPTH = 50
MAX_WIDTH = 1024
MAX_NODES = 20000
#: Cells scanned before giving up on finding the first one on screen (rows, then columns).
SCAN = 500


class Walk:
    def __init__(self):
        self.nodes = 0
        self.truncated = False

    def node(self, acc, depth, calc=False):
        self.nodes += 1
        out = {"role": _safe(acc.get_role_name, "") or "unknown", "name": _safe(acc.get_name, "") or ""}
        ifaces = set(_safe(acc.get_interfaces, []) or [])
        states = _states(acc)
        if states:
            out["states"] = states
        attributes = _safe(acc.get_attributes, None) or {}
        if attributes:
            out["attributes"] = {str(k): str(v) for k, v in attributes.items() if k}
        if "Component" in ifaces and "visible" in states and "showing" in states:
            rect = _safe(lambda: Atspi.Component.get_extents(acc, Atspi.CoordType.SCREEN), None)
            if rect is not None:
                out["box"] = [rect.x, rect.y, rect.width, rect.height]
        if "Text" in ifaces:
            text = _safe(lambda: Atspi.Text.get_text(acc, 0, Atspi.Text.get_character_count(acc)), "") or ""
            text = text.replace("\ufffc", "").replace("\ufffd", "")
            if text:
                out["text"] = text
        if "Image" in ifaces:
            out["image"] = True
        if "Selection" in ifaces:
            out["selection"] = True
        if "Value" in ifaces:
            out["value"] = {key: str(v) for key, fn in (
                ("value", Atspi.Value.get_current_value), ("min", Atspi.Value.get_minimum_value),
                ("max", Atspi.Value.get_maximum_value), ("step", Atspi.Value.get_minimum_increment))
                for v in [_safe(lambda fn=fn: fn(acc), None)] if v is not None}
        if "Action" in ifaces:
            actions = []
            for i in range(_safe(lambda: Atspi.Action.get_n_actions(acc), 0) or 0):
                actions.append([_safe(lambda i=i: Atspi.Action.get_action_name(acc, i), "") or "",
                                _safe(lambda i=i: Atspi.Action.get_action_description(acc, i), "") or "",
                                _safe(lambda i=i: Atspi.Action.get_key_binding(acc, i), "") or ""])
            if actions:
                out["actions"] = actions
        calc = calc or out["role"] == "document spreadsheet"
        if depth >= MAX_DEPTH:
            return out
        if calc and out["role"] == "table":
            children = self._showing_cells(acc, depth, calc)
        else:
            children = []
            for i in range(min(_safe(acc.get_child_count, 0) or 0, MAX_WIDTH)):
                if self.nodes >= MAX_NODES:
                    self.truncated = True
                    break
                child = _safe(lambda i=i: acc.get_child_at_index(i), None)
                if child is not None:
                    children.append(self.node(child, depth + 1, calc))
        if children:
            out["children"] = children
        return out

    def _showing_cells(self, table, depth, calc):
        """The cells of a spreadsheet table that are on screen, row by row (a sheet has millions)."""
        columns = _safe(lambda: Atspi.Table.get_n_columns(table), 0) or 0
        rows = _safe(lambda: Atspi.Table.get_n_rows(table), 0) or 0
        if columns <= 0 or rows <= 0:
            return []
        out, first_column = [], None
        for row in range(rows):
            row_cells = 0
            start = first_column or 0
            for column in range(start, columns):
                cell = _safe(lambda r=row, c=column: Atspi.Table.get_accessible_at(table, r, c), None)
                showing = cell is not None and "showing" in _states(cell)
                if showing:
                    if first_column is None:
                        first_column = column
                    row_cells += 1
                    out.append(self.node(cell, depth + 1, calc))
                    if self.nodes >= MAX_NODES:
                        self.truncated = True
                        return out
                elif first_column is not None or column - start >= SCAN:
                    break
            if first_column is not None and row_cells == 0 or first_column is None and row >= SCAN:
                break
        return out


def _states(acc):
    state_set = _safe(acc.get_state_set, None)
    if state_set is None:
        return []
    return sorted(Atspi.StateType(s).value_nick.replace("-", "_") for s in state_set.get_states())


def _safe(fn, default):
    try:
        return fn()
    except Exception:  # an application may vanish or refuse a call mid-walk; its node just has less
        return default


def main():
    walk = Walk()
    desktop = Atspi.get_desktop(0)
    apps = []
    for i in range(_safe(desktop.get_child_count, 0) or 0):
        app = _safe(lambda i=i: desktop.get_child_at_index(i), None)
        if app is not None:
            apps.append(walk.node(app, 1))
    json.dump({"applications": apps, "nodes": walk.nodes, "truncated": walk.truncated}, sys.stdout)


if __name__ == "__main__":
    main()
