"""The metric registry: OSWorld's calling convention, clear errors for unknown names, the own metrics."""

import importlib.util
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.availability import why_unavailable
from mintgym.environments.desktop.osworld.loader import parse_task
from mintgym.environments.desktop.osworld.metrics import (
    METRICS,
    OWN,
    ROUTES,
    UnknownMetric,
    metric,
    missing_library,
    route_reason,
)


def test_unknown_name_lists_near_names():
    with pytest.raises(UnknownMetric) as err:
        metric("compare_tabel")
    message = str(err.value)
    assert "\n" not in message and "compare_tabel" in message and "compare_table" in message


def test_name_without_any_near_match_says_where_to_look():
    with pytest.raises(UnknownMetric, match="are exposed"):
        metric("zzzz")


def test_a_metric_needing_a_left_out_library_names_it():
    assert missing_library("compare_table") is None
    assert missing_library("compare_image_text") == (None if importlib.util.find_spec("easyocr") else "easyocr")


@pytest.mark.skipif(importlib.util.find_spec("easyocr") is not None, reason="easyocr is installed here")
def test_tasks_using_ocr_are_unavailable_with_the_library_named():
    spec = parse_task({"id": "ocr-1", "instruction": "Write the text on the screenshot.", "evaluator": {
        "func": "compare_image_text", "result": {"type": "vm_file", "path": "/home/user/a.png", "dest": "a.png"},
        "expected": {"type": "rule", "rules": {"type": "text", "text": "x"}}}}, Path("/x/os/ocr-1.json"))
    assert "'easyocr'" in why_unavailable(spec) and "compare_image_text" in why_unavailable(spec)


@pytest.mark.skipif(not metric_loader.available(), reason="desktop-env is not installed")
def test_compare_archive_refuses_a_tar_that_writes_outside_its_folder(tmp_path):
    gold = tmp_path / "gold.zip"
    with zipfile.ZipFile(gold, "w") as archive:
        archive.writestr("a.txt", "alpha")
    for name, member in (("dotdot", "../escaped.txt"), ("absolute", str(tmp_path / "abs-escaped.txt"))):
        evil = tmp_path / f"{name}.tar.gz"
        with tarfile.open(evil, "w:gz") as archive:
            info = tarfile.TarInfo(member)
            info.size = 5
            archive.addfile(info, io.BytesIO(b"alpha"))
        assert metric("compare_archive")(str(evil), str(gold)) == 0.0
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as archive:
        info = tarfile.TarInfo("a.txt")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(info)
    assert metric("compare_archive")(str(link), str(gold)) == 0.0
    assert not (tmp_path.parent / "escaped.txt").exists() and not (tmp_path / "abs-escaped.txt").exists()
    assert not (tmp_path / "link_pred").exists()  # refused before anything was unpacked
    good = tmp_path / "good.tar.gz"
    with tarfile.open(good, "w:gz") as archive:
        info = tarfile.TarInfo("a.txt")
        info.size = 5
        archive.addfile(info, io.BytesIO(b"alpha"))
    assert metric("compare_archive")(str(good), str(gold)) == 1.0


def test_routes_and_usable_metrics():
    assert set(OWN) <= set(ROUTES) and all(r in ("own", "desktop-env") for r in ROUTES.values())
    assert all(name in METRICS for name in OWN)  # own metrics never need desktop-env
    assert ("compare_table" in METRICS) == metric_loader.available()
    assert "nope" not in METRICS and 3 not in METRICS
    assert "eval" in route_reason("check_gnome_favorite_apps")
    if metric_loader.available():
        assert route_reason("compare_table") == "desktop_env.evaluators.metrics.table.compare_table, unchanged"
        assert len(METRICS) == len(ROUTES)


def test_play_and_exit_reads_vlcrc_as_osworld_does(tmp_path):
    check = metric("check_play_and_exit")
    rc = tmp_path / "vlcrc"
    rc.write_text("[core]\n# Play and exit (boolean)\n#play-and-exit=0\n")
    assert check(str(rc), {"expected_play_and_exit": 0}) == 1  # the commented default line counts
    rc.write_text("[core]\nplay-and-exit=1\n")
    assert check(str(rc), {"expected_play_and_exit": 0}) == 0
    assert check(str(rc), {"expected_play_and_exit": "1"}) == 1
    with pytest.raises(FileNotFoundError):
        check(str(tmp_path / "missing"), {"expected_play_and_exit": 0})


def test_gnome_favorites_never_evaluate_code():
    check = metric("check_gnome_favorite_apps")
    assert check("['a.desktop', 'b.desktop']", {"expected": ["b.desktop", "a.desktop"]}) == 1
    with pytest.raises(ValueError):
        check("__import__('os').getcwd()", {"expected": []})
