"""Grounded page structure for web sessions: elements with ids, roles, names, states and boxes in screenshot pixels.

One snapshot is one ``Runtime.evaluate`` over the session's CDP connection (one round trip), run in an
isolated JavaScript world of the page: the page's own scripts cannot see the element ids or tamper with the
walker, and nothing is written into the DOM the task reads (MiniWoB's scorer included).

What a snapshot keeps, in document order (open shadow roots and same-origin iframes included):

* **interactive** elements: links, buttons, form fields, ARIA widget roles, ``contenteditable``,
  ``tabindex >= 0``, an ``onclick`` attribute, or a ``cursor: pointer`` that does not come from a parent;
* **named** elements: images with ``alt``, headings, anything with ``aria-label`` or ``title``;
* **text**: elements whose own text nodes say something (role ``text``, or ``heading``/``cell``/...), unless
  that text is already the name of an interactive ancestor.

Elements that are not rendered (``display: none``, ``visibility: hidden``, zero size) are left out.

Boxes are in the pixels of the screenshot the agent sees: CSS pixels times ``devicePixelRatio`` times the
pinch-zoom scale, measured from the visual viewport's corner. ``point`` is the centre of the part of the box
inside the frame (where a click lands on the element); ``offscreen`` elements (no part inside the frame)
keep their box and have no point. ``covered`` means another element is on top at that point.

The text form (the ``a11y`` side channel), one line per element, indented two spaces per kept ancestor::

    [12] button "Submit" (80,105) [50,95][110,115] focused
    [13] textbox "Name" value="Ada" (80,140) [20,130][140,150]
    [14] checkbox "Remember me" (12,170) [5,163][19,177] unchecked disabled

The element model, the text form, ``parse``, ``click_point`` and ``draw_marks`` are the shared format of
:mod:`mintgym.grounding` (re-exported here). This module imports no Playwright.
"""

from __future__ import annotations

from mintgym.grounding import (  # noqa: F401  (re-exported: the web channel's format is the shared one)
    FLAGS,
    INTERACTIVE_ROLES,
    NAME_CHARS,
    Element,
    Snapshot,
    click_point,
    draw_marks,
    parse,
    render,
    render_element,
    short_text,
)

# ---- the snapshot itself ---------------------------------------------------------------------------------

def snapshot_from_raw(raw: dict) -> Snapshot:
    """The :class:`Snapshot` of what :data:`WALKER_JS` returned."""
    elements = []
    for item in raw["elements"]:
        eid, depth, role, name, value, x1, y1, x2, y2, px, py, flags, level = item
        elements.append(Element(id=eid, role=role, name=short_text(" ".join(name.split())),
                                value=None if value is None else short_text(value), box=(x1, y1, x2, y2),
                                point=None if px is None else (px, py), flags=frozenset(flags), depth=depth,
                                level=level))
    return Snapshot(tuple(elements), int(raw.get("omitted", 0)), raw.get("html"))


#: The walker, as a function expression called with one options object:
#: ``{reset, limit, width, height, elements, html, html_limit}``. It keeps its id map on the isolated world's
#: global object, so ids stay stable while the document lives (and restart when ``reset`` is set).
WALKER_JS = r"""
(opts) => {
  const S = globalThis.__mgGround && !opts.reset ? globalThis.__mgGround
    : (globalThis.__mgGround = {ids: new WeakMap(), next: 1});
  const vv = window.visualViewport;
  const scale = (window.devicePixelRatio || 1) * (vv ? vv.scale : 1);
  const ox = vv ? vv.offsetLeft : 0, oy = vv ? vv.offsetTop : 0;
  const W = opts.width, H = opts.height;
  const out = [];
  let omitted = 0;
  const idOf = (el) => {
    let id = S.ids.get(el);
    if (id === undefined) { id = S.next++; S.ids.set(el, id); }
    return id;
  };
  const norm = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const TEXTBOX = new Set(['', 'text', 'email', 'tel', 'url', 'password', 'search', 'number']);
  const WIDGETS = new Set(['button', 'link', 'checkbox', 'radio', 'switch', 'textbox', 'searchbox', 'combobox',
    'listbox', 'option', 'slider', 'spinbutton', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem',
    'gridcell']);
  const TEXT_ROLES = {H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading',
    TD: 'cell', TH: 'columnheader', LI: 'listitem', LABEL: 'label', P: 'paragraph', LEGEND: 'legend',
    CAPTION: 'caption',
    DT: 'term', DD: 'definition', PRE: 'text', CODE: 'code'};
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);
  function role(el) {
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit && explicit !== 'presentation' && explicit !== 'none' && explicit !== 'generic') return explicit;
    const tag = el.tagName;
    if (tag === 'A') return el.hasAttribute('href') ? 'link' : null;
    if (tag === 'BUTTON' || tag === 'SUMMARY') return 'button';
    if (tag === 'INPUT') {
      const t = (el.getAttribute('type') || '').toLowerCase();
      if (t === 'hidden') return null;
      if (['button', 'submit', 'reset', 'image'].includes(t)) return 'button';
      if (t === 'checkbox' || t === 'radio') return t;
      if (t === 'range') return 'slider';
      if (t === 'number') return 'spinbutton';
      if (t === 'search') return 'searchbox';
      if (TEXTBOX.has(t)) return 'textbox';
      return t;
    }
    if (tag === 'SELECT') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (tag === 'TEXTAREA') return 'textbox';
    if (tag === 'OPTION') return 'option';
    if (tag === 'IMG') return 'img';
    if (el.isContentEditable && (!el.parentElement || !el.parentElement.isContentEditable)) return 'textbox';
    return TEXT_ROLES[tag] || null;
  }
  function labelsText(el) {
    if (el.labels && el.labels.length) return [...el.labels].map((l) => l.innerText).join(' ');
    return '';
  }
  function nameOf(el, r, fromContent) {
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const root = el.getRootNode();
      const t = by.split(/\s+/).map((id) => {
        const n = root.getElementById ? root.getElementById(id) : null;
        return n ? n.innerText || n.textContent : '';
      }).join(' ');
      if (norm(t)) return t;
    }
    const aria = el.getAttribute('aria-label');
    if (aria && norm(aria)) return aria;
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      const t = (el.getAttribute('type') || '').toLowerCase();
      if (tag === 'INPUT' && ['button', 'submit', 'reset'].includes(t)) return el.value || t;
      if (tag === 'INPUT' && t === 'image') return el.alt || el.title || '';
      return labelsText(el) || el.getAttribute('placeholder') || el.title || '';
    }
    if (tag === 'IMG') return el.alt || el.title || '';
    if (fromContent || WIDGETS.has(r) || r === 'heading' || tag === 'A' || tag === 'BUTTON') {
      return el.innerText || el.title || '';
    }
    return el.title || '';
  }
  function valueOf(el, r) {
    const tag = el.tagName;
    if (tag === 'SELECT') return [...el.selectedOptions].map((o) => o.text).join(', ');
    if (tag === 'TEXTAREA') return el.value;
    if (tag === 'INPUT') {
      const t = (el.getAttribute('type') || '').toLowerCase();
      if (['button', 'submit', 'reset', 'image', 'checkbox', 'radio', 'file'].includes(t)) return null;
      return t === 'password' ? '\u2022'.repeat(el.value.length) : el.value;
    }
    if (r === 'textbox' && el.isContentEditable) return el.innerText;
    const now = el.getAttribute('aria-valuenow');
    return now === null ? null : (el.getAttribute('aria-valuetext') || now);
  }
  function ownText(el) {
    let t = '';
    for (const c of el.childNodes) if (c.nodeType === 3) t += c.data;
    return norm(t);
  }
  function states(el, r, focused) {
    const f = [];
    if (el === focused) f.push('focused');
    const ac = el.getAttribute('aria-checked');
    if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
      f.push(el.indeterminate ? 'mixed' : el.checked ? 'checked' : 'unchecked');
    }
    else if (ac === 'true') f.push('checked');
    else if (ac === 'false') f.push('unchecked');
    else if (ac === 'mixed') f.push('mixed');
    if ((el.tagName === 'OPTION' && el.selected) || el.getAttribute('aria-selected') === 'true') f.push('selected');
    const ax = el.getAttribute('aria-expanded');
    if (ax === 'true') f.push('expanded'); else if (ax === 'false') f.push('collapsed');
    else if (el.tagName === 'SUMMARY' && el.parentElement && el.parentElement.tagName === 'DETAILS') {
      f.push(el.parentElement.open ? 'expanded' : 'collapsed');
    }
    if ((el.matches && el.matches(':disabled')) || el.getAttribute('aria-disabled') === 'true') f.push('disabled');
    if (el.readOnly === true || el.getAttribute('aria-readonly') === 'true') f.push('readonly');
    if (el.required === true || el.getAttribute('aria-required') === 'true') f.push('required');
    return f;
  }
  function deepFocus(doc) {
    let a = doc.activeElement;
    while (a) {
      if (a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
      else if ((a.tagName === 'IFRAME' || a.tagName === 'FRAME') && a.contentDocument
               && a.contentDocument.activeElement) {
        a = a.contentDocument.activeElement;
      }
      else break;
    }
    return a;
  }
  const focused = deepFocus(document);
  function covered(el, root, cx, cy) {
    const hit = root.elementFromPoint ? root.elementFromPoint(cx, cy) : null;
    if (!hit || hit === el || el.contains(hit) || hit.contains(el)) return false;
    return !(el.labels && [...el.labels].some((l) => l === hit || l.contains(hit)));
  }
  function visit(el, dx, dy, depth, inWidget, parentPointer) {
    if (SKIP.has(el.tagName)) return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    const pointer = style.cursor === 'pointer';
    let keep = false, r = null, wrapsText = false;
    const rendered = style.visibility !== 'hidden' && style.visibility !== 'collapse' && el.getClientRects().length > 0;
    if (rendered) {
      r = role(el);
      const tabbable = el.tabIndex >= 0 && el.hasAttribute('tabindex');
      const clickable = (pointer && !parentPointer) || el.hasAttribute('onclick') || tabbable;
      const widget = WIDGETS.has(r) || ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'file'].includes(r);
      const named = el.hasAttribute('aria-label') || el.hasAttribute('title') || (el.tagName === 'IMG' && el.alt)
        || r === 'heading';
      const text = !inWidget && ownText(el);
      // a small clickable element (a span or div with a handler) is named by its whole text, like a button
      wrapsText = clickable && !widget && (el.innerText || '').length <= 80;
      keep = widget || clickable || named || !!text || (el === focused && el !== document.body);
      if (keep) {
        const rect = el.getBoundingClientRect();
        if (rect.width <= 0 || rect.height <= 0) keep = false;
        else if (out.length >= opts.limit) { omitted++; keep = false; }
        else {
          const x1 = Math.round((rect.left + dx - ox) * scale), y1 = Math.round((rect.top + dy - oy) * scale);
          const x2 = Math.round((rect.right + dx - ox) * scale), y2 = Math.round((rect.bottom + dy - oy) * scale);
          const vx1 = Math.max(0, x1), vy1 = Math.max(0, y1), vx2 = Math.min(W, x2), vy2 = Math.min(H, y2);
          const f = states(el, r, focused);
          if (clickable && !widget) f.push('clickable');
          let px = null, py = null;
          if (vx2 > vx1 && vy2 > vy1) {
            px = Math.floor((vx1 + vx2 - 1) / 2); py = Math.floor((vy1 + vy2 - 1) / 2);
            const x = (px + 0.5) / scale + ox - dx, y = (py + 0.5) / scale + oy - dy;
            if ((widget || clickable) && covered(el, el.getRootNode(), x, y)) f.push('covered');
          } else f.push('offscreen');
          const name = nameOf(el, r, wrapsText) || text || '';
          const level = r === 'heading'
            ? (parseInt(el.getAttribute('aria-level') || el.tagName.slice(1), 10) || null) : null;
          const value = widget ? valueOf(el, r) : null;
          out.push([idOf(el), depth, r || 'text', name, value === null || value === undefined ? null : String(value),
                    x1, y1, x2, y2, px, py, f, level]);
        }
      }
    }
    const childWidget = inWidget || (keep && (WIDGETS.has(r) || r === 'heading' || wrapsText));
    const nextDepth = keep ? depth + 1 : depth;
    if ((el.tagName === 'IFRAME' || el.tagName === 'FRAME') && rendered) {
      let doc = null;
      try { doc = el.contentDocument; } catch (e) { doc = null; }
      if (doc && doc.body) {
        const rect = el.getBoundingClientRect();
        const fx = rect.left + el.clientLeft + parseFloat(style.paddingLeft) + dx;
        const fy = rect.top + el.clientTop + parseFloat(style.paddingTop) + dy;
        visit(doc.body, fx, fy, nextDepth, childWidget, false);
      }
      return;
    }
    if (el.shadowRoot) for (const c of el.shadowRoot.children) visit(c, dx, dy, nextDepth, childWidget, pointer);
    for (const c of el.children) visit(c, dx, dy, nextDepth, childWidget, pointer);
  }
  if (opts.elements && document.body) visit(document.body, 0, 0, 0, false, false);
  const result = {elements: out, omitted};
  if (opts.html) result.html = pruned(opts.html_limit);
  return result;

  function pruned(limit) {
    const KEEP_ATTRS = new Set(['id', 'name', 'type', 'href', 'alt', 'title', 'placeholder', 'role', 'for', 'value',
      'checked', 'disabled', 'selected', 'readonly', 'required', 'tabindex', 'contenteditable', 'src']);
    const VOID = new Set(['INPUT', 'IMG', 'BR', 'HR', 'AREA', 'COL', 'EMBED', 'SOURCE', 'TRACK', 'WBR']);
    const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    const attr = (s) => esc(s).replace(/"/g, '&quot;');
    const parts = [];
    let size = 0, cut = false;
    function emit(s) {
      if (size + s.length > limit) { cut = true; return false; }
      parts.push(s);
      size += s.length;
      return true;
    }
    function ser(el) {
      if (cut || SKIP.has(el.tagName)) return;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') return;
      const tag = el.tagName.toLowerCase();
      let open = '<' + tag;
      const id = S.ids.get(el);
      if (id !== undefined) open += ` mg-id="${id}"`;
      for (const a of el.attributes) {
        if (KEEP_ATTRS.has(a.name) || a.name.startsWith('aria-')) {
          let v = a.value;
          if (a.name === 'src' && v.startsWith('data:')) v = 'data:...';
          if (a.name === 'value' && el.type === 'password') v = '\u2022'.repeat(v.length);
          open += ` ${a.name}="${attr(v.length > 200 ? v.slice(0, 200) + '...' : v)}"`;
        }
      }
      if (tag === 'input' && el.value && !el.hasAttribute('value') && !['checkbox', 'radio'].includes(el.type)) {
        open += ` value="${attr(el.type === 'password' ? '\u2022'.repeat(el.value.length) : el.value)}"`;
      }
      if (!emit(open + '>')) return;
      if (VOID.has(el.tagName)) return;
      if (tag === 'textarea') { emit(esc(el.value)); emit('</textarea>'); return; }
      const kids = el.shadowRoot ? [...el.shadowRoot.childNodes, ...el.childNodes] : el.childNodes;
      for (const c of kids) {
        if (c.nodeType === 3) { const t = c.data.replace(/\s+/g, ' '); if (t.trim()) emit(esc(t)); }
        else if (c.nodeType === 1) ser(c);
      }
      emit(`</${tag}>`);
    }
    if (document.body) ser(document.body);
    return parts.join('') + (cut ? '<!-- truncated -->' : '');
  }
}
"""
