"""The inspector's HTML: a run index, an episode page per trajectory, and a side-by-side comparison of runs.

Every link and image source is relative to the page, so the pages work opened from disk or served by
``mintgym view --serve``. All recorded text is HTML-escaped.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from mintgym.trajectory.inspector.assets import CSS, EPISODE_JS, INDEX_JS
from mintgym.trajectory.inspector.marks import action_caption, action_code, frame_html
from mintgym.trajectory.inspector.runs import STATUS_ORDER, Episode, Run
from mintgym.trajectory.types import StepRecord, Trajectory

PAGE = "index.html"
_e = html.escape


def link(target: Path, page_dir: Path) -> str:
    """``target`` relative to the folder of the page that links to it."""
    return Path(os.path.relpath(target.resolve(), page_dir.resolve())).as_posix()


def badge(status: str) -> str:
    return f'<span class="badge st-{_e(status)}">{_e(status)}</span>'


def document(title: str, nav: list[str], body: str, script: str = "") -> str:
    bar = '<span class="sep">›</span>'.join(nav)
    tail = f"<script>{script}</script>" if script else ""
    return (f"<!doctype html><html lang=en><meta charset=utf-8><meta name=viewport content='width=device-width'>"
            f"<title>{_e(title)}</title><style>{CSS}</style><header class=top>{bar}</header>"
            f"<main>{body}</main>{tail}</html>")


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}s"


# ---- the run index -----------------------------------------------------------------------------------------

def _options(values: list[str], label: str) -> str:
    items = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
    return f'<option value="">all {label}</option>{items}'


def _counts(episodes: list[Episode]) -> str:
    by_status = Counter(e.traj.status for e in episodes)
    parts = [f"<span><b>{len(episodes)}</b> episodes</span>"]
    ordered = sorted(by_status.items(), key=lambda item: STATUS_ORDER.get(item[0], 9))
    parts += [f"<span>{badge(s)} {n}</span>" for s, n in ordered]
    domains: dict[str, list[int]] = {}
    for e in episodes:
        won_total = domains.setdefault(e.traj.domain or "?", [0, 0])
        won_total[0] += e.traj.success
        won_total[1] += 1
    parts += [f"<span>{_e(d)}: {w}/{n} succeeded</span>" for d, (w, n) in sorted(domains.items())]
    return f'<div class="counts">{"".join(parts)}</div>'


def render_index(run: Run) -> str:
    page_dir = run.root
    groups = any(e.group for e in run.episodes)
    rows = []
    for number, ep in enumerate(run.episodes, 1):
        t = ep.traj
        search = " ".join([t.task_id, t.id, t.instruction, t.error or "", t.agent, ep.rel]).lower()
        rows.append(
            f'<tr data-status="{_e(t.status)}" data-task="{_e(t.task_id)}" data-domain="{_e(t.domain)}" '
            f'data-search="{_e(search)}"><td class=num>{number}</td><td>{badge(t.status)}</td>'
            f'<td><a href="{_e(link(ep.path / PAGE, page_dir))}">{_e(t.task_id)}</a></td><td>{_e(t.domain)}</td>'
            f"<td class=num>{t.seed if t.seed is not None else ''}</td><td class=num>{t.total_reward:.3f}</td>"
            f"<td class=num>{len(t.steps)}</td><td class=num>{t.wall_seconds:.1f}s</td><td>{_e(t.agent)}</td>"
            + (f"<td>{_e(ep.group)}</td>" if groups else "")
            + f'<td class=why>{_e((t.error or "")[:300])}</td></tr>')
    tasks = sorted({e.traj.task_id for e in run.episodes})
    domains = sorted({e.traj.domain for e in run.episodes})
    problems = "".join(f"<li>{_e(p)}</li>" for p in run.problems)
    body = (
        f"<h1>{_e(run.name)}</h1><p class=meta>{_e(run.kind)} · {_e(str(run.root))}</p>{_counts(run.episodes)}"
        + (f'<div class="box err">Could not read {len(run.problems)} trajectories:<ul>{problems}</ul></div>'
           if problems else "")
        + '<div class="filters"><label>status <select id="f-status"><option value="all">all</option>'
        '<option value="failed">not successful</option>'
        + "".join(f'<option value="{s}">{s}</option>' for s in STATUS_ORDER)
        + f'</select></label><label>task <select id="f-task">{_options(tasks, "tasks")}</select></label>'
        f'<label>domain <select id="f-domain">{_options(domains, "domains")}</select></label>'
        '<input type="search" id="f-search" placeholder="search task, id, instruction, error">'
        '<span id="shown" class=meta></span></div>'
        '<table id="episodes"><thead><tr><th>#</th><th>status</th><th>task</th><th>domain</th><th>seed</th>'
        "<th>reward</th><th>steps</th><th>time</th><th>agent</th>" + ("<th>folder</th>" if groups else "")
        + f"<th>why</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "<p class=keys>Failures first. On an episode page: j/k or ←/→ step, n/p episode.</p>")
    return document(f"{run.name}: {len(run.episodes)} episodes", ['<span class=here>MintGym inspector</span>',
                                                                 f"<span>{_e(run.name)}</span>"], body, INDEX_JS)


# ---- one episode -------------------------------------------------------------------------------------------

def _pre(text: str, css: str = "") -> str:
    return f"<pre{f' class={css}' if css else ''}>{_e(text)}</pre>"


#: The key under which a trainer's sampled episodes keep the decoded prompt tokens (mintgym.trainer.samples).
DECODED_PROMPT = "prompt"


def _message_texts(step: StepRecord | None, role: str) -> list[str]:
    if step is None or step.messages is None:
        return []
    return [str(p.get("text", "")) for m in step.messages if m.get("role") == role for p in m.get("content") or []]


def _messages(step: StepRecord, previous: StepRecord | None, frames: dict[str, tuple[str, int]], agent: str) -> str:
    """The prompt as sent; a system message the step before also sent is folded away."""
    if step.messages is None:
        decoded = step.extra.get(DECODED_PROMPT)
        if isinstance(decoded, str) and decoded:
            return f'<p class="meta">the prompt tokens, decoded:</p>{_pre(decoded)}'
        return f'<p class="none">no model prompt ({_e(agent)} agent)</p>'
    same_system = _message_texts(step, "system") == _message_texts(previous, "system")
    out = []
    for message in step.messages:
        role = str(message.get("role", "?"))
        parts = []
        for part in message.get("content") or []:
            if part.get("type") == "image":
                size = part.get("size") or ["?", "?"]
                src, index = frames.get(part.get("frame_id") or "", ("", -1))
                label = f"step {index}'s screenshot, shown at {size[0]}x{size[1]}"
                if src:
                    parts.append(f'<span class="thumb"><a href="{_e(src)}"><img src="{_e(src)}" alt="{_e(label)}">'
                                 f'</a><a href="#step-{index}">{_e(label)}</a></span>')
                else:
                    parts.append(f'<span class="thumb">an image of {size[0]}x{size[1]} (frame '
                                 f'{_e(str(part.get("frame_id")))} not recorded)</span>')
            else:
                parts.append(_pre(str(part.get("text", ""))))
        body = "".join(parts)
        if role == "system" and same_system:
            body = f"<details><summary class=meta>the same as the step before</summary>{body}</details>"
        out.append(f'<div class="msg {_e(role)}"><div class="role">{_e(role)}</div>{body}</div>')
    return "".join(out)


def _details(step: StepRecord) -> str:
    facts = {}
    if step.policy_version is not None:
        facts["policy version"] = step.policy_version
    if step.prompt_token_ids:
        facts["prompt tokens"] = len(step.prompt_token_ids)
    if step.response_token_ids:
        facts["response tokens"] = len(step.response_token_ids)
    if step.logprobs:
        facts["mean logprob"] = round(sum(step.logprobs) / len(step.logprobs), 4)
    if step.zoom:
        facts["frame zoomed on"] = list(step.zoom)
    facts["frame id"] = step.frame_id
    facts.update((k, v) for k, v in step.extra.items() if not (k == DECODED_PROMPT and step.messages is None))
    return f"<details><summary>details</summary>{_pre(json.dumps(facts, indent=1, default=str))}</details>"


def render_step(step: StepRecord, previous: StepRecord | None, after: str | None, total: int,
                frames: dict[str, tuple[str, int]], agent: str) -> str:
    i = step.index
    caption = action_caption(step.action) or ("no action (unparsed answer)" if step.error else "no action")
    timings = step.timings
    facts = [f"reward <b>{step.reward:g}</b>"] + [f"{name} {seconds(timings.get(name))}"
                                                 for name in ("agent", "env", "total") if name in timings]
    if step.terminated or step.truncated:
        facts.append("terminated" if step.terminated else "truncated")
    nav = (f'<a href="#step-{i - 1}">‹ step {i - 1}</a> ' if i > 0 else "") + (
        f'<a href="#step-{i + 1}">step {i + 1} ›</a>' if i + 1 < total else "")
    before = frame_html(step.screenshot, step.screen_size, step.action, f"step {i} before") if step.screenshot \
        else '<p class="none">no frame recorded</p>'
    after_html = frame_html(after, step.screen_size, None, f"step {i} after") if after \
        else '<p class="none">no later frame recorded</p>'
    code = action_code(step.action)
    if code is not None:
        action = _pre(code, "code")
    elif step.action is not None:
        action = _pre(json.dumps(step.action, ensure_ascii=False))
    else:
        action = '<p class="none">nothing parsed</p>'
    error = f'<p class="err">error: {_e(step.error)}</p>' if step.error else ""
    output = f"<div><h3>output</h3>{_pre(step.output)}</div>" if step.output else ""
    response = _pre(step.text) if step.text else '<p class="none">no model text</p>'
    prompt_count = f" ({len(step.messages)} messages)" if step.messages else ""
    return (
        f'<section class="step box" id="step-{i}"><div class="stephead"><h2>Step {i} ({i + 1} of {total}): '
        f'<span class="caption">{_e(caption)}</span></h2><span>{nav}</span></div>'
        f'<div class="facts meta">{"".join(f"<span>{f}</span>" for f in facts)}</div>{error}'
        f'<div class="pair"><figure><figcaption>before, with the action drawn</figcaption>{before}</figure>'
        f"<figure><figcaption>after</figcaption>{after_html}</figure></div>"
        f'<div class="grid"><div><h3>parsed action</h3>{action}</div><div><h3>raw response</h3>{response}</div>'
        f"{output}</div><details class=prompt open><summary><b>prompt the model saw</b>{prompt_count}</summary>"
        f"{_messages(step, previous, frames, agent)}</details>{_details(step)}</section>")


def render_episode(run: Run, number: int) -> str:
    """The page of ``run.episodes[number]``, linking the run index and the episodes before and after it."""
    ep = run.episodes[number]
    t: Trajectory = ep.traj
    page_dir = ep.path
    total = len(t.steps)
    frames = {s.frame_id: (s.screenshot, s.index) for s in t.steps if s.screenshot}
    nav = ["<span class=here>MintGym inspector</span>"]
    if not run.single:
        nav.append(f'<a href="{_e(link(run.root / PAGE, page_dir))}">{_e(run.name)} ({len(run.episodes)})</a>')
        prev_ep = run.episodes[number - 1] if number > 0 else None
        next_ep = run.episodes[number + 1] if number + 1 < len(run.episodes) else None
        for label, other, anchor in (("‹ previous episode", prev_ep, "prev-episode"),
                                     ("next episode ›", next_ep, "next-episode")):
            nav.append(f'<a id="{anchor}" href="{_e(link(other.path / PAGE, page_dir))}">{label}</a>' if other
                       else f"<span class=keys>{label}</span>")
        nav.append(f"<span>episode {number + 1} of {len(run.episodes)}</span>")
    chips = "".join(
        f'<a href="#step-{s.index}" class="{"bad" if s.error else ("rew" if s.reward > 0 else "")}" '
        f'title="{_e(action_caption(s.action) or (s.error or ""))}">{s.index}</a>' for s in t.steps)
    head = (f"<h1>{_e(t.task_id)}</h1><p>{badge(t.status)} <span class=meta>reward <b>{t.total_reward:.3f}</b> · "
            f"{total} steps · {t.wall_seconds:.1f}s · agent <b>{_e(t.agent)}</b> · seed {t.seed} · domain "
            f"{_e(t.domain)} · id {_e(t.id)}</span></p><div class=box><b>Instruction:</b> "
            f"{_e(t.instruction) or '<span class=none>not recorded</span>'}</div>")
    if t.error:
        head += f'<p class="err">{_e(t.error)}</p>'
    if t.extra:
        extra = _pre(json.dumps(t.extra, indent=1, default=str))
        head += f"<details><summary>episode details</summary>{extra}</details>"
    steps = []
    for k, step in enumerate(t.steps):
        after = t.steps[k + 1].screenshot if k + 1 < total else t.final_screenshot
        steps.append(render_step(step, t.steps[k - 1] if k else None, after, total, frames, t.agent))
    if not t.steps:
        steps.append('<p class="none">no steps recorded</p>')
        if t.final_screenshot:
            steps.append(f'<img src="{_e(t.final_screenshot)}" alt="final screen" style="max-width:100%">')
    body = head + (f'<div class="stepbar">{chips}</div>' if chips else "") + "".join(steps) + \
        "<p class=keys>j/k or ←/→: next/previous step · n/p: next/previous episode</p>"
    return document(f"{t.task_id} ({t.status})", nav, body, EPISODE_JS)


# ---- runs side by side -------------------------------------------------------------------------------------

def pair_rows(runs: list[Run]) -> list[tuple[tuple[str, Any], list[Episode | None]]]:
    """(task id, seed) -> that episode in each run (None where a run lacks it), failures in any run first."""
    table: dict[tuple[str, Any], list[Episode | None]] = {}
    for column, run in enumerate(runs):
        for ep in run.episodes:
            row = table.setdefault(ep.key, [None] * len(runs))
            if row[column] is None:
                row[column] = ep

    def order(item):
        worst = min(STATUS_ORDER.get(e.traj.status, 5) if e else 5 for e in item[1])
        return worst, item[0][0], item[0][1] if item[0][1] is not None else -1

    return sorted(table.items(), key=order)


def run_labels(runs: list[Run]) -> list[str]:
    """Column names: each run's folder name, with its parent's where two runs share a name."""
    names = [r.name for r in runs]
    return [f"{r.root.resolve().parent.name}/{n}" if names.count(n) > 1 else n
            for r, n in zip(runs, names, strict=True)]


def render_compare(runs: list[Run], out_dir: Path, pair_pages: list[str]) -> str:
    labels = run_labels(runs)
    heads = "".join(f"<th>{_e(n)}<br><span class=meta>{_e(str(r.root))}</span></th>"
                    for n, r in zip(labels, runs, strict=True))
    rows = []
    for (key, episodes), pair in zip(pair_rows(runs), pair_pages, strict=True):
        cells = []
        for ep in episodes:
            if ep is None:
                cells.append('<td class="none">not run</td>')
                continue
            t = ep.traj
            cells.append(f'<td>{badge(t.status)} <a href="{_e(link(ep.path / PAGE, out_dir))}">reward '
                         f"{t.total_reward:.3f}, {len(t.steps)} steps</a></td>")
        rows.append(f"<tr><td>{_e(key[0])}</td><td class=num>{key[1] if key[1] is not None else ''}</td>"
                    f'{"".join(cells)}<td><a href="{_e(pair)}">side by side</a></td></tr>')
    wins = "".join(f"<span>{_e(n)}: {sum(e.traj.success for e in r.episodes)}/{len(r.episodes)} succeeded"
                   "</span>" for n, r in zip(labels, runs, strict=True))
    body = (f"<h1>{len(runs)} runs side by side</h1><div class=counts>{wins}</div>"
            f"<table id=compare><thead><tr><th>task</th><th>seed</th>{heads}<th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")
    nav = ["<span class=here>MintGym inspector</span>"] + [
        f'<a href="{_e(link(r.root / PAGE, out_dir))}">{_e(n)}</a>' for n, r in zip(labels, runs, strict=True)]
    return document("compare runs", nav, body)


def render_pair(runs: list[Run], key: tuple[str, Any], episodes: list[Episode | None], page_dir: Path,
                compare_page: str) -> str:
    """One task's episodes of every run in columns, step by step."""
    columns = len(runs)
    style = f'style="grid-template-columns:repeat({columns},minmax(0,1fr))"'
    head = []
    for name, ep in zip(run_labels(runs), episodes, strict=True):
        if ep is None:
            head.append(f'<div class=cell><b>{_e(name)}</b><p class="none">not run</p></div>')
            continue
        t = ep.traj
        head.append(f'<div class=cell><b>{_e(name)}</b> {badge(t.status)} reward {t.total_reward:.3f} · '
                    f'{len(t.steps)} steps · <a href="{_e(link(ep.path / PAGE, page_dir))}">episode page</a>'
                    + (f'<p class="err">{_e(t.error)}</p>' if t.error else "") + "</div>")
    longest = max((len(e.traj.steps) for e in episodes if e), default=0)
    rows = []
    for i in range(longest):
        cells = []
        for ep in episodes:
            step = ep.traj.steps[i] if ep and i < len(ep.traj.steps) else None
            if step is None:
                cells.append('<div class=cell><p class="none">no such step</p></div>')
                continue
            src = link(ep.path / step.screenshot, page_dir) if step.screenshot else ""
            frame = frame_html(src, step.screen_size, step.action, f"step {i}") if src else ""
            code = action_code(step.action)
            cells.append(f'<div class=cell><b>step {i}</b> <span class="caption">{_e(action_caption(step.action))}'
                         f"</span> · reward {step.reward:g}{frame}"
                         + (_pre(code, "code") if code is not None else "")
                         + (f'<p class="err">error: {_e(step.error)}</p>' if step.error else "")
                         + (_pre(step.text) if step.text else "") + "</div>")
        rows.append(f'<div class="side" {style}>{"".join(cells)}</div>')
    seed = f" seed {key[1]}" if key[1] is not None else ""
    body = (f"<h1>{_e(key[0])}{seed}</h1><div class=side {style}>{''.join(head)}</div>" + "".join(rows))
    nav = ["<span class=here>MintGym inspector</span>", f'<a href="{_e(compare_page)}">all tasks</a>',
           f"<span>{_e(key[0])}</span>"]
    return document(f"{key[0]}: side by side", nav, body)
