"""MintGym's OSWorld metrics against desktop-env's own outcomes: zero disagreements, at least 5 cases each.

desktop-env's outcomes are data (metric_outcomes.json next to this file), computed by its functions imported
the plain way in a fresh interpreter (``python benchmarks/osworld_metrics_diff.py --write`` regenerates them,
and without ``--write`` compares live). MintGym's side runs here through ``metrics.metric``. Run with ``-s``
to see the per-metric table.
"""

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.availability import metric_unavailable
from mintgym.environments.desktop.osworld.loader import load_examples
from mintgym.environments.desktop.osworld.metrics import ROUTES, metric
from tests.environments.desktop.osworld.cases.metric_cases import build_cases
from tests.environments.desktop.osworld.cases.metric_diff import compare, key, load_outcomes, ours, stored, table

pytestmark = pytest.mark.skipif(not metric_loader.available(),
                                reason=f"desktop-env is not installed: {metric_loader.INSTALL_HINT}")


@pytest.fixture(scope="module")
def record():
    return load_outcomes()


@pytest.fixture(scope="module")
def rows(tmp_path_factory, record):
    workdir = tmp_path_factory.mktemp("osworld-metrics")
    cases = build_cases(workdir)
    result = compare(cases, ours(cases, workdir), stored(cases, record))
    print("\n" + table(result))
    return result


def test_no_disagreements(rows):
    disagreements = [f"{r.metric}: {d}" for r in rows for d in r.disagreements]
    assert not disagreements, "\n".join(disagreements)


def test_every_exposed_metric_has_five_cases(rows):
    counts = {r.metric: r.cases for r in rows}
    assert set(counts) == set(ROUTES)
    assert all(n >= 5 for n in counts.values()), {m: n for m, n in counts.items() if n < 5}


def test_every_desktop_env_metric_is_exposed():
    assert set(metric_loader.function_index()) <= set(ROUTES)


def test_stored_outcomes_are_desktop_envs_for_exactly_these_cases(tmp_path, record):
    assert record.libraries["desktop-env"] == "1.0.2" and record.osworld_repository.startswith("ljxpython/OSWorldUse@")
    assert set(record.outcomes) == {key(c) for c in build_cases(tmp_path)}  # no stale or missing case
    kinds = {o.kind for o in record.outcomes.values()}
    values = {o.value for o in record.outcomes.values() if isinstance(o.value, float)}
    assert kinds == {"value", "raise"} and {0.0, 1.0} <= values and len(values) > 10  # not a constant answer


def test_every_bundled_task_has_every_metric_available():
    specs = load_examples()
    if not specs:
        pytest.skip("the shared OSWorld data is not present")
    assert {s.id: metric_unavailable(s) for s in specs if metric_unavailable(s)} == {}


def test_cases_cover_every_option_the_bundled_tasks_use(tmp_path):
    specs = load_examples()
    if not specs:
        pytest.skip("the shared OSWorld data is not present")
    used: dict[str, set[str]] = defaultdict(set)
    for spec in specs:
        for func, options in zip(spec.evaluator.funcs, spec.evaluator.options, strict=True):
            used[func] |= set(options)
            used[func] |= {f"rule:{r['type']}" for r in options.get("rules", [])}
            used[func] |= {f"rule:{s['type']}" for r in options.get("rules", []) for s in r.get("rules", [])}
    covered: dict[str, set[str]] = defaultdict(set)
    for case in build_cases(tmp_path):
        covered[case.metric] |= set(case.kwargs)
        rules = case.kwargs.get("rules", [])
        covered[case.metric] |= {f"rule:{r['type']}" for r in rules}
        covered[case.metric] |= {f"rule:{s['type']}" for r in rules for s in r.get("rules", [])}
    missing = {f: sorted(keys - covered[f]) for f, keys in used.items() if f in ROUTES and keys - covered[f]}
    assert not missing


def test_desktop_env_routes_are_desktop_envs_own_functions():
    folder = metric_loader.package_dir()
    for name, route in ROUTES.items():
        func = metric(name)
        if route == "desktop-env":
            assert func.__module__ == f"{metric_loader.PACKAGE}.{metric_loader.function_index()[name]}"
            assert func.__code__.co_filename.startswith(str(folder))
        else:
            assert func.__module__.startswith("mintgym.environments.desktop.osworld.metric")


LOADER_PROBE = """
import sys
from mintgym.environments.desktop.osworld import metric_loader
from mintgym.environments.desktop.osworld.metrics import metric
compare_table = metric("compare_table")
package = sys.modules[metric_loader.PACKAGE]
loaded = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith(metric_loader.PACKAGE + "."))
docs = metric_loader.load_module("docs")
try:
    docs.compare_image_text(sys.argv[1], {"type": "text", "text": "x"})
    ocr = "no error"
except metric_loader.MissingDependency as err:
    ocr = str(err)
from desktop_env.evaluators.metrics import compare_table as plain
print(json.dumps({"loaded": loaded, "init_ran": "check_gnome_favorite_apps" in vars(package),
                  "easyocr_left": "easyocr" in sys.modules, "ocr": ocr, "same": plain is compare_table}))
"""


def test_loader_imports_one_module_without_the_package_init(tmp_path):
    from PIL import Image

    png = tmp_path / "x.png"
    Image.new("RGB", (8, 8)).save(png)
    out = subprocess.run([sys.executable, "-c", "import json\n" + LOADER_PROBE, str(png)], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["loaded"] == ["table", "utils"]  # not docs/vlc/chrome/...: __init__ did not run
    assert not facts["init_ran"]
    assert not facts["easyocr_left"]  # the placeholder served docs.py only while it loaded
    assert "easyocr" in facts["ocr"] and "not installed" in facts["ocr"]  # raised through except Exception
    assert facts["same"]  # from-imports of the package resolve through the loader
