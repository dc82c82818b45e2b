"""OSWorld's metric functions by their OSWorld names, with OSWorld's calling convention.

``metric(name)(result, expected, **options)`` -- ``result`` is what the result getter read from the session
(text, a file path, a parsed setting), ``expected`` the expected getter's value (often the task's ``rules``
dict); metrics without an expected getter are called as ``metric(name)(result, **options)``. Scores are
whatever OSWorld's function returns (float, int, bool, sometimes None); :mod:`.scoring` turns them into
an episode reward the way OSWorld's ``DesktopEnv.evaluate`` does.

Each exposed metric takes one of two routes (:data:`ROUTES`, also tabled in docs/evaluate.md, "OSWorld scoring"):

* ``desktop-env``: OSWorld's own function, loaded from the desktop-env package by :mod:`.metric_loader`;
* ``own``: written here, because desktop-env 1.0.2 lacks it or its code is unsafe to run on session
  state; each is proven equal to OSWorld's on the differential cases (tests/environments/desktop/osworld/cases/).

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
import importlib.util
import logging
import tarfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mintgym.environments.desktop.osworld import metric_loader, metric_sandbox

log = logging.getLogger(__name__)

Metric = Callable[..., Any]


def check_play_and_exit(actual_config_path: str, rule: dict) -> int:
    """VLC's ``play-and-exit`` setting (vlcrc) equals ``rule["expected_play_and_exit"]``.

    OSWorld's function (newer than desktop-env 1.0.2: ``desktop_env/evaluators/metrics/vlc.py:527`` of the OSWorld
    snapshot ljxpython/OSWorldUse@f6cee715) reads the whole vlcrc as UTF-8, takes the value
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


def check_structure_sim_with_threshold(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """The two images have an SSIM of at least ``options["ssim_threshold"]`` (0.85 by default).

    OSWorld's function (newer than desktop-env 1.0.2: ``desktop_env/evaluators/metrics/gimp.py:818`` of the
    OSWorld snapshot ljxpython/OSWorldUse@f6cee715) resizes the source to the target's size (Lanczos) when
    they differ, converts both to RGB, and takes scikit-image's SSIM over the colour channels with a 7-pixel
    window (the largest odd size below 7 for smaller images). A None path, a file that cannot be read and
    an SSIM that cannot be computed all score 0.
    """
    import numpy as np
    from PIL import Image
    from skimage.metrics import structural_similarity

    if src_path is None or tgt_path is None:
        return 0.0
    threshold = options.get("ssim_threshold", 0.85)
    try:
        src, tgt = Image.open(src_path), Image.open(tgt_path)
        if src.size != tgt.size:
            src = src.resize(tgt.size, Image.Resampling.LANCZOS)
        first, second = np.array(src.convert("RGB")), np.array(tgt.convert("RGB"))
        smallest = min(first.shape[0], first.shape[1])
        window = 7 if smallest >= 7 else (smallest if smallest % 2 == 1 else smallest - 1)
        if window < 1:
            return 0.0
        try:
            similarity = structural_similarity(first, second, win_size=window, channel_axis=2)
        except Exception:  # noqa: BLE001 -- OSWorld's function scores any SSIM failure 0
            return 0.0
        return 1.0 if similarity >= threshold else 0.0
    except Exception:  # noqa: BLE001 -- as OSWorld's: an unreadable image scores 0
        return 0.0


def _unsafe_tar_member(path: str) -> str | None:
    """The first member of tar archive ``path`` that would land outside its folder or is not a plain file or
    folder (tarfile's "data" filter), else None; None also for zips and non-archives."""
    try:
        if not tarfile.is_tarfile(path):
            return None
        with tarfile.open(path) as archive:
            for member in archive:
                try:
                    kept = tarfile.data_filter(member, "/nonexistent-dest")
                except tarfile.FilterError as err:
                    return f"{member.name!r}: {err}"
                if kept.name != member.name:  # the filter strips a leading "/"; shutil would write to it
                    return f"{member.name!r}: an absolute path"
    except (OSError, tarfile.TarError):
        return None  # desktop-env's own function meets the same error
    return None


def compare_archive(pred_path: str, gold_path: str, **kwargs: Any) -> Any:
    """desktop-env's ``compare_archive`` (``desktop_env/evaluators/metrics/chrome.py:305``), unchanged, after one
    check: it unpacks with ``shutil.unpack_archive``, which on Python 3.11 extracts a tar member with an
    absolute or ``..`` path or a link outside the folder. The agent makes the archive, so an archive with
    such a member scores 0 here instead of writing outside the cache folder."""
    for path in (pred_path, gold_path):
        reason = _unsafe_tar_member(path) if isinstance(path, str) and path else None
        if reason:
            log.warning("compare_archive: %s has an unsafe member %s; scored 0", path, reason)
            return 0.0
    return metric_loader.load_function("compare_archive")(pred_path, gold_path, **kwargs)


OWN: dict[str, tuple[Metric, str]] = {
    "check_play_and_exit": (check_play_and_exit, "not in desktop-env 1.0.2 (added to OSWorld later)"),
    "check_gnome_favorite_apps": (check_gnome_favorite_apps,
                                  "OSWorld's eval()s agent-controlled text; ast.literal_eval here"),
    "check_structure_sim_with_threshold": (check_structure_sim_with_threshold,
                                           "not in desktop-env 1.0.2 (added to OSWorld later)"),
    "compare_archive": (compare_archive, ("desktop-env's function, after refusing tar members that would land "
                                          "outside the unpack folder (scored 0)")),
    "check_python_file_by_test_suite": (metric_sandbox.check_python_file_by_test_suite,
                                        ("desktop-env's function, run in a contained child interpreter: it imports "
                                         "the agent's code")),
}

#: Metrics that need a library MintGym leaves out (metric_loader.PLACEHOLDERS): name -> import name.
NEEDS = {"compare_image_text": "easyocr"}

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
    # The rest of desktop-env 1.0.2's metric names (tests/.../osworld/cases/metric_cases_office.py and _media.py).
    "check_highlighted_words", "check_no_duplicates", "get_unique_train_ids", "compare_unique_train_records",
    "compare_contains_image", "compare_docx_images", "compare_highlighted_text", "compare_image_text",
    "compare_insert_equation", "compare_references", "evaluate_alignment", "evaluate_colored_words_in_tables",
    "evaluate_conversion", "evaluate_spacing", "check_left_panel", "check_page_number_colors",
    "check_presenter_console_disable", "check_slide_numbers_color", "check_slide_orientation_Portrait",
    "check_strikethrough", "check_transition", "evaluate_presentation_fill_to_rgb_distance",
    "compare_conference_city_in_order", "check_contrast_increase_and_structure_sim",
    "check_file_exists_and_structure_sim", "check_green_background", "check_image_file_size",
    "check_palette_and_structure_sim", "check_sharper", "check_structure_sim_resized", "check_textbox_on_leftside",
    "check_triangle_position", "compare_triangle_positions", "decrease_brightness", "increase_saturation",
    "compare_pdf_images", "is_added_to_steam_cart", "is_expected_active_tab_approximate",
    "is_expected_installed_extensions", "compare_epub", "check_mp3_meta", "compare_videos",
    "compare_time_in_speedtest_results", "fuzzy_place_math", "is_gold_text_included_in_pdf",
    "check_thunderbird_filter", "check_html_background_image", "check_python_file_by_gold_file",
    "compare_result_files",
)

#: name -> "desktop-env" or "own".
ROUTES: dict[str, str] = {**{name: "desktop-env" for name in FROM_DESKTOP_ENV}, **{name: "own" for name in OWN}}


class UnknownMetric(KeyError):
    """A metric name MintGym does not expose."""

    def __str__(self) -> str:
        return str(self.args[0])


def _unknown(name: str) -> UnknownMetric:
    known = sorted(ROUTES)
    near = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
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


def missing_library(name: str) -> str | None:
    """The library metric ``name`` needs that is not installed here (see :data:`NEEDS`), or None."""
    library = NEEDS.get(name)
    if library is None or importlib.util.find_spec(library) is not None:
        return None
    return library


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
