"""The metric registry: OSWorld's calling convention, clear errors for unknown names, the own metrics."""

import pytest

from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.metrics import METRICS, OWN, ROUTES, UnknownMetric, metric, route_reason


def test_unknown_name_lists_near_names():
    with pytest.raises(UnknownMetric) as err:
        metric("compare_tabel")
    message = str(err.value)
    assert "\n" not in message and "compare_tabel" in message and "compare_table" in message


def test_name_without_any_near_match_says_where_to_look():
    with pytest.raises(UnknownMetric, match="are exposed"):
        metric("zzzz")


@pytest.mark.skipif(not metric_loader.available(), reason="desktop-env is not installed")
def test_desktop_env_metric_without_cases_is_not_exposed():
    assert "compare_epub" in metric_loader.function_index()
    with pytest.raises(UnknownMetric, match="exists in desktop-env but MintGym does not expose it"):
        metric("compare_epub")


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
