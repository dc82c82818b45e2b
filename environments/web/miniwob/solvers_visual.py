"""Oracles for MiniWoB++ visual and spatial tasks: shapes, drags, drawing, games, numbers and timing.

Each solver reads the page only to decide what to do and acts only through the shared pixel actions.
"""

from __future__ import annotations

import asyncio
import math
import re

import numpy as np

from mintgym.action_spaces import Click, Drag, Move
from mintgym.environments.web import ui
from mintgym.environments.web.miniwob.oracles import MAX_REWARD, STEP_LIMITS, UNSOLVABLE, solver

# A JS function (as source) giving a whole viewport pixel where ``el`` itself (or a descendant) is hit:
# the centre of its box when nothing covers it there, else the first uncovered point of a ring search.
_POINT_OF = """function pointOf(el) {
  const r = el.getBoundingClientRect();
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  const tries = [[cx, cy]];
  for (let f = 0.1; f < 0.5; f += 0.1)
    for (const [dx, dy] of [[0, -1], [0, 1], [-1, 0], [1, 0], [-1, -1], [1, -1], [-1, 1], [1, 1]])
      tries.push([cx + dx * f * r.width, cy + dy * f * r.height]);
  for (const [x, y] of tries) {
    const px = Math.round(x), py = Math.round(y);
    const hit = document.elementFromPoint(px, py);
    if (hit && (hit === el || el.contains(hit))) return [px, py];
  }
  return null;
}"""


async def _points(env, selector: str, where: str = "true") -> list[list]:
    """``[x, y, el-index]`` for each element matching ``selector`` for which the JS expression ``where``
    (over ``el``) holds and that has an uncovered pixel; ``x, y`` is that pixel."""
    return await env.page.evaluate(
        f"""(sel) => {{ {_POINT_OF}
          const out = [];
          document.querySelectorAll(sel).forEach((el, i) => {{
            if (!({where})) return;
            const p = pointOf(el);
            if (p) out.push([p[0], p[1], i]);
          }});
          return out; }}""", selector)


async def _point(env, selector: str, where: str = "true") -> tuple[int, int]:
    found = await _points(env, selector, where)
    if not found:
        raise LookupError(f"oracle: no visible element {selector!r} where {where!r} on {env.page.url}")
    return found[0][0], found[0][1]


async def _click_where(env, selector: str, where: str = "true"):
    x, y = await _point(env, selector, where)
    yield Click(x=x, y=y)


def _quoted(query: str) -> list[str]:
    return re.findall(r'"([^"]*)"', query)


async def _js(env, source: str, arg=None):
    return await env.page.evaluate(source, arg)


async def _settled(env, source: str, interval_s: float = 0.05, timeout_s: float = 10.0):
    """Poll the JS function ``source`` until two reads ``interval_s`` apart agree (an animation is over)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    last = await _js(env, source)
    while loop.time() < deadline:
        await asyncio.sleep(interval_s)
        now = await _js(env, source)
        if now == last:
            return now
        last = now
    raise TimeoutError(f"oracle: the page kept changing for {timeout_s:g} s")


# ---- shapes in a grid (shapes.js) -----------------------------------------------------------------------

# Each rendered grid item as MiniWoB's shapes.js describes it: type (letter/digit/shape), text (the
# character or shape name), colour, size (large/small from its rendered size) and a clickable pixel.
_GRID_ITEMS_JS = """(sel) => { POINT_OF
  const out = [];
  for (const el of document.querySelectorAll(sel + ' > *')) {
    let type = 'shape', text, big;
    if (el.tagName === 'text') {
      text = el.textContent; type = /[0-9]/.test(text) ? 'digit' : 'letter';
      big = parseFloat(el.getAttribute('font-size')) > 15;
    } else if (el.tagName === 'rect') { text = 'rectangle'; big = parseFloat(el.getAttribute('width')) > 15; }
    else if (el.tagName === 'circle') { text = 'circle'; big = parseFloat(el.getAttribute('r')) > 7.5; }
    else if (el.tagName === 'polygon') { text = 'triangle'; big = el.getBBox().width > 15; }
    else continue;
    out.push({type, text, color: el.getAttribute('fill'), size: big ? 'large' : 'small', point: pointOf(el)});
  }
  return out; }""".replace("POINT_OF", _POINT_OF)

_SIZES = ("large", "small")
_COLORS = ("red", "green", "blue", "aqua", "black", "magenta", "yellow")


def _grid_matches(item: dict, description: str) -> bool:
    """Does a grid item fit shapes.js's lossy description ("large red item", "small letter", "blue e")?"""
    words = description.split()
    thing = words[-1]
    size = next((w for w in words[:-1] if w in _SIZES), None)
    color = next((w for w in words[:-1] if w in _COLORS), None)
    return ((size is None or item["size"] == size) and (color is None or item["color"] == color)
            and (thing == "item" or thing in (item["text"], item["type"])))


@solver("click-shape")
async def _click_shape(env, query):
    description = re.match(r"Click on an? (.+)$", query.strip()).group(1)
    items = await _js(env, _GRID_ITEMS_JS, "#area_svg")
    item = next(i for i in items if _grid_matches(i, description) and i["point"])
    yield Click(x=item["point"][0], y=item["point"][1])


@solver("count-shape")
async def _count_shape(env, query):
    description = re.search(r"How many (.+)s are there\?", query).group(1)
    items = await _js(env, _GRID_ITEMS_JS, "#area_svg")
    count = sum(_grid_matches(i, description) for i in items)
    async for a in ui.click_text(env, str(count), "#count-buttons", ("BUTTON",)):
        yield a


@solver("ascending-numbers")
async def _ascending_numbers(env, query):
    # "1" is a number; clicking it hides the others under boxes numbered by data-index, clicked in order.
    async for a in _click_where(env, "#area_svg text", "el.textContent === '1'"):
        yield a
    for index in range(2, 6):
        async for a in _click_where(env, "#area_svg rect", f"el.getAttribute('data-index') === '{index}'"):
            yield a


@solver("grid-coordinate")
async def _grid_coordinate(env, query):
    wanted = re.search(r"\(-?\d,-?\d\)", query).group(0)
    async for a in _click_where(env, "svg circle", f"el.id === {wanted!r}"):
        yield a


@solver("click-shades")
async def _click_shades(env, query):
    color = re.search(r"shades of (\w+)", query).group(1)
    for x, y, _ in await _points(env, "#area span", f"el.getAttribute('data-color') === {color!r}"):
        yield Click(x=x, y=y)
    async for a in ui.click(env, "#submit", wait=False):
        yield a


@solver("find-greatest")
async def _find_greatest(env, query):
    cards = await _points(env, "#cardholder .card", "true")
    values = await _js(env, "() => [...document.querySelectorAll('#cardholder .card-value')].map(e => +e.textContent)")
    x, y, _ = max(cards, key=lambda c: values[c[2]])
    yield Click(x=x, y=y)
    async for a in ui.click(env, "#submit", wait=False):
        yield a


@solver("generate-number")
async def _generate_number(env, query):
    def wanted(n: int) -> bool:
        if m := re.search(r"less than (\d+)", query):
            return n < int(m.group(1))
        if m := re.search(r"greater than (\d+)", query):
            return n > int(m.group(1))
        return n % 2 == (1 if "odd" in query else 0)

    for _ in range(STEP_LIMITS["generate-number"] - 1):
        async for a in ui.click(env, "#generate", wait=False):
            yield a
        if wanted(int(await _js(env, "() => document.getElementById('display-number').textContent"))):
            break
    async for a in ui.click(env, "#submit", wait=False):
        yield a

# Each press draws 0-10 at random; the worst requirement (less than 5) holds with p = 5/11, so 29 presses
# all miss with p < 3e-8.
STEP_LIMITS["generate-number"] = 30


@solver("guess-number")
async def _guess_number(env, query):
    low, high = 0, 9
    while low <= high:
        guess = (low + high) // 2
        async for a in ui.fill(env, "#tt", str(guess)):
            yield a
        async for a in ui.click(env, "#subbtn", wait=False):
            yield a
        feedback = await _js(env, "() => [...document.querySelectorAll('#feedback > div')]"
                                  ".filter(d => !d.classList.contains('hide')).map(d => d.id)[0]")
        if feedback == "higher":
            low = guess + 1
        elif feedback == "lower":
            high = guess - 1
        else:
            return


# ---- points on a plane: the page scores a click by its distance from an exact point ---------------------

def _best_pixel(score, xs: range, ys: range) -> tuple[int, int, float]:
    """The whole pixel (x, y) in ``xs`` x ``ys`` with the highest ``score(x, y)`` (numpy arrays in, out)."""
    gx, gy = np.meshgrid(np.array(xs, dtype=float), np.array(ys, dtype=float))
    values = np.nan_to_num(score(gx, gy), nan=-np.inf)
    j, i = np.unravel_index(np.argmax(values), values.shape)
    return int(gx[j, i]), int(gy[j, i]), float(values[j, i])


async def _svg_geometry(env, selector: str) -> dict:
    """The svg's clickable viewport box (above the Submit button, which overlaps its foot, and inside the
    viewport) and the centres (svg units) of the circles matching ``selector`` inside it."""
    return await _js(env, """(sel) => { const svg = document.querySelector('svg');
        const r = svg.getBoundingClientRect(), button = document.getElementById('subbtn').getBoundingClientRect();
        return {box: [r.left, r.top, r.right, Math.min(r.bottom, button.top, window.innerHeight)],
                circles: [...svg.querySelectorAll(sel)].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])}; }""",
                     selector)


def _svg_pixels(box) -> tuple[range, range]:
    left, top, right, bottom = box
    return range(math.ceil(left) + 1, int(right) - 1), range(math.ceil(top) + 1, int(bottom) - 1)


async def _click_best_then_submit(env, score, box):
    """Click the whole pixel of the svg's ``box`` with the highest ``score(x, y)``, then Submit."""
    x, y, _ = _best_pixel(score, *_svg_pixels(box))
    yield Click(x=x, y=y)
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


# The pages map a click to svg units as (pageX, pageY - 50) (their QUERY_PADDING), whatever the svg's offset.
_QUERY_PADDING = 50


@solver("circle-center")
async def _circle_center(env, query):
    geometry = await _svg_geometry(env, ".black-circle")
    (cx, cy), = geometry["circles"]
    # circle-center compares the click's bbox corner (click - 3.5) with the centre - 3 (its RADIUS_PADDING).
    async for a in _click_best_then_submit(
            env, lambda x, y: -np.hypot(x - 0.5 - cx, y - _QUERY_PADDING - 0.5 - cy), geometry["box"]):
        yield a

MAX_REWARD["circle-center"] = (0.97, ("the score falls linearly with the click's distance from a point half a pixel "
                                      "off the pixel grid (0.71 px at best, radius >= 25 px): 1 - 0.71/25 = 0.972"))


@solver("find-midpoint")
async def _find_midpoint(env, query):
    geometry = await _svg_geometry(env, ".black-circle")
    (ax, ay), (bx, by) = geometry["circles"]
    mx, my = (ax + bx) / 2, (ay + by) / 2
    async for a in _click_best_then_submit(env, lambda x, y: -np.hypot(x - mx, y - _QUERY_PADDING - my),
                                           geometry["box"]):
        yield a

MAX_REWARD["find-midpoint"] = (0.97, ("the score is 1 - distance/30 from the exact midpoint, which lies on a half "
                                      "pixel when the points' coordinates differ by an odd number (0.71 px: 0.976)"))


def _angle(ax, ay, bx, by, vx, vy):
    """The angle A-V-B in degrees, as bisect-angle computes it (law of cosines)."""
    pav, pbv, pab = np.hypot(vx - ax, vy - ay), np.hypot(vx - bx, vy - by), np.hypot(bx - ax, by - ay)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.degrees(np.arccos(np.clip((pbv * pbv + pav * pav - pab * pab) / (2 * pbv * pav), -1, 1)))


@solver("bisect-angle")
async def _bisect_angle(env, query):
    geometry = await _svg_geometry(env, ".init-blue, .init-black")
    (vx, vy), (ax, ay), (bx, by) = geometry["circles"]
    total = _angle(ax, ay, bx, by, vx, vy)

    def score(x, y):
        y = y - _QUERY_PADDING
        a, b = _angle(ax, ay, x, y, vx, vy), _angle(bx, by, x, y, vx, vy)
        valid = (a <= total) & (b <= total) & (np.hypot(x - vx, y - vy) > 3)
        return np.where(valid, (total - np.maximum(a, b)) / (total / 2), -np.inf)

    async for a in _click_best_then_submit(env, score, geometry["box"]):
        yield a

MAX_REWARD["bisect-angle"] = (0.99, ("the score falls with the angle between the click's ray and the exact bisector; "
                                     "the best whole pixel in the svg misses it by a small fraction of a degree"))


# ---- drags ----------------------------------------------------------------------------------------------

_DRAG_STEPS = 8  # the web environment's Drag moves the pointer in this many mousemove events

async def _rect(env, selector: str) -> list[float]:
    """``[left, top, right, bottom]`` of ``selector``'s first element, in viewport pixels."""
    return await _js(env, """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                                       return [r.left, r.top, r.right, r.bottom]; }""", selector)


async def _drag_by(env, selector: str, dx: int, dy: int, where: str = "true"):
    """Press on an uncovered pixel of ``selector`` (where ``where`` holds) and drag it by (dx, dy), the
    end kept inside the viewport."""
    x, y = await _point(env, selector, where)
    width, height = env.screen_size
    yield Drag(x1=x, y1=y, x2=min(max(x + dx, 1), width - 2), y2=min(max(y + dy, 1), height - 2))


@solver("drag-box")
async def _drag_box(env, query):
    # The small box is drawn above the large one (z-index), so it can always be grabbed.
    small, large = await _rect(env, "#draggableSmall"), await _rect(env, "#draggableLarge")
    # Contained means its top-left lies 1..29 px right of and below the large box's top-left.
    async for a in _drag_by(env, "#draggableSmall", round(large[0] + 15 - small[0]), round(large[1] + 15 - small[1])):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


_DIRECTIONS = {"left": (-30, 0), "right": (30, 0), "up": (0, -30), "down": (0, 30)}


@solver("drag-circle", "drag-single-shape")
async def _drag_shape(env, query):
    dx, dy = _DIRECTIONS[re.search(r"Drag the \w+ (left|right|up|down)", query).group(1)]
    async for a in _drag_by(env, "svg circle, svg rect, svg polygon", dx, dy):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


def _sortable_drop(cells: list[list[float]], floating: bool, source: int, start, end) -> int:
    """Where jQuery UI's sortable (1.12, tolerance "intersect") leaves the ``source``-th item of a list laid
    out in ``cells`` ([left, top, width, height] per place) after a Drag from ``start`` to ``end``.

    Per pointer move it takes the item under the pointer and, when the pointer is on the half the move
    heads to (for a floating list the horizontal direction decides), puts the placeholder before (moving
    up/left) or after (down/right) it; items refill the cells in order round the placeholder."""
    order = [i for i in range(len(cells)) if i != source]
    order.insert(source, None)  # None is the placeholder
    last = None
    for k in range(1, _DRAG_STEPS + 1):
        x = start[0] + (end[0] - start[0]) * k / _DRAG_STEPS
        y = start[1] + (end[1] - start[1]) * k / _DRAG_STEPS
        dx, dy = (0, 0) if last is None else (x - last[0], y - last[1])
        last = (x, y)
        horizontal = (dx > 0) - (dx < 0)
        vertical = (dy > 0) - (dy < 0)
        for place, item in enumerate(order):
            left, top, width, height = cells[place]
            if item is None or not (top <= y < top + height and left <= x < left + width):
                continue
            after = (horizontal > 0 or vertical > 0) if floating else vertical > 0
            if not floating and vertical == 0:
                break
            hole = order.index(None)
            if (after and hole == place + 1) or (not after and hole == place - 1):
                continue
            if floating and horizontal:
                on_side = (x >= left + width / 2) == (horizontal > 0)
            else:
                on_side = vertical != 0 and (y >= top + height / 2) == (vertical > 0)
            if not on_side:
                break
            order.remove(None)
            place = order.index(item)
            order.insert(place + 1 if after else place, None)
            break
    return order.index(None)


async def _sortable_drag(env, source: int, target: int):
    """Drag the ``source``-th item (0-based) of ``#sortable`` so that it ends ``target``-th: the drop point
    is the one nearest the target's centre for which the sortable's own rules (and those of the points
    3 px round it) put it there."""
    cells, floating = await _js(env, """() => { const items = [...document.querySelectorAll('#sortable li')];
        return [items.map(li => { const r = li.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }),
                /left|right/.test(getComputedStyle(items[0]).float)]; }""")
    points = await _points(env, "#sortable li")
    start = points[source][:2]
    left, top, width, height = cells[target]
    goal = (left + width / 2, top + height / 2)
    best = None
    for x in range(int(min(c[0] for c in cells)), int(max(c[0] + c[2] for c in cells))):
        for y in range(int(min(c[1] for c in cells)), int(max(c[1] + c[3] for c in cells))):
            distance = math.dist((x, y), goal)
            if best is not None and distance >= best[0]:
                continue
            if all(_sortable_drop(cells, floating, source, start, (x + ex, y + ey)) == target
                   for ex, ey in ((0, 0), (3, 0), (-3, 0), (0, 3), (0, -3))):
                best = (distance, x, y)
    if best is None:
        raise LookupError(f"oracle: no drop point moves item {source + 1} to place {target + 1}")
    yield Drag(x1=start[0], y1=start[1], x2=best[1], y2=best[2])


_ORDINAL = {"top": 1, "bottom": 5}
_GRID_PLACES = {"top left": 1, "top center": 2, "top right": 3, "center left": 4, "center": 5, "center right": 6,
                "bottom left": 7, "bottom center": 8, "bottom right": 9}
_GRID_MOVES = {"up": -3, "down": 3, "left": -1, "right": 1}


@solver("drag-items", "drag-items-grid")
async def _drag_items(env, query):
    name, where = re.match(r"Drag (.+?) (to the .+|up by one.*|down by one.*|left by one.*|right by one.*)\.$",
                           query.strip()).groups()
    names = await _js(env, "() => [...document.querySelectorAll('#sortable li')].map(li => li.textContent.trim())")
    source = names.index(name) + 1
    if m := re.match(r"to the (\d)\w\w position", where):
        target = int(m.group(1))
    elif m := re.match(r"to the (top|bottom)$", where):
        target = _ORDINAL[m.group(1)]
    elif m := re.match(r"to the (.+)$", where):
        target = _GRID_PLACES[m.group(1)]
    else:
        step = re.match(r"(\w+) by one", where).group(1)
        target = source + (_GRID_MOVES[step] if len(names) == 9 else {"up": -1, "down": 1}[step])
    async for a in _sortable_drag(env, source - 1, target - 1):
        yield a


@solver("drag-sort-numbers")
async def _drag_sort_numbers(env, query):
    for place in range(3):
        numbers = await _js(env, "() => [...document.querySelectorAll('#sortable li')].map(li => +li.textContent)")
        low = min(range(place, len(numbers)), key=numbers.__getitem__)
        if low != place:
            async for a in _sortable_drag(env, low, place):
                yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


async def _svg_origin(env) -> tuple[float, float]:
    left, top, _, _ = await _rect(env, "#area_svg")
    return left, top


async def _drag_into(env, shapes: list[list], box: tuple[float, float, float, float]):
    """Drag each shape ``[x, y, index]`` so shapes.js's drag leaves its corner inside ``box`` (svg units)."""
    left, top = await _svg_origin(env)
    bx, by, bw, bh = box
    for n, (x, y, _) in enumerate(shapes):
        # shapes.js puts the dragged shape's corner at the pointer less 40-60 % of its size: aim the pointer at
        # the box's centre, spread a little so dropped shapes do not stack.
        tx = left + bx + bw / 2 + (n % 3 - 1) * bw / 5
        ty = top + by + bh / 2 + (n // 3 - 0.5) * bh / 5
        yield Drag(x1=x, y1=y, x2=round(tx), y2=round(ty))


_SHAPE_TAGS = {"rectangles": "rect", "circles": "circle", "triangles": "polygon"}
_SHAPES_SELECTOR = "#area_svg rect:not(#shape-container), #area_svg circle, #area_svg polygon"


def _in_kind(kind: str) -> str:
    return f"el.tagName === {_SHAPE_TAGS[kind]!r}"


@solver("drag-shapes")
async def _drag_shapes(env, query):
    kind = re.search(r"Drag all (\w+) into", query).group(1)
    box = await _js(env, """() => { const c = document.getElementById('shape-container');
        return ['x', 'y', 'width', 'height'].map(k => +c.getAttribute(k)); }""")
    async for a in _drag_into(env, await _points(env, _SHAPES_SELECTOR, _in_kind(kind)), box):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("drag-shapes-2")
async def _drag_shapes_2(env, query):
    wanted = re.search(r"Drag all (.+?) into the left box", query).group(1)
    if wanted in _SHAPE_TAGS:
        test = _in_kind(wanted)
    else:
        test = f"el.getAttribute('fill') === {wanted.removesuffix(' shapes')!r}"
    left_box, right_box = (2, 5, 70, 50), (84, 5, 70, 50)  # drag-shapes-2's LEFT_BOX and RIGHT_BOX
    async for a in _drag_into(env, await _points(env, _SHAPES_SELECTOR, test), left_box):
        yield a
    async for a in _drag_into(env, await _points(env, _SHAPES_SELECTOR, f"!({test})"), right_box):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


# ---- reading numbers and figures ------------------------------------------------------------------------

@solver("identify-shape")
async def _identify_shape(env, query):
    item, = await _js(env, _GRID_ITEMS_JS, "#area_svg")
    kind = item["text"] if item["type"] == "shape" else item["type"]
    async for a in _click_where(env, "#area-buttons button", f"el.getAttribute('data-type') === {kind!r}"):
        yield a


@solver("odd-or-even")
async def _odd_or_even(env, query):
    numbers = await _js(env,
                        "() => [...document.querySelectorAll('#numbers .display-number')].map(d => +d.textContent)")
    for row, number in enumerate(numbers, 1):
        async for a in ui.click(env, f"#numbers .row:nth-child({row}) .{'odd' if number % 2 else 'even'}", wait=False):
            yield a
    async for a in ui.click(env, "#submit", wait=False):
        yield a


async def _answer(env, value: int):
    async for a in ui.fill(env, "#math-answer", str(value)):
        yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("simple-algebra")
async def _simple_algebra(env, query):
    problem = await _js(env, "() => document.getElementById('math-problem').textContent")
    if m := re.match(r"\s*x ([-+]) (\d+) = (\d+)", problem):
        op, digit, total = m.group(1), int(m.group(2)), int(m.group(3))
        x = total - digit if op == "+" else total + digit
    else:
        digit, op, total = re.match(r"\s*(\d+) ([-+]) x = (\d+)", problem).groups()
        x = int(total) - int(digit) if op == "+" else int(digit) - int(total)
    async for a in _answer(env, x):
        yield a


@solver("visual-addition")
async def _visual_addition(env, query):
    blocks = await _js(env, "() => document.querySelectorAll('#math-problem .addition-block').length")
    async for a in _answer(env, blocks):
        yield a


@solver("number-checkboxes")
async def _number_checkboxes(env, query):
    digit = int(_quoted(query)[0])
    pattern = await _js(env, "(d) => PATTERNS[d]", digit)  # the page's own drawing of each digit
    for row, cells in enumerate(pattern, 1):
        for column, on in enumerate(cells, 1):
            if on:
                async for a in ui.click(env, f"#checkboxes p:nth-of-type({row}) input:nth-of-type({column})",
                                        wait=False):
                    yield a
    async for a in ui.click(env, "#subbtn", wait=False):
        yield a


@solver("right-angle")
async def _right_angle(env, query):
    geometry = await _svg_geometry(env, "#init-black, #init-blue")
    (ax, ay), (vx, vy) = geometry["circles"]

    def score(x, y):
        # The click's circle has radius 3 and the others 3.5: the page's bbox corners put it half a pixel off.
        angle = _angle(ax, ay, x + 0.5, y - _QUERY_PADDING + 0.5, vx, vy)
        far = np.hypot(x - vx, y - _QUERY_PADDING - vy) > 8
        return np.where(far, (90 - np.abs(90 - angle)) / 90, -np.inf)

    async for a in _click_best_then_submit(env, score, geometry["box"]):
        yield a

MAX_REWARD["right-angle"] = (0.99, ("the score is (90 - |90 - angle|)/90: the best whole pixel in the svg makes an "
                                    "angle within a small fraction of a degree of 90"))


@solver("simon-says")
async def _simon_says(env, query):
    # The page blinks the sequence (a button gains the class "push" for 250 ms, one every 600 ms): watch it.
    loop = asyncio.get_running_loop()
    sequence: list[str] = []
    lit, last_blink = None, loop.time()
    if await _js(env, "() => Date.now() - core.ept0") > 800:  # the first blink is over at 850 ms
        raise RuntimeError("oracle: simon-says started watching too late to see the first blink")
    while len(sequence) < 3 or loop.time() - last_blink < 0.75:
        now = await _js(env, "() => { const b = document.querySelector('#area button.push'); return b && b.id; }")
        if now and now != lit:
            sequence.append(now)
            last_blink = loop.time()
        lit = now
        await asyncio.sleep(0.03)
    for button in sequence:
        async for a in ui.click(env, f"#{button}", wait=False):
            yield a


# ---- drawing: MintGym's Drag presses, moves in 8 equal steps and releases --------------------------------

async def _marked_dot(env) -> tuple[float, float, list[float]]:
    """The marked dot's centre in viewport pixels and the svg's viewport box."""
    return await _js(env, """() => { const svg = document.querySelector('svg'), r = svg.getBoundingClientRect();
        const c = document.getElementById('circ');
        return [r.left + +c.getAttribute('cx'), r.top + +c.getAttribute('cy'),
                [r.left, r.top, r.right, r.bottom]]; }""")


@solver("draw-line")
async def _draw_line(env, query):
    cx, cy, _ = await _marked_dot(env)
    # The page scores the line through (centre - 4, centre - 4) (its generateCenter offset) and needs one
    # sampled point within 6 px of it: a drag of 48 px whose 4th sample lands there, 3 px from the centre
    # line so it still crosses the 4 px dot.
    if "horizontal" in query:
        x1, y = round(cx - 4) - 24, round(cy - 3)
        yield Drag(x1=x1, y1=y, x2=x1 + 48, y2=y)
    else:
        x, y1 = round(cx - 3), round(cy - 4) - 24
        yield Drag(x1=x, y1=y1, x2=x, y2=y1 + 48)
    async for a in ui.click(env, "#controls button", wait=False):
        yield a


@solver("draw-circle")
async def _draw_circle(env, query):
    cx, cy, (left, top, right, bottom) = await _marked_dot(env)
    bottom = min(bottom, env.screen_size[1])
    # A Drag is one straight stroke, so the oracle draws the flattest arc it can: a 24 x 24 px stroke
    # tangent to a circle round the dot, far enough out that its samples' distances from the dot vary by
    # less than the page's 2 px standard deviation (its test of roundness), and its box is >= 20 x 20 px.
    best = None
    for radius in range(44, 27, -2):
        for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):  # the tangent point lies diagonally off the dot
            tx, ty = cx + sx * radius / math.sqrt(2), cy + sy * radius / math.sqrt(2)
            x1, y1, x2, y2 = round(tx - sy * 12), round(ty + sx * 12), round(tx + sy * 12), round(ty - sx * 12)
            if not all(left + 2 <= x <= right - 2 and top + 2 <= y <= bottom - 2 for x, y in ((x1, y1), (x2, y2))):
                continue
            t = np.linspace(0, 1, _DRAG_STEPS + 1)
            spread = float(np.hypot(x1 + (x2 - x1) * t - cx, y1 + (y2 - y1) * t - cy).std())
            if best is None or spread < best[0]:
                best = (spread, x1, y1, x2, y2)
    if best is None:
        raise LookupError("oracle: no room round the marked point for a stroke")
    _, x1, y1, x2, y2 = best
    yield Drag(x1=x1, y1=y1, x2=x2, y2=y2)
    async for a in ui.click(env, "#controls button", wait=False):
        yield a


@solver("click-pie", "click-pie-nodelay")
async def _click_pie(env, query):
    label = _quoted(query)[0]
    async for a in _click_where(env, "#wheelnav-divWheel-spreader"):
        yield a
    # The menu opens with an animation (click-pie) or at once (-nodelay): wait until the slices stop moving.
    await _settled(env, """() => [...document.querySelectorAll('#divWheel [id^=wheelnav-divWheel-slice-]')]
                             .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width]; })""",
                   interval_s=0.1)
    # Click the item's slice off its label (hovering an item redraws its label, so a press on the label
    # may land on the bare svg). Known limit: the item the wheel starts with selected (slice 0) cannot be
    # clicked in Chromium at all: hovering it re-appends its nodes on every mouseover (wheelnav's
    # selectedToFront), so each press and release goes to the svg; seeds that ask for it are lost.
    index = await _js(env, """(label) => [...document.querySelectorAll('#divWheel [id^=wheelnav-divWheel-title-]')]
                                  .find(e => e.textContent === label).id.split('-').pop()""", label)
    async for a in _click_where(env, f"#wheelnav-divWheel-slice-{index}"):
        yield a


# count-sides draws a regular polygon (3-7 sides, radius 35) round the canvas centre and keeps the count in
# a local variable: read the drawing's outline as its outermost inked radius per degree.
_OUTLINE_JS = """() => {
  const c = document.getElementById('c'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height);
  const out = [];
  for (let deg = 0; deg < 360; deg++) {
    const a = deg * Math.PI / 180;
    let far = 0;
    for (let r = 1; r < 48; r += 0.5) {
      const x = Math.round(c.width / 2 + r * Math.cos(a)), y = Math.round(c.height / 2 + r * Math.sin(a));
      if (x < 0 || y < 0 || x >= c.width || y >= c.height) break;
      if (d.data[(y * c.width + x) * 4 + 3] > 128) far = r;
    }
    out.push(far);
  }
  return out; }"""


@solver("count-sides")
async def _count_sides(env, query):
    outline = np.array(await _js(env, _OUTLINE_JS), dtype=float)
    # A regular n-gon's outline repeats n times round the circle: its strongest harmonic among 3..7 is n.
    spectrum = np.abs(np.fft.rfft(outline - outline.mean()))
    sides = max(range(3, 8), key=lambda n: spectrum[n])
    async for a in _click_where(env, "#form button", f"el.getAttribute('data-sides') === '{sides}'"):
        yield a


# ---- moving targets -------------------------------------------------------------------------------------

_DONE_JS = "() => WOB_DONE_GLOBAL === true"

# moving-items: circles (radius 18) cross the svg one after another; the page counts a click within 23 px of
# a circle's current centre (from event.offsetX/Y) and removes that circle.
_CROSSING_JS = """() => { const svg = document.getElementById('area_svg'), r = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('circle.item')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])
    .filter(([x, y]) => x > 4 && x < r.width - 4)
    .map(([x, y]) => [r.left + x, r.top + y]); }"""


@solver("moving-items")
async def _moving_items(env, query):
    width, height = env.screen_size
    while True:
        await ui.wait_js(env, f"() => ({_DONE_JS})() || ({_CROSSING_JS})().length > 0", timeout_s=12)
        if await _js(env, _DONE_JS):
            return
        crossing = await _js(env, _CROSSING_JS)
        if not crossing:
            continue
        x, y = crossing[0]  # they cross at about 56 px/s: a click lands well within 23 px of where one was read
        yield Click(x=min(max(round(x), 3), width - 3), y=min(max(round(y), 53), height - 2))


_CIRCLE_JS = """() => { const svg = document.getElementById('area_svg'), r = svg.getBoundingClientRect(),
  c = document.getElementById('circ'); return [r.left + +c.getAttribute('cx'), r.top + +c.getAttribute('cy')]; }"""


@solver("chase-circle")
async def _chase_circle(env, query):
    # The circle (radius 22) glides to a new random spot every 2 s for 10 s; the score is the share of that
    # time the pointer spent inside it, counted from the start: go there at once, then move onto its centre
    # whenever it has drifted 16 px from the pointer (the page ends the episode only 100 ms before its own
    # time-out, and its glides run late when the renderer is busy: the oracle keeps its steps few).
    x, y = await _js(env, _CIRCLE_JS)
    pointer = (round(x), round(y))
    yield Move(x=pointer[0], y=pointer[1])
    while not await _js(env, _DONE_JS):
        x, y = await _js(env, _CIRCLE_JS)
        if math.dist(pointer, (x, y)) > 16:
            pointer = (round(x), round(y))
            yield Move(x=pointer[0], y=pointer[1])
        else:
            await asyncio.sleep(0.05)

STEP_LIMITS["chase-circle"] = 50
MAX_REWARD["chase-circle"] = (0.9, ("the page counts as missed the time from the problem's start until the pointer "
                                    "first enters the circle (the reset's own work and the first step, 100-700 ms "
                                    "on a loaded machine) and moments it lags the circle's fastest glides"))


# ---- searching by feedback ------------------------------------------------------------------------------

_HOT_COLD_BANDS = {"HOT": (0, 5), "WARM": (5, 10), "COLD": (10, 40), "ICE COLD": (40, math.inf)}


@solver("hot-cold")
async def _hot_cold(env, query):
    # The hidden spot is a whole (x, y) in [5, 155) x [5, 120) of the page's (pageX, pageY - 50); hovering
    # says how far the pointer is (HOT < 5 < WARM < 10 < COLD < 40 < ICE COLD). Keep every spot the answers
    # so far allow, hover where the worst answer leaves fewest, and click once one pixel is HOT for all.
    left, top, right, bottom = await _rect(env, "#touch-area")
    xs, ys = np.meshgrid(np.arange(5, 155), np.arange(5, 120))
    spots = np.stack([xs.ravel(), ys.ravel() + _QUERY_PADDING], axis=1).astype(np.float32)  # in viewport pixels
    px, py = np.meshgrid(np.arange(math.ceil(left) + 1, int(right) - 1), np.arange(math.ceil(top) + 1, int(bottom) - 1))
    pixels = np.stack([px.ravel(), py.ravel()], axis=1).astype(np.float32)

    def distances(points):
        return np.sqrt(((points[:, None, :] - spots[None, :, :]) ** 2).sum(-1))

    for _ in range(24):  # the pack's default 25 steps; it takes 5-14 hovers and the click
        if not len(spots):
            raise RuntimeError("oracle: no hidden spot fits the page's hot-cold answers")
        low, high = spots.min(0), spots.max(0)
        if (high - low).max() < 10:  # small enough that one pixel may be HOT for every spot left
            near = pixels[((pixels >= low - 5) & (pixels <= high + 5)).all(1)]
            reach = distances(near).max(1)
            if reach.min() < 5:
                x, y = near[int(reach.argmin())]
                yield Click(x=int(x), y=int(y))
                return
        probes = pixels[((pixels >= low - 40) & (pixels <= high + 40)).all(1)]
        probes = probes[::max(1, len(probes) * len(spots) // 2_000_000)]
        d = distances(probes)
        worst = np.max([((d >= lo) & (d < hi)).sum(1) for lo, hi in _HOT_COLD_BANDS.values()], axis=0)
        x, y = probes[int(worst.argmin())]
        yield Move(x=int(x), y=int(y))
        lo, hi = _HOT_COLD_BANDS[await _js(env, "() => document.getElementById('signal').textContent")]
        d = np.hypot(spots[:, 0] - x, spots[:, 1] - y)
        spots = spots[(d >= lo) & (d < hi)]
    raise RuntimeError("oracle: the hot-cold search ran out of steps")


# ---- tic-tac-toe ----------------------------------------------------------------------------------------

_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
# The page's determineSpace checks, in its order (rows: left, middle, right cell; diagonals; columns: left,
# middle, right): each is a list of (empty cell, the cells that must hold the mark).
_CHECKS = (
    [(3 * i, [3 * i + 1, 3 * i + 2]) for i in range(3)],
    [(3 * i + 1, [3 * i, 3 * i + 2]) for i in range(3)],
    [(3 * i + 2, [3 * i, 3 * i + 1]) for i in range(3)],
    [(0, [4, 8]), (4, [0, 8]), (8, [0, 4]), (2, [4, 6]), (4, [2, 6]), (6, [2, 4])],
    [(0, [3, 6]), (3, [0, 6]), (6, [0, 3])],
    [(1, [4, 7]), (4, [1, 7]), (7, [1, 4])],
    [(2, [5, 8]), (5, [2, 8]), (8, [2, 5])],
)


def _won(board, mark) -> bool:
    return any(all(board[i] == mark for i in line) for line in _LINES)


def _page_pick(board, mark):
    """The page's determineSpace for a player ``mark``: the last of its seven checks (in order) that finds an
    empty cell completing a line of ``mark``, or None. Each check reports its first hit."""
    hits = []
    for check in _CHECKS:
        hit = next((cell for cell, others in check if board[cell] == 0 and all(board[o] == mark for o in others)), None)
        if hit is not None:
            hits.append(hit)
    return hits[-1] if hits else None


def _o_moves(board) -> list[tuple[float, int]]:
    """The computer's replies with their probabilities: 55 % a uniformly random free cell, else it
    completes its own line, else blocks X's, else again a random cell."""
    free = [i for i in range(9) if board[i] == 0]
    smart = _page_pick(board, -1)
    if smart is None:
        smart = _page_pick(board, 1)
    moves = [(0.55 / len(free), cell) for cell in free]
    if smart is None:
        return [(p / 0.55, cell) for p, cell in moves]
    return moves + [(0.45, smart)]


def _x_value(board, memo) -> tuple[float, int | None]:
    """X's best chance of winning from ``board`` with X to move, and the cell that gets it."""
    key = tuple(board)
    if key in memo:
        return memo[key]
    best = (0.0, None)
    for cell in (i for i in range(9) if board[i] == 0):
        board[cell] = 1
        if _won(board, 1):
            value = 1.0
        elif 0 not in board:
            value = 0.0
        else:
            value = 0.0
            for p, reply in _o_moves(board):
                board[reply] = -1
                if not _won(board, -1) and 0 in board:
                    value += p * _x_value(board, memo)[0]
                board[reply] = 0
        board[cell] = 0
        if value > best[0] or best[1] is None:
            best = (value, cell)
    memo[key] = best
    return best


@solver("tic-tac-toe")
async def _tic_tac_toe(env, query):
    memo: dict = {}
    while not await _js(env, _DONE_JS):
        board = await _js(env, """() => [...Array(9).keys()].map(i => {
            const c = document.getElementById('ttt-' + i).className;
            return c.includes('mark-x') ? 1 : c.includes('mark-o') ? -1 : 0; })""")
        _, cell = _x_value(board, memo)
        async for a in ui.click(env, f"#ttt-{cell}", wait=False):
            yield a


# ---- drag-cube: a cube that spins with the drag's momentum ----------------------------------------------

# The page samples the pointer every 20 ms: while the button is down, the movement since the last sample
# adds torque, which turns the cube (vertical drags tilt it, positionY; horizontal ones spin it, positionX)
# and fades once released. The side facing the user follows from the angles (cube.js's calculatedSide).
_CUBE_JS = """() => { const v = cube.viewport;
  return [v.positionX, v.positionY, Math.abs(v.torqueX) > 1 || Math.abs(v.torqueY) > 1,
          document.querySelector('#area .active').textContent]; }"""
_CUBE_STILL_JS = "() => Math.abs(cube.viewport.torqueX) <= 1 && Math.abs(cube.viewport.torqueY) <= 1"
# positionX bands (degrees) of the four sides round the middle, upright and upside down
_CUBE_BANDS = {False: {"5": 86, "4": 177, "3": 269, "2": 358}, True: {"3": 86, "2": 177, "5": 269, "4": 358}}


def _turn(target: float, now: float) -> float:
    """The signed shortest turn (degrees) from ``now`` to ``target``."""
    return (target - now + 180) % 360 - 180


def _cube_goal(side: str, x: float, y: float) -> tuple[float, float | None]:
    """The (positionY, positionX or None) to aim at for ``side`` from the cube's angles now."""
    if side == "6":
        return 88, None
    if side == "1":
        return 264, None
    upside = abs(_turn(175, y)) < abs(_turn(357, y))  # tilt to the nearer band that shows the middle sides
    return (175 if upside else 357), _CUBE_BANDS[upside][side]


@solver("drag-cube")
async def _drag_cube(env, query):
    side = _quoted(query)[0]
    button = await _rect(env, "#subbtn")
    width, height = env.screen_size
    lane_x, lane_y = 6, 58  # drags run along the page's margins, clear of the Submit button
    pointer = None
    for _ in range(11):  # at most a Move and a Drag each, within the default 25 steps; it takes 2-4 drags
        await ui.wait_js(env, _CUBE_STILL_JS)
        x, y, _, active = await _js(env, _CUBE_JS)
        goal_y, goal_x = _cube_goal(side, x, y)
        error_y = _turn(goal_y, y)
        error_x = 0.0 if goal_x is None else _turn(goal_x, x % 360)
        if active == side and abs(error_y) < 30 and abs(error_x) < 30:
            break
        length = round(min(max(abs(error_y if abs(error_y) >= 30 else error_x) * 0.5, 14), 40))
        if abs(error_y) >= 30:  # dragging down lowers positionY
            step = (0, -length if error_y > 0 else length)
            start = (lane_x, 120 if pointer is None or pointer[0] != lane_x else pointer[1])
        else:  # dragging right raises positionX, unless the cube is upside down
            upside = 90 < y < 270
            step = ((length if error_x > 0 else -length) * (-1 if upside else 1), 0)
            start = (80 if pointer is None or pointer[1] != lane_y else pointer[0], lane_y)
        end = (start[0] + step[0], start[1] + step[1])
        if not (4 <= end[0] <= width - 4 and 55 <= end[1] <= height - 4):
            start = (80 - step[0] // 2, lane_y) if step[1] == 0 else (lane_x, 130 - step[1] // 2)
            end = (start[0] + step[0], start[1] + step[1])
        if pointer != start:  # move there first, so the press does not count a jump as drag
            yield Move(x=start[0], y=start[1])
            await asyncio.sleep(0.06)
        yield Drag(x1=start[0], y1=start[1], x2=end[0], y2=end[1])
        pointer = end
        await asyncio.sleep(0.06)
    # Go to Submit first and let the page sample the pointer there, so the click itself adds no torque.
    bx, by = round((button[0] + button[2]) / 2), round((button[1] + button[3]) / 2)
    yield Move(x=bx, y=by)
    await asyncio.sleep(0.06)
    yield Click(x=bx, y=by)


UNSOLVABLE["hover-shape"] = ("the page never ends an episode with a reward: its score emitter's call to "
                             "core.continuousReward is commented out, so every episode times out with -1 "
                             "(tried: an oracle hovering the highlighted square throughout still timed out)")
