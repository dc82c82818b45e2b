"""Oracles for MiniWoB++ widget tasks: dates, times, lists, menus, sliders, spinners, colour wheels, scrolling,
text selection, flights.

Each solver reads the page only to decide what to do and acts only through the shared pixel actions.
"""

from __future__ import annotations

import calendar
import json
import re

from mintgym.action_spaces import Click, Drag, Key, Move, Scroll, Type
from mintgym.environments.web import ui
from mintgym.environments.web.miniwob.oracles import solver

_ORDINAL = {"1st": 1, "2nd": 2, "3rd": 3}


def _arrows(key: str, count: int, held: tuple[str, ...] = ()):
    """Press ``key`` ``count`` times, a few presses per action (with ``held`` modifiers down)."""
    per = 5 - len(held)
    while count > 0:
        n = min(per, count)
        yield Key(keys=(*held, *[key] * n))
        count -= n


async def _options(env, select: str) -> list[str]:
    return await env.page.evaluate("(s) => [...document.querySelector(s).options].map((o) => o.textContent.trim())",
                                   select)


async def _pick_in_dropdown(env, select: str, text: str):
    """Open a native drop-down with a click, walk to ``text`` with the arrow keys and press Enter."""
    options = await _options(env, select)
    current = await env.page.evaluate("(s) => document.querySelector(s).selectedIndex", select)
    async for a in ui.click(env, select, wait=False):
        yield a
    target = options.index(text)
    for a in _arrows("down" if target > current else "up", abs(target - current)):
        yield a
    yield Key(keys=("enter",))


@solver("choose-list")
async def _choose_list(env, query):
    name = re.match(r"Select (.*) from the list and click Submit\.", query).group(1)
    async for a in _pick_in_dropdown(env, "#options", name):
        yield a
    async for a in ui.click_text(env, "Submit", "#area", ("BUTTON",)):
        yield a


@solver("click-scroll-list")
async def _click_scroll_list(env, query):
    listed = re.match(r"Select (.*) from the scroll list and click Submit\.", query).group(1)
    names = [n.strip() for n in listed.split(",")]
    options = await _options(env, "#options")
    # A click on the first option selects it alone; the arrow keys then move the selection (and scroll the
    # list); ctrl+arrow moves the focus without selecting, and ctrl+space adds the focused option.
    first = await env.page.evaluate("""() => {
        const r = document.querySelector('#options option').getBoundingClientRect();
        return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)]; }""")
    yield Click(x=first[0], y=first[1])
    at = 0
    for i, name in enumerate(names):
        target = options.index(name)
        held = ("ctrl",) if i else ()
        for a in _arrows("down" if target > at else "up", abs(target - at), held):
            yield a
        if i:
            yield Key(keys=("ctrl", "space"))
        at = target
    async for a in ui.click_text(env, "Submit", "#area", ("BUTTON",)):
        yield a


# The menu entries (``li > div``) from the top of a jQuery UI menu down to the one reading ``leaf``, each as its
# text; null when no entry reads so.
_MENU_PATH_JS = """(leaf) => {
  const entry = [...document.querySelectorAll('#area li > div')].find((d) => d.textContent.trim() === leaf);
  if (!entry) return null;
  const path = [];
  for (let li = entry.parentElement; li && li.closest('#area'); li = li.parentElement.closest('li'))
    path.unshift(li.querySelector(':scope > div').textContent.trim());
  return path;
}"""

# The centre of the visible menu entry reading ``text``, or null.
_MENU_ENTRY_JS = """(text) => {
  for (const d of document.querySelectorAll('#area li > div')) {
    const r = d.getBoundingClientRect();
    if (d.textContent.trim() === text && r.width > 0) {
      return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
    }
  }
  return null;
}"""

# True once the sub-menu of the entry reading ``text`` shows and has stopped animating.
_SUBMENU_OPEN_JS = """(text) => [...document.querySelectorAll('#area li > div')].some((d) => {
  const sub = d.textContent.trim() === text && d.parentElement.querySelector(':scope > ul');
  return sub && sub.getClientRects().length && !$(sub).is(':animated');
})"""


async def _menu_pick(env, leaf: str):
    """Hover each menu entry above ``leaf`` (each opens its sub-menu), then click ``leaf``."""
    path = await env.page.evaluate(_MENU_PATH_JS, leaf)
    if path is None:
        raise LookupError(f"oracle: no menu entry reads {leaf!r}")
    for i, text in enumerate(path):
        point = await env.page.evaluate(_MENU_ENTRY_JS, text)
        if point is None:
            raise LookupError(f"oracle: the menu entry {text!r} does not show")
        if i == len(path) - 1:
            yield Click(x=point[0], y=point[1])
        else:
            yield Move(x=point[0], y=point[1])
            await ui.wait_js(env, _SUBMENU_OPEN_JS, text)


@solver("click-menu")
async def _click_menu(env, query):
    # The instruction spells the path (A>B>C); the names in one problem are all distinct.
    leaf = re.match(r"Select (.*)$", query).group(1).split(">")[-1]
    async for a in _menu_pick(env, leaf):
        yield a


@solver("click-menu-2")
async def _click_menu_2(env, query):
    found = re.search(r'labeled "([^"]*)"', query)
    if found:
        label = found.group(1)
    else:  # the instruction shows the entry's icon instead of its label
        label = await env.page.evaluate("""() => {
            const icon = [...document.querySelector('#query .ui-icon').classList].find((c) => c !== 'ui-icon');
            return document.querySelector('#menu .' + icon).parentElement.textContent.trim(); }""")
    async for a in ui.click(env, "#open-menu", wait=False):
        yield a
    await ui.wait_for(env, "#menu")
    async for a in _menu_pick(env, label):
        yield a


async def _copy_into(env, source: str, target: str):
    """Select all of ``source``'s text, copy it, and paste it into ``target``."""
    async for a in ui.click(env, source, wait=False):
        yield a
    yield Key(keys=("ctrl", "a"))
    yield Key(keys=("ctrl", "c"))
    async for a in ui.click(env, target, wait=False):
        yield a
    yield Key(keys=("ctrl", "v"))


@solver("copy-paste")
async def _copy_paste(env, query):
    async for a in _copy_into(env, "#to-copy", "#answer-input"):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("copy-paste-2")
async def _copy_paste_2(env, query):
    index = _ORDINAL[re.search(r"from the (\w+) text area", query).group(1)]
    async for a in _copy_into(env, f"#text-{index}", "#answer-input"):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


async def _segmented_input(env, field: str, keys: str):
    """Type into a date or time input from its first segment (a click near its left edge focuses that one)."""
    box = await env.page.evaluate("""(s) => { const r = document.querySelector(s).getBoundingClientRect();
        return [Math.round(r.left + 6), Math.round(r.top + r.height / 2)]; }""", field)
    yield Click(x=box[0], y=box[1])
    yield Type(text=keys)


@solver("enter-date")
async def _enter_date(env, query):
    month, day, year = re.search(r"(\d\d)/(\d\d)/(\d{4})", query).groups()
    async for a in _segmented_input(env, "#tt", month + day + year):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("enter-time")
async def _enter_time(env, query):
    hour, minute, half = re.search(r"Enter (\d+):(\d\d) ?([AP]M)", query).groups()
    async for a in _segmented_input(env, "#tt", f"{int(hour):02d}{minute}{half[0]}"):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("scroll-text")
async def _scroll_text(env, query):
    x, y = await ui.center(env, "#text-area")
    yield Scroll(x=x, y=y, dx=0, dy=5000)  # the last word shows at the bottom of the text area
    text = await env.page.evaluate("() => document.getElementById('text-area').value")
    word = re.sub(r"[^a-zA-Z0-9]", "", text.split()[-1])
    async for a in ui.click(env, "#answer-input", wait=False):
        yield a
    yield Type(text=word)
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("scroll-text-2")
async def _scroll_text_2(env, query):
    x, y = await ui.center(env, "#text-area")
    yield Scroll(x=x, y=y, dx=0, dy=-5000 if "to the top" in query else 5000)
    await ui.wait_js(env, """(top) => { const t = document.getElementById('text-area');
        return top ? t.scrollTop === 0 : t.scrollTop + t.clientHeight >= t.scrollHeight - 1; }""",
                     "to the top" in query)
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


_SLIDER_JS = """(sel) => { const s = $(sel); const r = s[0].getBoundingClientRect();
  return {min: s.slider('option', 'min'), max: s.slider('option', 'max'), value: s.slider('value'),
          vertical: s.slider('option', 'orientation') === 'vertical', box: [r.left, r.top, r.width, r.height]}; }"""


async def _set_slider(env, sel: str, target: int):
    """Click the slider's track where ``target`` lies, then correct any rounding with the arrow keys
    (the click focuses the handle)."""
    s = await env.page.evaluate(_SLIDER_JS, sel)
    left, top, width, height = s["box"]
    frac = min(0.98, max(0.02, (target - s["min"]) / (s["max"] - s["min"])))  # the track's ends lie on its border
    if s["vertical"]:
        x, y = left + width / 2, top + height * (1 - frac)
    else:
        x, y = left + width * frac, top + height / 2
    yield Click(x=round(x), y=round(y))
    value = (await env.page.evaluate(_SLIDER_JS, sel))["value"]
    for a in _arrows("right" if target > value else "left", abs(target - value)):
        yield a


@solver("use-slider")
async def _use_slider(env, query):
    target = int(re.search(r"Select (-?\d+) with the slider", query).group(1))
    async for a in _set_slider(env, "#slider", target):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("use-slider-2")
async def _use_slider_2(env, query):
    combo = [int(v) for v in re.search(r"combination \[([-\d,]+)\]", query).group(1).split(",")]
    for i, target in enumerate(combo, start=1):
        async for a in _set_slider(env, f"#slider-{i}", target):
            yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("use-spinner")
async def _use_spinner(env, query):
    target = int(re.search(r"Select (-?\d+) with the spinner", query).group(1))
    # Each press of an arrow button steps the value once (a triple click is three presses); a press held past
    # half a second would repeat, so the value is read again after each click.
    for _ in range(20):
        value = int(await env.page.evaluate("() => document.getElementById('spinner').value") or 0)
        if value == target:
            break
        button = ".ui-spinner-up" if target > value else ".ui-spinner-down"
        async for a in ui.click(env, button, clicks=min(3, abs(target - value)), wait=False):
            yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("resize-textarea")
async def _resize_textarea(env, query):
    dimension, direction = re.search(r"the (width|height) is (smaller|larger)", query).groups()
    x, y = await ui.center(env, "#area .ui-resizable-se")
    delta = 20 if direction == "larger" else -20
    yield Drag(x1=x, y1=y, x2=x + (delta if dimension == "width" else 0),
               y2=y + (delta if dimension == "height" else 0))
    async for a in ui.click(env, "#submit", wait=False):
        yield a


@solver("highlight-text")
async def _highlight_text(env, query):
    async for a in ui.click(env, "#randomText", clicks=3, wait=False):  # a triple click selects the paragraph
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("highlight-text-2")
async def _highlight_text_2(env, query):
    index = _ORDINAL[re.search(r"in the (\w+) paragraph", query).group(1)]
    async for a in ui.click(env, f"#randomText p:nth-of-type({index})", clicks=3, wait=False):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


# Where a drag must start and end to select exactly one whitespace-separated word of an element's text:
# a pixel outside the left edge of its first character and the right edge of its last (the caret goes to the
# nearest character boundary, and the spaces around the word are wider than two pixels).
_WORD_ENDS_JS = """([sel, word]) => {
  const node = document.querySelector(sel).firstChild;
  const text = node.textContent;
  let at = -1;
  for (let i = text.indexOf(word); i >= 0; i = text.indexOf(word, i + 1)) {
    const end = i + word.length;
    if ((i === 0 || text[i - 1] === ' ') && (end === text.length || text[end] === ' ')) { at = i; break; }
  }
  if (at < 0) return null;
  const box = (k) => { const r = document.createRange(); r.setStart(node, k); r.setEnd(node, k + 1);
                       return r.getBoundingClientRect(); };
  const first = box(at), last = box(at + word.length - 1);
  return [first.left - 1, first.top + first.height / 2, last.right + 1, last.top + last.height / 2];
}"""

_QUILL_SHORTCUT = {"bold": "b", "italics": "i", "underlined": "u"}
_QUILL_COLOR = {"red": "#e60000", "orange": "#ff9900", "yellow": "#ffff00", "green": "#008a00", "blue": "#0066cc",
                "purple": "#9933ff"}


@solver("text-editor")
async def _text_editor(env, query):
    found = re.search(r"give the text (.+?) the (style|color) (\w+)", query)
    if found:
        word, _, style = found.groups()
        ends = await env.page.evaluate(_WORD_ENDS_JS, ["#editor .ql-editor p", word])
        if ends is None:
            raise LookupError(f"oracle: the editor's text has no word {word!r}")
        yield Drag(x1=round(ends[0]), y1=round(ends[1]), x2=round(ends[2]), y2=round(ends[3]))
    else:
        style = re.search(r"everything the (?:style|color) (\w+)", query).group(1)
        async for a in ui.click(env, "#editor .ql-editor", wait=False):
            yield a
        yield Key(keys=("ctrl", "a"))
    # Quill records the selection 100 ms after the mouse or key goes up; a toolbar click before that would
    # format what it recorded last.
    await ui.wait_js(env, """() => { const saved = editor.selection.lastRange, now = editor.selection.getRange()[0];
        return saved && now && now.length > 0 && saved.index === now.index && saved.length === now.length; }""")
    if style in _QUILL_SHORTCUT:
        yield Key(keys=("ctrl", _QUILL_SHORTCUT[style]))
    else:
        async for a in ui.click(env, "#area .ql-color .ql-picker-label", wait=False):
            yield a
        await ui.wait_for(env, "#area .ql-color .ql-picker-options")
        async for a in ui.click(env, f'#area .ql-color .ql-picker-item[data-value="{_QUILL_COLOR[style]}"]',
                                wait=False):
            yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


async def _click_found(env, find_js: str, arg=None, where=None):
    """Click the point ``find_js(arg)`` returns ([x, y] in the viewport, or null), scrolling it into view
    with the wheel first when it lies outside. ``where`` is the page or frame to read (the page by default;
    a frame must sit at the viewport's origin)."""
    where = where or env.page
    width, height = env.screen_size
    for _ in range(12):
        point = await where.evaluate(_STILL_JS, [find_js, arg])
        if point is None:
            raise LookupError(f"oracle: nothing to click for {arg!r} on {env.page.url}")
        x, y = round(point[0]), round(point[1])
        if 0 <= x < width and 0 <= y < height:
            yield Click(x=x, y=y)
            return
        yield Scroll(x=width // 2, y=height // 2, dx=0, dy=y - height // 2)
    raise LookupError(f"oracle: could not scroll {arg!r} into view")


# ``find(arg)`` once it gives the same answer two frames running (a wheel scroll may still be moving things),
# or after half a second of frames.
_STILL_JS = """async ([find, arg]) => {
  const read = () => JSON.stringify((0, eval)('(' + find + ')')(arg));
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  let before = read();
  for (let i = 0; i < 30; i++) { await frame(); const now = read(); if (now === before) break; before = now; }
  return JSON.parse(before);
}"""


_NTH_CENTER_JS = """([sel, i]) => { const el = document.querySelectorAll(sel)[i]; if (!el) return null;
  const r = el.getBoundingClientRect(); return r.width > 0 ? [r.left + r.width / 2, r.top + r.height / 2] : null; }"""

# For the occurrence of the name that is hidden under the fewest closed folders: the indexes (among the
# tree's spans) of those folders' labels, outermost first, then its own.
_TREE_PATH_JS = """(name) => {
  const spans = [...document.querySelectorAll('#tree span')];
  let best = null;
  for (const span of spans) {
    if (span.textContent !== name) continue;
    const path = [];
    for (let li = span.parentElement.parentElement.closest('li'); li; li = li.parentElement.closest('li')) {
      const sub = li.querySelector(':scope > ul');
      if (sub && sub.style.display === 'none') path.unshift(spans.indexOf(li.querySelector(':scope > span')));
    }
    path.push(spans.indexOf(span));
    if (best === null || path.length < best.length) best = path;
  }
  return best;
}"""


@solver("navigate-tree")
async def _navigate_tree(env, query):
    name = re.search(r'named "([^"]*)"', query).group(1)
    path = await env.page.evaluate(_TREE_PATH_JS, name)
    if path is None:
        raise LookupError(f"oracle: the tree has nothing named {name!r}")
    for index in path:  # a click on a closed folder's label opens it (no animation)
        async for a in _click_found(env, _NTH_CENTER_JS, ["#tree span", index]):
            yield a


@solver("stock-market")
async def _stock_market(env, query):
    limit = float(re.search(r"less than \$(\d+(?:\.\d+)?)", query).group(1))
    x, y = await ui.center(env, "#buy")
    shown = await env.page.evaluate("() => document.getElementById('stock-price').textContent")
    # The price changes every 100 ms, by 1.50 at most, and the Buy button reads it when the button comes back up
    # (a click takes a few browser round trips). Right after a change to 1.50 or more under the limit, the price
    # stays under it through the next change too; the 76th price is the limit itself, the last sure chance.
    await ui.wait_js(env, """([was, limit]) => { const text = document.getElementById('stock-price').textContent;
        const price = parseFloat(text.split('$')[1]);
        return text !== was && (price <= limit - 1.5 || (price <= limit && priceIndex >= 76)); }""",
                     [shown, limit], timeout_s=15)
    yield Click(x=x, y=y)


def _hex(rgb: str) -> str:
    return "".join(f"{int(v):02x}" for v in re.findall(r"\d+", rgb)[:3])


async def _type_color(env, value: str):
    """Type the colour's hex code into the picker's own text field (the field is what the task reads)."""
    async for a in ui.fill(env, "#col", value):
        yield a
    # The picker's popup covers Submit until a click elsewhere (here, on the instruction) closes it.
    async for a in ui.click(env, "#query", wait=False):
        yield a
    await ui.wait_js(env, """() => { const b = document.getElementById('subbtn').getBoundingClientRect();
        return document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2).id === 'subbtn'; }""")
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("use-colorwheel")
async def _use_colorwheel(env, query):
    name = re.search(r"Select (\w+) with the color picker", query).group(1)
    value = await env.page.evaluate("(n) => ui_utils.colorNameToHex(n)", name)
    async for a in _type_color(env, value.lstrip("#")):
        yield a


@solver("use-colorwheel-2")
async def _use_colorwheel_2(env, query):
    rgb = await env.page.evaluate("() => getComputedStyle(document.querySelector('#query .cc')).backgroundColor")
    async for a in _type_color(env, _hex(rgb)):
        yield a


@solver("order-food")
async def _order_food(env, query):
    menu = await env.page.evaluate("() => MENU.map((m) => ({id: m.id, name: m.name.trim(), types: m.types}))")
    by_name = re.match(r"Order one of each item: (.*)$", query)
    if by_name:
        wanted = {n.strip() for n in by_name.group(1).split(",")}
        orders = [(m["id"], 1) for m in menu if m["name"] in wanted]
    else:
        count, kind = re.match(r"Order (\d+) items that are (\S+)", query).groups()
        orders = [(next(m["id"] for m in menu if kind in m["types"]), int(count))]
    for item, count in orders:
        while count > 0:  # a double or triple click on "+" adds two or three
            async for a in ui.click(env, f'.food-item[data-id="{item}"] .add', clicks=min(3, count), wait=False):
                yield a
            count -= min(3, count)
    async for a in ui.click(env, "#submit-order button", wait=False):
        yield a


_TICKET_KEY = {"cheapest cost": ("data-price", min), "most expensive cost": ("data-price", max),
               "shortest duration": ("data-duration", min), "longest duration": ("data-duration", max)}


@solver("buy-ticket")
async def _buy_ticket(env, query):
    attribute, pick = _TICKET_KEY[re.search(r"with the (.+?)\.?$", query).group(1)]
    values = await env.page.evaluate("(a) => [...document.querySelectorAll('.flight')].map((f) => "
                                     "parseInt(f.querySelector('[' + a + ']').getAttribute(a), 10))",
                                     attribute)
    async for a in _click_found(env, _NTH_CENTER_JS, [".flight .buy-ticket", values.index(pick(values))]):
        yield a


async def _settled(env, expression: str, arg=None) -> None:
    """Wait until the JS function ``expression(arg)`` gives the same value two frames running (a scroll or a
    placement that may animate or be deferred has come to rest)."""
    await env.page.evaluate(_STILL_JS, [expression, arg])


_CALENDAR_WINDOWS = {"8AM and 12PM": (16, 24), "12PM and 4PM": (24, 32), "4PM and 8PM": (32, 40)}
_CALENDAR_HALF_HOURS = {"30 mins": 1, "0.5 hours": 1, "60 mins": 2, "1 hour": 2, "90 mins": 3, "1.5 hours": 3}

# The first half hour in [lo, hi - n] from which n half hours run clear of the calendar's other events.
_FREE_SLOT_JS = """([lo, hi, n]) => {
  const events = [...document.querySelectorAll('#area .event')].map((e) => e.getBoundingClientRect());
  const free = (i) => { const c = document.getElementById('hh-' + i).getBoundingClientRect();
    return events.every((e) => e.bottom <= c.top + 2 || e.top >= c.bottom - 2); };  // events sit a pixel off the grid
  for (let s = lo; s <= hi - n; s++) {
    let ok = true;
    for (let k = s; k < s + n; k++) ok = ok && free(k);
    if (ok) return s;
  }
  return null;
}"""


@solver("daily-calendar")
async def _daily_calendar(env, query):
    m = re.search(r'Create a (.+?) event named "([^"]+)", between (.+?)\.$', query)
    length, name, window = m.group(1), m.group(2), m.group(3)
    n = _CALENDAR_HALF_HOURS[length]
    start = await env.page.evaluate(_FREE_SLOT_JS, [*_CALENDAR_WINDOWS[window], n])
    if start is None:
        raise LookupError(f"oracle: no free {length} between {window}")
    # Scroll the calendar (its own scrolling box) so the slot sits near the top of what shows.
    offset = await env.page.evaluate("""(i) => document.getElementById('hh-' + i).getBoundingClientRect().top
        - document.getElementById('area').getBoundingClientRect().top - 10""", start)
    x, y = await ui.center(env, "#area")
    yield Scroll(x=x, y=y, dx=0, dy=round(offset))
    await _settled(env, "() => document.getElementById('area').scrollTop")
    first, last = await env.page.evaluate("""([a, b]) => [a, b].map((i) => {
        const r = document.getElementById('hh-' + i).getBoundingClientRect();
        return [r.left + r.width / 2, r.top, r.bottom]; })""",
                                          [start, start + n - 1])
    # Pressing on the first half hour, moving to the last and letting go there draws the event and opens its form.
    yield Drag(x1=round(first[0]), y1=round(first[1] + 5), x2=round(last[0]), y2=round(last[2] - 5))
    await ui.wait_for(env, "#create-event #event-name")
    async for a in ui.click(env, "#event-name", wait=False):
        yield a
    yield Type(text=name)
    async for a in ui.click(env, "#controls .create", wait=False):
        yield a


_SHOWN_MONTH_JS = """() => { const td = document.querySelector('#ui-datepicker-div td[data-month]');
  return td ? [Number(td.dataset.year), Number(td.dataset.month)] : null; }"""


async def _pick_date(env, field: str, year: int, month: int, day: int):
    """Open a jQuery UI date picker from its field, page to the month with its arrows and click the day."""
    async for a in ui.click(env, field, wait=False):
        yield a
    await ui.wait_js(env, "() => $('#ui-datepicker-div').is(':visible') && !$('#ui-datepicker-div').is(':animated')")
    await _settled(env, "() => $('#ui-datepicker-div').offset()")  # some pages move the picker a moment later
    for _ in range(40):
        shown = await env.page.evaluate(_SHOWN_MONTH_JS)
        gap = (year - shown[0]) * 12 + (month - 1 - shown[1])
        if gap == 0:
            break
        async for a in ui.click(env, "#ui-datepicker-div .ui-datepicker-next" if gap > 0
                                else "#ui-datepicker-div .ui-datepicker-prev",
                                wait=False):
            yield a
        await ui.wait_js(env, f"(was) => JSON.stringify(({_SHOWN_MONTH_JS})()) !== was", json.dumps(shown))
    async for a in ui.click_text(env, str(day), f'#ui-datepicker-div td[data-month="{month - 1}"][data-year="{year}"]',
                                 ("A",)):
        yield a


@solver("choose-date", "choose-date-easy", "choose-date-medium", "choose-date-nodelay")
async def _choose_date(env, query):
    month, day, year = (int(v) for v in re.search(r"Select (\d\d)/(\d\d)/(\d{4})", query).groups())
    async for a in _pick_date(env, "#datepicker", year, month, day):
        yield a
    await ui.wait_js(env, "() => !$('#ui-datepicker-div').is(':visible')")
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


async def _type_place(env, field: str, place: str):
    """Type the full name of the place the instruction names (a city or its airport code) into an autocomplete
    field, then close its suggestion menu."""
    entry = await env.page.evaluate("(p) => DOMESTIC_FLIGHTS.find((f) => f.indexOf(p) !== -1)", place)
    if entry is None:
        raise LookupError(f"oracle: no airport matches {place!r}")
    async for a in ui.click(env, field, wait=False):
        yield a
    yield Type(text=entry)
    # The menu opens after the widget's delay; an Escape before that would leave it to open later, over the form.
    await ui.wait_js(env, "() => $('.ui-autocomplete:visible').length > 0")
    yield Key(keys=("escape",))
    await ui.wait_js(env, "() => $('.ui-autocomplete:visible').length === 0")


@solver("book-flight", "book-flight-nodelay")
async def _book_flight(env, query):
    kind, origin, destination, month, day, year = re.search(
        r"Book the (\w+) one-way flight from: (.+?) to: (.+?) on (\d\d)/(\d\d)/(\d{4})", query).groups()
    async for a in _type_place(env, "#flight-from", origin):
        yield a
    async for a in _type_place(env, "#flight-to", destination):
        yield a
    async for a in _pick_date(env, "#datepicker", int(year), int(month), int(day)):
        yield a
    await ui.wait_js(env, "() => !$('#ui-datepicker-div').is(':visible')")
    async for a in ui.click(env, "#search", wait=False):
        yield a
    await ui.wait_for(env, "#results .flight")
    attribute = "data-price" if kind == "cheapest" else "data-duration"
    values = await env.page.evaluate("(a) => [...document.querySelectorAll('#results .flight')].map((f) => "
                                     "parseInt(f.querySelector('[' + a + ']').getAttribute(a), 10))",
                                     attribute)
    async for a in _click_found(env, _NTH_CENTER_JS, ["#results .flight .flight-price", values.index(min(values))]):
        yield a


_DAY_CELL_JS = """([year, month, day]) => {
  const cells = `td[data-handler="selectDay"][data-year="${year}"][data-month="${month - 1}"] a`;
  for (const a of document.querySelectorAll(cells)) {
    const r = a.getBoundingClientRect();
    if (a.textContent.trim() === String(day) && r.width > 0) return [r.left + r.width / 2, r.top + r.height / 2];
  }
  return null;
}"""


# FlightWoB: the real site runs in the iframe #wrap, which fills the viewport at (0, 0); its form's fields are
# named as in the request the wrapper scores (``core.currentQuestion.request``, the instruction's meaning).
async def _flight_frame(env):
    await ui.wait_js(env, "() => WOB_TASK_READY === true")
    frame = next((f for f in env.page.frames if f.parent_frame is not None), None)
    if frame is None:
        raise LookupError(f"oracle: {env.page.url} shows no flight site frame")
    return frame


async def _frame_click(env, frame, selector: str, index: int = 0):
    """Click the ``index``-th element matching ``selector`` in the flight site's frame (scrolled into view)."""
    async for a in _click_found(env, _NTH_CENTER_JS, [selector, index], frame):
        yield a


async def _frame_fill(env, frame, selector: str, text: str):
    """Click a text field of the flight site, select what it holds and type ``text``."""
    async for a in _frame_click(env, frame, selector):
        yield a
    yield Key(keys=("ctrl", "a"))
    yield Type(text=text)


@solver("flight.AA")
async def _flight_aa(env, query):
    request = await env.page.evaluate("() => core.currentQuestion.request")
    frame = await _flight_frame(env)
    for name in ("segments[0].origin", "segments[0].destination"):
        async for a in _frame_fill(env, frame, f'[name="{name}"]', request[name]):
            yield a
    for name in ("segments[0].travelDate", "segments[1].travelDate"):
        # The date fields are read-only: each opens a year of months, where the day is clicked.
        month, day, year = (int(v) for v in request[name].split("/"))
        async for a in _frame_click(env, frame, f'[name="{name}"]'):
            yield a
        async for a in _click_found(env, _DAY_CELL_JS, [year, month, day], frame):
            yield a
    async for a in _frame_click(env, frame, '.miniwob-main-form [type="submit"]'):
        yield a


@solver("flight.Alaska", "flight.Alaska-auto")
async def _flight_alaska(env, query):
    """Both sites share one form; the -auto task also asks for one-way trips, more passengers and first class."""
    request = await env.page.evaluate("() => core.currentQuestion.request")
    frame = await _flight_frame(env)
    if request.get("SearchFields.SearchType") == "OneWay":
        async for a in _frame_click(env, frame, 'label[for="srh-isow"]'):
            yield a
        await frame.wait_for_function("() => !document.getElementById('return-date').getClientRects().length",
                                      timeout=10_000)
    async for a in _alaska_cities(env, frame, request):
        yield a
    for name in ("SearchFields.DepartureDate", "SearchFields.ReturnDate"):
        if name in request:
            async for a in _alaska_date(env, frame, f'input[type="text"][name="{name}"]', request[name]):
                yield a
    for _ in range(int(request.get("SearchFields.NumberOfTravelers", "1")) - 1):
        async for a in _frame_click(env, frame, ".tnum-button", 1):  # the "+" next to the count
            yield a
    if request.get("SearchFields.CabinType", "Coach") != "Coach":
        async for a in _frame_click(env, frame, "#moreoptionsdiv .drop-head"):
            yield a
        await frame.wait_for_function("() => "
                                      "document.querySelector('label[for=\"cabin-first\"]').getClientRects().length",
                                      timeout=10_000)
        async for a in _frame_click(env, frame, 'label[for="cabin-first"]'):
            yield a
    async for a in _alaska_cities(env, frame, request):  # a late suggestion list may have taken a click since
        yield a
    async for a in _alaska_close_suggestions(env, frame):
        yield a
    async for a in _frame_click(env, frame, '.miniwob-main-form [type="submit"]'):
        yield a


# Alaska's city fields suggest airports as one types: each key starts a lookup (the first one fetches the
# airport list) unless another key comes first. On a loaded machine a lookup can answer after the last key and
# open a list over the fields below; a click meant for them then picks a suggestion: the city before changes,
# the next field never gets the focus, and the page scores -1 for the field left empty. The page closes a list
# at the next key typed in its field once that holds more than letters (a whole airport name does); a click
# outside closes only the first list the page ever showed (it adds that listener once).
_SUGGESTIONS_JS = "() => [...document.querySelectorAll('ol.input-selections')].map((l) => l.id)"
_CITIES = ("SearchFields.DepartureCity", "SearchFields.ArrivalCity")


async def _alaska_close_suggestions(env, frame):
    """Close the suggestion lists that are open (once they stand still), the first on the page first: a click
    on its field, then a key that changes nothing there."""
    for _ in range(4):
        shown = await frame.evaluate(_STILL_JS, [_SUGGESTIONS_JS, None])
        if not shown:
            return
        async for a in _frame_click(env, frame, "#" + shown[0].removeprefix("input-selections-")):
            yield a
        yield Key(keys=("end",))
    raise LookupError(f"oracle: {env.page.url}: the airport suggestions would not close")


async def _alaska_cities(env, frame, request: dict):
    """Type the cities the request names into the fields that do not hold them yet, until both do."""
    for attempt in range(4):
        values = await frame.evaluate("(names) => names.map((n) => "
                                      "document.querySelector(`input[name=\"${n}\"]`).value)",
                                      list(_CITIES))
        wrong = [name for name, value in zip(_CITIES, values, strict=True) if value != request[name]]
        if not wrong:
            return
        if attempt == 3:
            raise LookupError(f"oracle: {env.page.url}: the city fields {wrong} would not take the request's values")
        for name in wrong:
            field = f'input[type="text"][name="{name}"]'
            async for a in _alaska_close_suggestions(env, frame):
                yield a
            async for a in _frame_click(env, frame, field):
                yield a
            if not await frame.evaluate("(sel) => document.activeElement === document.querySelector(sel)", field):
                break  # the click went to a list that opened just now: look at the fields again
            yield Key(keys=("ctrl", "a"))
            yield Type(text=request[name])


_CALENDAR_OPEN_JS = ("() => { const m = document.getElementById('cal-modal-window'); "
                     "return m && m.getClientRects().length; }")


async def _alaska_date(env, frame, field: str, value: str):
    """Alaska's date fields open a one-month calendar: page to the month with its arrows, click the day, Done."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    month, day, year = (int(v) for v in value.split("/"))
    for attempt in range(3):  # a suggestion list that opens just before the click takes it
        async for a in _alaska_close_suggestions(env, frame):
            yield a
        async for a in _frame_click(env, frame, field):
            yield a
        try:
            await frame.wait_for_function(_CALENDAR_OPEN_JS, timeout=5_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    for _ in range(24):
        shown = await frame.evaluate("() => document.querySelector('#cal .current-month').textContent.trim()")
        name, shown_year = shown.split()
        gap = (year - int(shown_year)) * 12 + month - (list(calendar.month_name).index(name))
        if gap == 0:
            break
        async for a in _frame_click(env, frame, "#next-month a" if gap > 0 else "#prev-month a"):
            yield a
        await frame.wait_for_function("(was) => "
                                      "document.querySelector('#cal .current-month').textContent.trim() !== was",
                                      arg=shown, timeout=10_000)
    cells = await frame.evaluate("() => [...document.querySelectorAll('#cal a.cal-day')].map((a) => "
                                 "a.textContent.trim())")
    async for a in _frame_click(env, frame, "#cal a.cal-day", cells.index(str(day))):
        yield a
    async for a in _frame_click(env, frame, "#btnDone"):
        yield a
