"""Each web session's own clipboard, kept by the environment: the browser's clipboards are never read.

Headless Chromium keeps ONE clipboard and ONE primary selection (X11-style: whatever text was last selected,
pasted by a middle click) per process, shared by every browser context, so sessions pasting through them read
what other sessions copied or merely selected. Here the agent's input never reaches a native paste:

* the clipboard key combos (see :data:`COMMANDS`: ctrl+c/x/v, ctrl+insert, shift+insert, shift+delete,
  ctrl+shift+v) run against the session's :class:`SessionClipboard` in the focused frame: the combo's
  keydown, then the copy/cut/paste event whose ``clipboardData`` holds this session's data (page handlers may
  set it, read it or cancel, as with the real clipboard), then Chromium's own editing at the caret
  (``insertText``/``insertHTML``; a cut deletes the selection), then the keyup;
* a middle click fires the page's pointer, mouse and ``auxclick`` events, never the browser's default of
  pasting the primary selection;
* page scripts that write the clipboard (``navigator.clipboard.write``/``writeText``, ``execCommand('copy')``
  in a click handler) write this session's clipboard through a binding (:data:`INIT_JS`).

Why not one browser-wide lock that loads a session's data into the real clipboard around its paste keys and
saves it after its copy keys: the primary selection changes whenever any session selects text and page
scripts write the clipboard at any moment, outside any lock, so another session's data could still be in
the clipboard when a paste reads it; the lock would also make every session wait for the others' keys, and
formats the async clipboard API cannot read back would be lost. With a clipboard per session no input of the
agent reads the browser's clipboards at all. The price: these events are synthetic (``isTrusted`` false) and
an inserted paste reports ``inputType`` ``insertText`` after a ``beforeinput`` of ``insertFromPaste``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from playwright.async_api import BrowserContext, Frame, Page
from playwright.async_api import Error as PlaywrightError

from mintgym.action_spaces.keys import MODIFIERS

log = logging.getLogger("mintgym.web")

#: Chromium's Linux key bindings (exact modifier sets) that copy, cut or paste, in canonical key names.
COMMANDS: dict[tuple[frozenset[str], str], str] = {
    (frozenset({"ctrl"}), "c"): "copy", (frozenset({"ctrl"}), "insert"): "copy",
    (frozenset({"ctrl"}), "x"): "cut", (frozenset({"shift"}), "delete"): "cut",
    (frozenset({"ctrl"}), "v"): "paste", (frozenset({"shift"}), "insert"): "paste",
    (frozenset({"ctrl", "shift"}), "v"): "paste-plain",
}
#: Most characters a session's clipboard holds (all types together); a bigger write is dropped.
MAX_CHARS = 2_000_000
#: The binding page scripts' clipboard writes arrive through (removed from ``window`` at once).
BINDING = "__mintgymClipboard"
_CODES = {"insert": ("Insert", "Insert", 45), "delete": ("Delete", "Delete", 46)}


@dataclass(frozen=True)
class Command:
    """A clipboard key press: ``copy``, ``cut``, ``paste`` or ``paste-plain``, and its KeyboardEvent fields."""

    name: str
    key: dict[str, Any]


def commands(keys: tuple[str, ...]) -> list[Command | None]:
    """For each key :func:`~.keys.split_combo` presses in a canonical combo, its clipboard command (or None)."""
    held = frozenset(k for k in keys if k in MODIFIERS)
    pressed = [k for k in keys if k not in MODIFIERS]
    if not pressed:  # a lone modifier
        return [None]
    out: list[Command | None] = []
    for key in pressed:
        name = COMMANDS.get((held, key))
        out.append(None if name is None else Command(name, _key_event(key, held)))
    return out


def _key_event(key: str, held: frozenset[str]) -> dict[str, Any]:
    """The KeyboardEvent fields of one canonical key pressed with ``held`` modifiers."""
    if key in _CODES:
        name, code, key_code = _CODES[key]
    else:
        name, code, key_code = key.upper() if "shift" in held else key, f"Key{key.upper()}", ord(key.upper())
    return {"key": name, "code": code, "keyCode": key_code, "ctrl": "ctrl" in held, "shift": "shift" in held}


# The copy/cut/paste of the focused document, as Chromium does it (shared by the agent's keys and INIT_JS).
_CORE_JS = r"""
function mgClipboard(command, data, key) {
  const doc = document, sel = doc.getSelection();
  const deepActive = () => {
    let e = doc.activeElement;
    while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
    return e;
  };
  const TEXT = ['text', 'search', 'url', 'tel', 'email', 'password', 'number'];
  const field = (e) => e instanceof HTMLTextAreaElement || (e instanceof HTMLInputElement && TEXT.includes(e.type));
  const startElement = () => {
    if (!sel || !sel.rangeCount) return null;
    const n = sel.getRangeAt(0).startContainer;
    return n.nodeType === 1 ? n : n.parentElement;
  };
  const active = deepActive(), root = doc.body || doc.documentElement;
  if (!root) return {data: null};
  // a text field's own selection shows in the document as a collapsed range; a range elsewhere has moved out
  const inField = field(active) && (!sel || !sel.rangeCount || sel.getRangeAt(0).collapsed);
  const target = () => inField ? active : (startElement() || (active && active !== doc.body ? active : root));
  const selected = () => {
    if (inField) {
      const editable = !active.readOnly && !active.disabled;
      if (active.type === 'password') return {text: '', editable};  // Chromium never copies a password
      const s = active.selectionStart;
      return {text: s === null ? (sel ? sel.toString() : '') : active.value.slice(s, active.selectionEnd), editable};
    }
    if (!sel || !sel.rangeCount || sel.isCollapsed) return {text: '', editable: false};
    const box = doc.createElement('div');
    for (let i = 0; i < sel.rangeCount; i++) box.appendChild(sel.getRangeAt(i).cloneContents());
    const host = startElement();
    return {text: sel.toString(), html: box.innerHTML, editable: !!host && host.isContentEditable};
  };
  const bubbling = {bubbles: true, cancelable: true, composed: true};
  const keyInit = key && {...bubbling, key: key.key, code: key.code, keyCode: key.keyCode, which: key.keyCode,
                          ctrlKey: key.ctrl, shiftKey: key.shift, view: window};
  const keyup = (result) => {
    if (keyInit) (deepActive() || root).dispatchEvent(new KeyboardEvent('keyup', keyInit));
    return result;
  };
  if (keyInit && !(active || root).dispatchEvent(new KeyboardEvent('keydown', keyInit))) return keyup({data: null});
  const dt = new DataTransfer();
  if (command === 'copy' || command === 'cut') {
    if (!target().dispatchEvent(new ClipboardEvent(command, {...bubbling, clipboardData: dt}))) {
      const out = {};  // a handler that cancels writes what it set (nothing: an empty clipboard)
      for (const type of dt.types) if (type !== 'Files') out[type] = dt.getData(type);
      return keyup({data: out});
    }
    const s = selected();
    if (!s.text || (command === 'cut' && !s.editable)) return keyup({data: null});
    const out = s.html === undefined ? {'text/plain': s.text} : {'text/plain': s.text, 'text/html': s.html};
    if (command === 'cut') doc.execCommand('delete');
    return keyup({data: out});
  }
  for (const [type, value] of Object.entries(data || {})) dt.setData(type, value);
  const to = target();
  if (!to.dispatchEvent(new ClipboardEvent('paste', {...bubbling, clipboardData: dt}))) return keyup({data: null});
  const text = (data || {})['text/plain'], html = command === 'paste' ? (data || {})['text/html'] : undefined;
  if (inField) {
    if (!text || active.readOnly || active.disabled) return keyup({data: null});
    if (to.dispatchEvent(new InputEvent('beforeinput', {...bubbling, inputType: 'insertFromPaste', data: text})))
      doc.execCommand('insertText', false, text);
    return keyup({data: null});
  }
  const host = startElement();
  if (!host || !host.isContentEditable || !(text || html)) return keyup({data: null});
  if (!to.dispatchEvent(new InputEvent('beforeinput', {...bubbling, inputType: 'insertFromPaste', dataTransfer: dt})))
    return keyup({data: null});
  if (html && host.closest('[contenteditable="plaintext-only"]') === null) doc.execCommand('insertHTML', false, html);
  else if (text) doc.execCommand('insertText', false, text);
  return keyup({data: null});
}
"""

#: Runs ``mgClipboard`` in the focused frame: ``[command, data, key]`` -> ``{"data": what to store or null}``.
OP_JS = "(args) => {" + _CORE_JS + "return mgClipboard(...args); }"

#: Every document of the session: page scripts' clipboard writes go to the session's clipboard, not the browser's.
INIT_JS = f"""(() => {{
const report = globalThis.{BINDING};
if (typeof report !== 'function') return;
try {{ delete globalThis.{BINDING}; }} catch (e) {{}}
""" + _CORE_JS + r"""
const send = (data) => { try { report(data); } catch (e) {} };
const unfocused = () => new DOMException('Document is not focused.', 'NotAllowedError');
if (globalThis.Clipboard) {
  Clipboard.prototype.writeText = function writeText(text) {
    if (!document.hasFocus()) return Promise.reject(unfocused());
    send({'text/plain': String(text)});
    return Promise.resolve();
  };
  Clipboard.prototype.write = async function write(items) {
    if (!document.hasFocus()) throw unfocused();
    const out = {};
    for (const item of items) for (const type of item.types)
      if (type === 'text/plain' || type === 'text/html') out[type] = await (await item.getType(type)).text();
    send(out);
  };
}
const exec = Document.prototype.execCommand;
Document.prototype.execCommand = function execCommand(command, ...rest) {
  const name = String(command).toLowerCase();
  if ((name !== 'copy' && name !== 'cut') || this !== document) return exec.call(this, command, ...rest);
  if (!navigator.userActivation.isActive) return false;  // as Chromium: only right after a click or key
  const result = mgClipboard(name, null, null);
  if (result.data) send(result.data);
  return true;
};
})();
"""

_FOCUS_IN_CHILD_JS = """() => { let e = document.activeElement;
  while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
  return !!e && ['IFRAME', 'FRAME', 'OBJECT', 'EMBED'].includes(e.tagName); }"""

_MIDDLE_CLICK_JS = r"""([x, y, clicks]) => {
  let doc = document, ox = 0, oy = 0, target = doc.elementFromPoint(x, y);
  for (;;) {  // into open shadow roots and same-origin frames
    while (target && target.shadowRoot) {
      const inner = target.shadowRoot.elementFromPoint(x - ox, y - oy);
      if (!inner || inner === target) break;
      target = inner;
    }
    if (!(target && ['IFRAME', 'FRAME'].includes(target.tagName) && target.contentDocument)) break;
    const r = target.getBoundingClientRect();
    ox += r.left + target.clientLeft; oy += r.top + target.clientTop;
    doc = target.contentDocument;
    target = doc.elementFromPoint(x - ox, y - oy);
  }
  if (!target) return;
  const view = doc.defaultView;
  const at = {bubbles: true, cancelable: true, composed: true, view, button: 1, clientX: x - ox, clientY: y - oy,
              screenX: x, screenY: y};
  const pointer = {pointerId: 1, pointerType: 'mouse', isPrimary: true};
  for (let i = 1; i <= clicks; i++) {
    target.dispatchEvent(new view.PointerEvent('pointerdown', {...at, ...pointer, buttons: 4}));
    target.dispatchEvent(new view.MouseEvent('mousedown', {...at, buttons: 4, detail: i}));
    target.dispatchEvent(new view.PointerEvent('pointerup', {...at, ...pointer, buttons: 0}));
    target.dispatchEvent(new view.MouseEvent('mouseup', {...at, buttons: 0, detail: i}));
    target.dispatchEvent(new view.PointerEvent('auxclick', {...at, ...pointer, buttons: 0, detail: i}));
  }
}"""


class SessionClipboard:
    """One session's clipboard: MIME type -> text, as the last copy, cut or page write left it."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def install(self, context: BrowserContext) -> None:
        """Route the context's page-script clipboard writes here (before its first page opens)."""
        await context.expose_binding(BINDING, lambda _source, data: self.store(data))
        await context.add_init_script(INIT_JS)

    def clear(self) -> None:
        self.data = {}

    def store(self, data: Any) -> bool:
        """Replace the contents with ``data`` (type -> text); False, leaving them as they were, when it is not
        such a mapping or holds more than :data:`MAX_CHARS` characters."""
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            return False
        if sum(len(k) + len(v) for k, v in data.items()) > MAX_CHARS:
            log.info("a clipboard write of over %d characters was dropped", MAX_CHARS)
            return False
        self.data = dict(data)
        return True

    async def press(self, page: Page, command: Command) -> None:
        """Press ``command``'s key (its modifiers are already down) against this clipboard, in the focused frame."""
        frame = await _focused_frame(page)
        payload = self.data if command.name.startswith("paste") else None
        result = await frame.evaluate(OP_JS, [command.name, payload, command.key])
        if result and result.get("data") is not None:
            self.store(result["data"])


async def middle_click(page: Page, x: int, y: int, clicks: int) -> None:
    """The page's events of a middle click at (x, y), without Chromium's primary-selection paste."""
    await page.mouse.move(x, y)
    await page.evaluate(_MIDDLE_CLICK_JS, [x, y, clicks])


async def _focused_frame(page: Page) -> Frame:
    """The frame holding the focused element (the main frame unless focus is inside a child frame)."""
    frame = page.main_frame
    while frame.child_frames and await frame.evaluate(_FOCUS_IN_CHILD_JS):
        for child in frame.child_frames:
            try:
                if await child.evaluate("() => document.hasFocus()"):
                    frame = child
                    break
            except PlaywrightError:  # a frame detaching or navigating
                continue
        else:
            return frame
    return frame
