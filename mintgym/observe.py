"""Layer 0: the observation channels an agent may be given (``--observe``), and what each asks of a session.

* ``screenshot`` -- the pixels (the default). Every observation carries them, so trajectories can be viewed;
  an agent not given this channel is told not to use them (the VLM agent then sends its model no image).
* ``som`` -- set-of-marks: the screenshot with a numbered box on every interactive element; the ``a11y``
  listing is its legend (the numbers are its element ids), so asking for ``som`` fills ``a11y`` too.
* ``a11y`` -- the grounded accessibility listing (:mod:`mintgym.grounding`): ids, roles, names, states, and
  where a click on each element lands, in screenshot pixels.
* ``dom`` -- the page's pruned HTML (web).
* ``text`` -- the domain's text output (pytool's cell output, the web page's URL and tabs, window titles).

A domain declares the channels it fills (``Declaration.channels``); asking one of it for another is refused
in one line, by the command before anything starts and by the env server when a session is created.

    >>> parse(["screenshot,a11y", "som"])
    ('screenshot', 'a11y', 'som')
    >>> session_channels(("screenshot", "som"))
    ('som', 'a11y')
"""

from __future__ import annotations

from collections.abc import Iterable

#: Every channel, in the order they are listed.
CHANNELS: tuple[str, ...] = ("screenshot", "som", "a11y", "dom", "text")
#: What an agent is given when nothing is asked.
DEFAULT: tuple[str, ...] = ("screenshot",)
#: Channels that arrive as text fields of an observation (the others change or accompany the pixels).
TEXT_CHANNELS: tuple[str, ...] = ("text", "a11y", "dom")
#: What a session may be asked to fill (every channel but the screenshot, which every observation carries).
SIDE_CHANNELS: tuple[str, ...] = ("som", "a11y", "dom", "text")
#: One line about each channel, for help texts and refusals.
ABOUT = {
    "screenshot": "the screen's pixels",
    "som": "set-of-marks: numbered boxes drawn on the interactive elements (the a11y listing is the legend)",
    "a11y": "the grounded accessibility listing: ids, roles, names, states and click points",
    "dom": "the page's pruned HTML",
    "text": "the domain's text output (cell output, URL and tabs, window titles)",
}


def parse(values: str | Iterable[str]) -> tuple[str, ...]:
    """Channel names from ``values`` (each may hold several, comma-separated), in the order first given, each
    once; ValueError naming an unknown one or an empty list."""
    items = [values] if isinstance(values, str) else list(values)
    names = [name.strip() for item in items for name in str(item).split(",") if name.strip()]
    unknown = [name for name in names if name not in CHANNELS]
    if unknown:
        raise ValueError(f"unknown observation channel {unknown[0]!r} (known: {', '.join(CHANNELS)})")
    if not names:
        raise ValueError(f"no observation channel given (known: {', '.join(CHANNELS)})")
    return tuple(dict.fromkeys(names))


def session_channels(observe: Iterable[str]) -> tuple[str, ...]:
    """The side channels a session fills for an agent observing ``observe``: all but the screenshot, and
    ``a11y`` with ``som`` (the marks' legend)."""
    wanted = [name for name in observe if name != "screenshot"]
    if "som" in wanted and "a11y" not in wanted:
        wanted.append("a11y")
    return tuple(wanted)


def unsupported(observe: Iterable[str], domain: str, declared: Iterable[str] | None) -> str | None:
    """Why ``domain`` (filling the side channels ``declared``; None: it declares none, so nothing is checked)
    cannot give ``observe``, in one line, else None."""
    if declared is None:
        return None
    has = set(declared)
    missing = [name for name in session_channels(observe) if name not in has]
    if not missing:
        return None
    known = ", ".join(["screenshot", *(name for name in CHANNELS if name in has)])
    return f"the {domain} domain has no {missing[0]!r} observation channel (it has: {known})"
