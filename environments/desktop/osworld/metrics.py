"""OSWorld's metric functions by their OSWorld names, with OSWorld's calling convention.

``metric(name)(result, expected, **options)`` -- ``result`` is what the result getter read from the session
(text, a file path, a parsed setting), ``expected`` the expected getter's value (often the task's ``rules``
dict); metrics without an expected getter are called as ``metric(name)(result, **options)``. Scores are
whatever OSWorld's function returns (float, int, bool, sometimes None); :mod:`.scoring` turns them into
an episode reward the way OSWorld's ``DesktopEnv.evaluate`` does.

Each exposed metric takes one of two routes (:data:`ROUTES`, also tabled in README.md):

* ``desktop-env``: OSWorld's own function, loaded from the desktop-env package by :mod:`.metric_loader`;
* ``own``: written here, because desktop-env 1.0.2 lacks it or its code is unsafe to run on session
  state; each is proven equal to OSWorld's on the differential cases of :mod:`.metric_cases`.

A metric is exposed only once it has differential cases (tests/environments/desktop/osworld/test_metrics_differential.py
checks that every exposed name has at least five).

Example:
    >>> from mintgym.environments.desktop.osworld.metrics import metric
    >>> metric("exact_match")("42", {"expected": "42"})  # doctest: +SKIP
    1.0
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mintgym.environments.desktop.osworld import metric_loader

Metric = Callable[..., Any]


def check_play_and_exit(actual_config_path: str, rule: dict) -> int:
    """VLC's ``play-and-exit`` setting (vlcrc) equals ``rule["expected_play_and_exit"]``.

    OSWorld's function (newer than desktop-env 1.0.2) reads the whole vlcrc as UTF-8, takes the value
    after the last ``=`` on the last line *containing* ``play-and-exit=`` (commented lines included), with
    "0" when there is none, and compares it as a string. A missing file raises, as OSWorld's does.
    """
    with open(actual_config_path, "rb") as file:
        text = file.read().decode("utf-8")
    expected = rule["expected_play_and_exit"]
    if isinstance(expected, int):
        expected = str(expected)
    value = "0"
    for line in text.split("\n"):
        if "play-and-exit=" in line:
            value = line.split("=")[-1].strip()
    return 1 if value == expected else 0


def check_gnome_favorite_apps(apps_str: str, rule: dict) -> int:
    """GNOME's favourite apps (``gsettings get`` output) are ``rule["expected"]``, in any order.

    OSWorld's function ``eval``s the command output, which the agent controls; here it is parsed as a
    Python literal. Every literal (all ``gsettings`` prints for a string array) scores the same; text that
    is not a literal raises, as ``eval`` does on everything but code.
    """
    if not isinstance(apps_str, str):
        raise TypeError(f"the favourite apps must be text, got {type(apps_str).__name__}")  # as eval() raises
    apps = ast.literal_eval(apps_str)
    expected = rule["expected"]
    if len(apps) != len(expected):
        return 0
    return 1 if set(apps) == set(expected) else 0


OWN: dict[str, tuple[Metric, str]] = {
    "check_play_and_exit": (check_play_and_exit, "not in desktop-env 1.0.2 (added to OSWorld later)"),
    "check_gnome_favorite_apps": (check_gnome_favorite_apps,
                                  "OSWorld's eval()s agent-controlled text; ast.literal_eval here"),
}

#: The metrics taken from desktop-env as they are (all that the bundled tasks and MintGym's earlier
#: rewrites name).
FROM_DESKTOP_ENV = (
    "check_include_exclude", "exact_match", "match_in_list", "is_in_list", "literal_match", "diff_text_file",
    "check_json", "check_csv", "check_accessibility_tree", "file_contains", "check_line_number",
    "compare_pdfs", "is_cookie_deleted", "is_shortcut_on_desktop", "is_expected_active_tab", "check_font_size",
    "compare_line_spacing", "check_tabstops", "compare_docx_files",
    "check_config_status", "compare_image_list", "check_brightness_decrease_and_structure_sim",
    "check_saturation_increase_and_structure_sim",
    "is_in_vm_clickboard",
    "compare_pptx_files", "check_image_stretch_and_center", "check_auto_saving_time",
    "compare_table", "compare_csv",
    "check_qt_slider_colours", "is_vlc_recordings_folder", "compare_audios",
    "check_one_instance_when_started_from_file", "is_vlc_playing",
    "compare_text_file", "compare_config", "is_extension_installed", "check_json_settings",
    "check_json_keybindings",
    # Further names of OSWorld's task set (beyond the bundled 60).
    "fuzzy_match", "check_list", "check_direct_json_object", "is_included_all_json_objects", "compare_terminal_and_txt",
    "compare_python_pure_text", "is_expected_url_pattern_match", "is_expected_tabs", "is_expected_bookmarks",
    "is_expected_search_query", "check_history_deleted", "check_enabled_experiments", "is_utc_0", "check_text_enlarged",
    "check_moved_jpgs", "is_vlc_fullscreen", "compare_answer", "check_qt_bgcone", "check_qt_max_volume",
    "check_qt_minimal_view", "check_global_key_play_pause", "compare_images", "check_image_size", "check_image_mirror",
    "check_structure_sim", "check_pdf_pages", "compare_docx_tables", "compare_font_names", "is_first_line_centered",
    "contains_page_break", "compare_docx_files_and_ignore_new_lines", "compare_init_lines", "compare_docx_lines",
    "compare_subscript_contains", "has_page_numbers_in_footers", "check_italic_font_size_14",
    "evaluate_strike_through_last_paragraph", "find_default_font", "check_file_exists", "compare_zip_files",
    "compare_htmls", "run_sqlite3", "check_libre_locale", "check_thunderbird_prefs", "check_thunderbird_folder",
)

#: name -> "desktop-env" or "own".
ROUTES: dict[str, str] = {**{name: "desktop-env" for name in FROM_DESKTOP_ENV}, **{name: "own" for name in OWN}}


class UnknownMetric(KeyError):
    """A metric name MintGym does not expose."""

    def __str__(self) -> str:
        return str(self.args[0])


def _unknown(name: str) -> UnknownMetric:
    known = sorted(ROUTES)
    near = difflib.get_close_matches(name, known + sorted(metric_loader.function_index()), n=5, cutoff=0.6)
    if name in metric_loader.function_index():
        return UnknownMetric(f"OSWorld metric {name!r} exists in desktop-env but MintGym does not expose it yet "
                             f"(it has no differential cases); exposed near names: "
                             f"{', '.join(n for n in near if n in ROUTES) or 'none'}")
    hint = f"near names: {', '.join(near)}" if near else f"{len(known)} are exposed (see metrics.ROUTES)"
    return UnknownMetric(f"unknown OSWorld metric {name!r}; {hint}")


def metric(name: str) -> Metric:
    """The OSWorld metric function ``name``, called as OSWorld calls it: ``f(result, expected, **options)``.

    Raises:
        UnknownMetric: the name is not exposed (the message lists near names).
        metric_loader.DesktopEnvMissing: a desktop-env metric was asked for without the package installed.
    """
    route = ROUTES.get(name)
    if route is None:
        raise _unknown(name)
    if route == "own":
        return OWN[name][0]
    return metric_loader.load_function(name)


def route_reason(name: str) -> str:
    """Why ``name`` takes its route (one line, for the README table and ``mintgym`` listings)."""
    if name not in ROUTES:
        raise _unknown(name)
    if ROUTES[name] == "own":
        return OWN[name][1]
    module = metric_loader.function_index().get(name, "?")
    return f"desktop_env.evaluators.metrics.{module}.{name}, unchanged"


class _Usable(Mapping[str, Metric]):
    """The exposed metrics that can run here (desktop-env routes only when the package is installed).

    ``name in METRICS`` is cheap: it imports nothing. ``METRICS[name]`` loads the function.
    """

    def _names(self) -> list[str]:
        with_package = metric_loader.available()
        return [n for n, r in ROUTES.items() if r == "own" or with_package]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in ROUTES and (ROUTES[name] == "own" or metric_loader.available())

    def __getitem__(self, name: str) -> Metric:
        if name not in self:
            raise KeyError(name)
        return metric(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


METRICS: Mapping[str, Metric] = _Usable()
