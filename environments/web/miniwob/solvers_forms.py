"""Oracles for MiniWoB++ text, forms, e-mail, social media, search and terminal tasks.

Each solver reads the page only to decide what to do and acts only through the shared pixel actions.
Elements are found by a read-only JS function ``(arg) => Element | null`` (see :func:`_click_el`).
"""

from __future__ import annotations

import asyncio
import re

from mintgym.action_spaces import Click, Key, Move, Scroll, Type
from mintgym.environments.web import ui
from mintgym.environments.web.miniwob.oracles import SOLVERS, STEP_LIMITS, solver

# Wraps a finder ``(arg) => Element | null`` so that it returns a point of the element's visible box: its centre,
# or when something else lies on top there (overlapping buttons), the first point of a grid over it that hits it;
# the third item says whether that point hits it at all (false: off screen or clipped by a scrolled box).
_CENTER_JS = """([finder, arg]) => {
  const el = eval(finder)(arg);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  if (r.width <= 0 || r.height <= 0) return null;
  const hits = (x, y) => { const top = document.elementFromPoint(x, y); return top !== null && el.contains(top); };
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  if (hits(cx, cy)) return [cx, cy, true];
  for (let i = 1; i < 8; i++) for (let j = 1; j < 8; j++) {
    const x = r.left + r.width * i / 8, y = r.top + r.height * j / 8;
    if (hits(x, y)) return [x, y, true];
  }
  return [cx, cy, false];
}"""


async def _center_of(env, finder: str, arg=None) -> tuple[int, int] | None:
    point = await _point_of(env, finder, arg)
    return None if point is None else point[:2]


async def _point_of(env, finder: str, arg=None) -> tuple[int, int, bool] | None:
    point = await env.page.evaluate(_CENTER_JS, [finder, arg])
    return None if point is None else (int(point[0]), int(point[1]), point[2])


async def _click_el(env, finder: str, arg=None, clicks: int = 1, hover: bool = False):
    """Scroll the element ``finder(arg)`` returns into view with the wheel if needed, then click it.

    ``hover``: move the pointer onto it first and wait until it is under the pointer again (a ``:hover`` style
    that swaps an icon's image re-lays it out, and a press and release on different elements is no click)."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    width, height = env.screen_size
    try:  # an icon drawn from an image (``content: url(...)``) has no box until the image has loaded
        await ui.wait_js(env, _HAS_BOX_JS, [finder, arg])
    except PlaywrightTimeout:
        pass  # reported below, with the finder named
    await ui.wait_for_images(env)
    point, tries = await _point_of(env, finder, arg), 0
    while point is not None and not point[2]:  # off screen, or below the fold of a scrolled box
        if tries == 8:
            raise LookupError(f"oracle: could not scroll {finder[:80]!r} ({arg!r}) into view")
        yield Scroll(x=width // 2, y=height // 2, dx=0, dy=point[1] - height // 2)
        await asyncio.sleep(0.1)
        point, tries = await _point_of(env, finder, arg), tries + 1
    if point is None:
        raise LookupError(f"oracle: no visible element for {finder[:80]!r} ({arg!r})")
    for attempt in range(4 if hover else 0):
        yield Move(x=point[0], y=point[1])
        try:
            await ui.wait_js(env, _UNDER_POINTER_JS, [finder, arg, point], timeout_s=3.0)
            break
        except PlaywrightTimeout:  # the hover image's load moved it away from the pointer: find it again
            if attempt == 3:
                raise LookupError(f"oracle: {finder[:80]!r} ({arg!r}) does not stay under the pointer") from None
            point = await _point_of(env, finder, arg) or point
    yield Click(x=point[0], y=point[1], clicks=clicks)


_HAS_BOX_JS = """([finder, arg]) => {
  const el = eval(finder)(arg), r = el && el.getBoundingClientRect();
  return Boolean(r) && r.width > 0 && r.height > 0; }"""

# ``:hover`` first: the browser applies it a frame after the move, and until then the element still has the box
# of its plain style (a hover image that is still loading leaves it none).
_UNDER_POINTER_JS = """([finder, arg, [x, y]]) => {
  const el = eval(finder)(arg);
  if (!el.matches(':hover')) return false;
  const top = document.elementFromPoint(x, y);
  return top !== null && el.contains(top) && el.getBoundingClientRect().width > 0; }"""


async def _click(env, selector: str):
    async for a in ui.click(env, selector, wait=False):
        yield a


async def _submit(env):
    async for a in _click(env, "#subbtn"):
        yield a


def _quoted(query: str) -> list[str]:
    return re.findall(r'"([^"]*)"', query)


def _selected_names(query: str, prefix: str = "Select ") -> list[str]:
    listed = re.match(re.escape(prefix) + r"(.*) and click Submit\.", query).group(1)
    return [] if listed == "nothing" else [n.strip() for n in listed.split(",")]


_LABEL_BOX = """(name) => [...document.querySelectorAll('#area label')]
  .find((l) => l.textContent.trim() === name).querySelector('input')"""


async def _tick_and_submit(env, finder: str, args: list):
    """Click the element ``finder`` returns for each of ``args``, then Submit."""
    for arg in args:
        async for a in _click_el(env, finder, arg):
            yield a
    async for a in _submit(env):
        yield a


@solver("click-checkboxes-large", "click-checkboxes-transfer")
async def _click_checkboxes(env, query):
    async for a in _tick_and_submit(env, _LABEL_BOX, _selected_names(query)):
        yield a


@solver("click-checkboxes-soft")
async def _click_checkboxes_soft(env, query):
    # Each box's word comes from its own synonym group (the page's SYNONYMS); tick the box sharing a group.
    finder = """(word) => {
      const group = SYNONYMS.find((g) => g.includes(word));
      return [...document.querySelectorAll('#area label')]
        .find((l) => group.includes(l.textContent.trim())).querySelector('input'); }"""
    async for a in _tick_and_submit(env, finder, _selected_names(query, "Select words similar to ")):
        yield a


_NO_ANIMATION = "() => $(':animated').length === 0"


@solver("click-collapsible-nodelay")
async def _click_collapsible_nodelay(env, query):
    async for a in _click(env, "#area h3"):
        yield a
    await ui.wait_js(env, "() => $('.ui-accordion-content:visible').length === 1")
    async for a in _submit(env):
        yield a


# The first link reading the wanted text, preferring one that is already shown.
_LINK = """(text) => {
  const links = [...document.querySelectorAll('.alink')].filter((e) => e.textContent === text);
  return links.find((e) => e.getBoundingClientRect().height > 0) || links[0] || null; }"""


@solver("click-collapsible-2", "click-collapsible-2-nodelay")
async def _click_collapsible_2(env, query):
    text = _quoted(query)[-1]
    if await _center_of(env, _LINK, text) is None:
        header = f"(text) => ({_LINK})(text).closest('div').previousElementSibling"
        async for a in _click_el(env, header, text):
            yield a
        await ui.wait_js(env, f"(text) => ({_NO_ANIMATION})() && ({_LINK})(text).getBoundingClientRect().height > 0",
                         text)
    async for a in _click_el(env, _LINK, text):
        yield a


@solver("click-tab-2", "click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard")
async def _click_tab_2(env, query):
    text = _quoted(query)[-1]
    exists = await env.page.evaluate(f"(text) => ({_LINK})(text) !== null", text)
    if not exists:  # click-tab-2-medium empties tab 2; then the answer is that tab
        async for a in _click_el(env, "() => document.querySelectorAll('.ui-tab')[1].querySelector('a')"):
            yield a
        return
    if await _center_of(env, _LINK, text) is None:
        tab = f"""(text) => {{ const id = ({_LINK})(text).closest('.ui-tabs-panel').id;
                   return document.querySelector('#area ul a[href="#' + id + '"]'); }}"""
        async for a in _click_el(env, tab, text):
            yield a
        await ui.wait_js(env, f"(text) => ({_LINK})(text).getBoundingClientRect().height > 0", text)
    async for a in _click_el(env, _LINK, text):
        yield a


@solver("button-delay")
async def _button_delay(env, query):
    delay_ms = 1000 * int(re.search(r"wait (\d+) second", query).group(1))
    # The page times the gap between its two click handlers on its own clock. The time from yielding a click to
    # its handler (the step's own work) is measured on ONE and taken off the wait before TWO.
    sent = await env.page.evaluate("() => new Date().getTime()")
    async for a in _click_el(env, "() => document.getElementById('subbtn')"):
        yield a
    latency, elapsed = await env.page.evaluate(
        "(sent) => [currentTime - sent, new Date().getTime() - currentTime]", sent)
    await asyncio.sleep(max(0, delay_ms - elapsed - latency) / 1000)
    async for a in _click_el(env, "() => document.getElementById('subbtn2')"):
        yield a


# What an email-inbox task asks: the sender, the action and its argument. The natural-language variants keep
# them in MiniWoB's own ``core.currentFields``; the others print them in bold in the query.
_EMAIL_TASK_JS = """() => {
  const f = core.currentFields;
  if (f && f.by) {
    const task = f.task || 'forward';
    return {by: f.by, action: task === 'star' ? 'important' : task, arg: task === 'reply' ? f.message : f.to};
  }
  const bold = [...document.querySelectorAll('#query .bold')].map((b) => b.textContent);
  const q = document.getElementById('query').textContent;
  const action = /reply to them/.test(q) ? 'reply' : /forward that email/.test(q) ? 'forward'
    : /trash icon/.test(q) ? 'delete' : 'important';
  return {by: bold[0], action, arg: bold[1]};
}"""
_THREAD = """([name, part]) => {
  const row = [...document.querySelectorAll('#main .email-thread')]
    .find((t) => t.querySelector('.email-sender').textContent === name);
  return part ? row.querySelector(part) : row; }"""


@solver("email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-forward-nl",
        "email-inbox-forward-nl-turk", "email-inbox-important", "email-inbox-nl-turk", "email-inbox-noscroll",
        "email-inbox-reply", "email-inbox-star-reply")
async def _email_inbox(env, query):
    task = await env.page.evaluate(_EMAIL_TASK_JS)
    name, action, arg = task["by"], task["action"], task["arg"]
    if action in ("delete", "important"):  # the row's own trash / star icon
        part = ".email-actions .trash" if action == "delete" else ".email-actions .star"
        async for a in _click_el(env, _THREAD, [name, part]):
            yield a
        return
    async for a in _click_el(env, _THREAD, [name, None]):
        yield a
    await ui.wait_for(env, "#email")
    button, field, send = ((".email-reply", "#reply-text", "#send-reply") if action == "reply"
                           else (".email-forward", ".forward-sender", "#send-forward"))
    async for a in _click(env, f"#email {button}"):
        yield a
    await ui.wait_for(env, field)
    async for a in _click(env, field):
        yield a
    yield Type(text=arg)
    async for a in _click(env, send):
        yield a


async def _type_into(env, selector: str, text: str):
    async for a in _click(env, selector):
        yield a
    yield Type(text=text)


@solver("find-word")
async def _find_word(env, query):
    index = int(re.search(r"(\d+)(?:st|nd|rd|th) word", query).group(1)) - 1
    words = (await env.page.evaluate("() => document.querySelector('#area p').textContent")).split()
    async for a in _type_into(env, "#answer-input", re.sub(r"[^a-zA-Z]", "", words[index])):
        yield a
    async for a in _submit(env):
        yield a


async def _set_slider(env, selector: str, value: int):
    """Click a horizontal jQuery UI slider's track where ``value`` lies, then step with the arrow keys."""
    track = await env.page.evaluate(
        """(sel) => { const s = $(sel), r = s[0].getBoundingClientRect();
             return [r.left, r.top + r.height / 2, r.width, s.slider('option', 'min'), s.slider('option', 'max')]; }""",
        selector)
    left, y, width, low, high = track
    x = left + width * (value - low) / (high - low)
    yield Click(x=int(min(max(x, left + 1), left + width - 2)), y=int(y))  # the ends lie on the track's edge
    for _ in range(high - low):
        now = await env.page.evaluate("(sel) => $(sel).slider('value')", selector)
        if now == value:
            return
        yield Key(keys=("arrowright" if now < value else "arrowleft",))
    raise LookupError(f"oracle: the slider {selector!r} did not reach {value}")


@solver("form-sequence")
async def _form_sequence(env, query):
    value, box = re.search(r"Select (-?\d+) with the slider, click the (\d)", query).groups()
    async for a in _set_slider(env, "#slider", int(value)):
        yield a
    async for a in _click(env, f"#checkbox-{box}"):
        yield a
    async for a in _submit(env):
        yield a


@solver("form-sequence-2")
async def _form_sequence_2(env, query):
    radio, number, box = re.search(r"the (\d)\w\w radio .*\"(-?\d+)\" into the (\d)", query).groups()
    async for a in _click(env, f'#area input[type=radio][value="{radio}"]'):
        yield a
    async for a in _type_into(env, f"#input-{box}", number):
        yield a
    async for a in _submit(env):
        yield a


async def _selectric(env, select: str, option: str):
    """Open a selectric dropdown (it hides ``select``) and click the item reading ``option``."""
    wrapper = f"() => $('{select}').closest('.selectric-wrapper').find('.selectric')[0]"
    async for a in _click_el(env, wrapper):
        yield a
    await ui.wait_js(env, f"() => $('{select}').closest('.selectric-wrapper').hasClass('selectric-open')")
    item = f"""(text) => [...$('{select}').closest('.selectric-wrapper').find('.selectric-items li')]
                 .find((li) => li.textContent.trim() === text)"""
    point = await _center_of(env, item, option)
    box = await env.page.evaluate(
        "() => "
        f"$('{select}').closest('.selectric-wrapper').find('.selectric-scroll')[0].getBoundingClientRect().toJSON()")
    for _ in range(10):  # the list scrolls inside its own box
        if box["top"] <= point[1] <= box["bottom"]:
            break
        yield Scroll(x=int(box["left"] + box["width"] / 2), y=int(box["top"] + box["height"] / 2), dx=0,
                     dy=int(point[1] - (box["top"] + box["height"] / 2)))
        await asyncio.sleep(0.1)
        point = await _center_of(env, item, option)
    yield Click(x=point[0], y=point[1])


@solver("form-sequence-3")
async def _form_sequence_3(env, query):
    option, button = re.search(r"Choose (.*) from the dropdown, then click the button labeled \"(\w+)\"",
                               query).groups()
    async for a in _selectric(env, "#dropdown", option):
        yield a
    await ui.wait_js(env, "(v) => $('#dropdown').val() === v", option)
    async for a in ui.click_text(env, button, "#buttons", ("BUTTON",)):
        yield a


@solver("login-user-popup")
async def _login_user_popup(env, query):
    user, password = _quoted(query)[:2]
    for selector, text in (("#username", user), ("#password", password)):
        async for a in _click(env, selector):
            yield a
        if await env.page.evaluate("() => document.getElementById('popup') !== null"):
            async for a in _click(env, "#popup-cancel"):  # the session-expiry popup: stay on the page
                yield a
            async for a in _click(env, selector):
                yield a
        yield Type(text=text)
    async for a in _submit(env):
        yield a


# The text field of a movie-search form whose row is labelled with ``word`` (the labels sit beside the field).
_FIELD_BY_LABEL = """(word) => [...document.querySelectorAll('#area input[type=text]')].find((box) => {
  let row = box.parentElement;
  while (row.textContent.trim() === '') row = row.parentElement;
  return row.textContent.includes(word); })"""


@solver("multi-layouts", "multi-orderings")
async def _multi_layouts(env, query):
    genre, name, year = re.search(r"Search for (.*) movies directed by (.*) from year (\d+)", query).groups()
    for label, text in (("Genre", genre), ("Director", name), ("Year", year)):
        if label == "Year" and await _center_of(env, _FIELD_BY_LABEL, label) is None:
            label = "Released Date"
        async for a in _click_el(env, _FIELD_BY_LABEL, label):
            yield a
        yield Type(text=text)
    async for a in _click_el(env, "() => document.querySelector('#area button, #area .final, #area .ui-submit')"):
        yield a


@solver("read-table")
async def _read_table(env, query):
    key = re.search(r"Enter the value of (.*) into the text field", query).group(1)
    value = await env.page.evaluate(
        "(key) => [...document.querySelectorAll('#tab tr')].find((tr) => tr.cells[0].textContent === "
        "key).cells[1].textContent",
        key)
    async for a in _type_into(env, "#tt", value):
        yield a
    async for a in _submit(env):
        yield a


@solver("read-table-2")
async def _read_table_2(env, query):
    for index in (1, 2):
        value = await env.page.evaluate(
            """(i) => { const key = document.getElementById('ll' + i).getAttribute('data-key');
                 return [...document.querySelectorAll('#tab tr')].find((tr) => tr.cells[0].textContent === key)
                   .cells[1].textContent; }""", index)
        async for a in _type_into(env, f"#tt{index}", value):
            yield a
    async for a in _submit(env):
        yield a


_PAGER = "(label) => [...document.querySelectorAll('#pagination li a')].find((a) => a.textContent === label)"


@solver("phone-book")
async def _phone_book(env, query):
    name, field = re.match(r"Find (.*) in the contact book and click on their (\w+)", query).groups()
    for _ in range(5):  # one contact a page; ">" shows the next
        shown, index = await env.page.evaluate(
            "() => { const h = document.querySelector('#contact .name'); return [h.textContent, h.dataset.index]; }")
        if shown == name:
            break
        async for a in _click_el(env, _PAGER, ">"):
            yield a
        await ui.wait_js(env, "(old) => document.querySelector('#contact .name').dataset.index !== old", index)
    async for a in _click(env, f"#contact a.{field}"):
        yield a


@solver("search-engine")
async def _search_engine(env, query):
    name = _quoted(query)[0]
    position = int(re.search(r"click the (\d+)\w\w search result", query).group(1))
    async for a in _type_into(env, "#search-text", name):
        yield a
    async for a in _click(env, "#search"):
        yield a
    await ui.wait_for(env, "#page-content a")
    page = (position - 1) // 3 + 1
    if page > 1:
        async for a in _click_el(env, _PAGER, str(page)):
            yield a
    result = f'#page-content a[data-result="{position - 1}"]'
    await ui.wait_for(env, result)
    async for a in _click(env, result):
        yield a


@solver("sign-agreement")
async def _sign_agreement(env, query):
    if query.startswith("Click the cancel button"):
        async for a in _click(env, "#cancel"):
            yield a
        return
    name, button = _quoted(query)[:2]
    box = await env.page.evaluate("() => document.getElementById('text-area').getBoundingClientRect().toJSON()")
    for _ in range(10):  # scroll the agreement to its end: that enables the form
        if await env.page.evaluate("() => !document.getElementById('name').disabled"):
            break
        yield Scroll(x=int(box["left"] + box["width"] / 2), y=int(box["top"] + box["height"] / 2), dx=0, dy=2000)
        await asyncio.sleep(0.1)
    async for a in _type_into(env, "#name", name):
        yield a
    async for a in _click(env, "#agree" if button == "Agree" else "#cancel"):
        yield a


_SOCIAL_CLASS = {"Reply": "reply", "Retweet": "retweet", "Like": "like", "Share": "share", "Share via DM": "share",
                 "Copy link to Tweet": "copy", "Embed Tweet": "embed", "Mute": "menu-user", "Block": "block-user",
                 "Report": "report"}
# The ``nth`` post by a user, or a control inside it.
_POST = """([user, nth, part]) => {
  const post = [...document.querySelectorAll('#area .media')]
    .filter((m) => m.querySelector('.username').textContent === user)[nth];
  return part ? post.querySelector(part) : post; }"""


async def _social_click(env, user: str, nth: int, label: str):
    """Click a post's control; the menu ones (Share via DM, Mute, ...) open the post's "more" menu first."""
    cls = _SOCIAL_CLASS[label]
    if await env.page.evaluate(f"(arg) => ({_POST})(arg).closest('ul') !== null", [user, nth, f".{cls}"]):
        async for a in _click_el(env, _POST, [user, nth, ".more"], hover=True):
            yield a
        await ui.wait_js(env, f"(arg) => ({_POST})(arg).getBoundingClientRect().height > 0", [user, nth, f".{cls}"])
    async for a in _click_el(env, _POST, [user, nth, f".{cls}"], hover=True):
        yield a


@solver("social-media")
async def _social_media(env, query):
    user, label = re.match(r'For the user (\S+), click on the "(.*)" button\.', query).groups()
    async for a in _social_click(env, user, 0, label):
        yield a


@solver("social-media-all", "social-media-some")
async def _social_media_all(env, query):
    label, amount, user = re.match(r'Click the "(.*)" button on (all|\d+) posts? by (\S+) and then click Submit\.',
                                   query).groups()
    posts = await env.page.evaluate("(user) => [...document.querySelectorAll('#area .username')]"
                                    ".filter((u) => u.textContent === user).length", user)
    for nth in range(posts if amount == "all" else int(amount)):
        async for a in _social_click(env, user, nth, label):
            yield a
    async for a in _click(env, "#submitRow button"):
        yield a


# Up to 11 posts by one user, each a hover and a click (and a wheel scroll when below the fold), then Submit.
STEP_LIMITS["social-media-all"] = STEP_LIMITS["social-media-some"] = 40


@solver("terminal")
async def _terminal(env, query):
    match = re.search(r"extension \.(\S+)$", query)
    extension = match.group(1) if match else None  # None: a file without an extension
    # The listing ``ls`` would print is the page's own ``currentFiles``.
    files = await env.page.evaluate("() => currentFiles")
    name = next(f for f in files if (f.endswith("." + extension) if extension else "." not in f))
    async for a in _click(env, "#terminal"):
        yield a
    yield Type(text=f"rm {name}")
    yield Key(keys=("enter",))


@solver("text-transform")
async def _text_transform(env, query):
    text = await env.page.evaluate("() => document.getElementById('captcha').textContent")
    async for a in _type_into(env, "#tt", text):
        yield a
    async for a in _submit(env):
        yield a


solver("use-autocomplete-nodelay")(SOLVERS["use-autocomplete"])  # the same page without the menu's delay
