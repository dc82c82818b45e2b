"""Reading OSWorld task JSON: the shared examples load, bad files fail naming file and field."""

import json

import pytest

from mintgym.environments.desktop.osworld.availability import why_unavailable
from mintgym.environments.desktop.osworld.loader import OSWorldFormatError, examples_dir, load_file, parse_task
from mintgym.environments.desktop.osworld.tasks import tasks

needs_data = pytest.mark.skipif(examples_dir() is None, reason="the shared OSWorld data is not present")


@needs_data
def test_every_example_loads_and_is_classified_without_starting_x():
    loaded = tasks()
    assert len(loaded) == 60
    assert all(t.id.startswith("osworld/") and t.domain == "desktop" for t in loaded)
    runnable = [t for t in loaded if t.unavailable() is None]
    assert len(runnable) >= 10
    reasons = {t.unavailable() for t in loaded if t.unavailable()}
    assert any("huggingface.co" in r for r in reasons)
    assert any("'code'" in r for r in reasons)  # VS Code is not installed


@needs_data
def test_registry_lists_the_osworld_pack():
    from mintgym.env import registration

    assert len(registration.tasks(prefix="osworld/")) == 60
    assert len(registration.tasks(prefix="desktop/")) >= 2


def _task(**over):
    base = {"id": "x1", "instruction": "do it", "config": [],
            "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo"},
                          "expected": {"type": "rule", "rules": {"expected": "1"}}}}
    base.update(over)
    return base


def test_malformed_json_names_the_file(tmp_path):
    bad = tmp_path / "os" / "broken.json"
    bad.parent.mkdir()
    bad.write_text('{"id": "x", ')
    with pytest.raises(OSWorldFormatError, match="broken.json: not valid JSON"):
        load_file(bad)


@pytest.mark.parametrize("data, field", [
    (_task(evaluator={"result": {"type": "rule"}}), "evaluator.func"),
    ({k: v for k, v in _task().items() if k != "instruction"}, "instruction"),
    (_task(config=[{"parameters": {}}]), "config[0].type"),
    (_task(config={"type": "launch"}), "config"),
    (_task(evaluator={"func": ["exact_match", "exact_match"], "result": [{"type": "rule"}],
                      "expected": [None, None]}), "evaluator.result"),
    (_task(evaluator={"func": "exact_match", "result": {"type": "rule"}, "conj": "xor"}), "evaluator.conj"),
])
def test_bad_fields_are_named(tmp_path, data, field):
    path = tmp_path / "os" / "t.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    with pytest.raises(OSWorldFormatError) as err:
        load_file(path)
    assert "t.json" in str(err.value) and field in str(err.value)


def test_needs_are_reported_as_unavailable(tmp_path):
    f = tmp_path / "os" / "t.json"
    web = parse_task(_task(config=[{"type": "download", "parameters": {"files": [
        {"url": "https://example.com/a.txt", "path": "/home/user/a.txt"}]}}]), f)
    assert "example.com" in why_unavailable(web)
    sudo = parse_task(_task(config=[{"type": "execute", "parameters": {"command": "sudo ls", "shell": True}}]), f)
    assert "sudo" in why_unavailable(sudo)
    missing = parse_task(_task(config=[{"type": "launch", "parameters": {"command": ["no-such-app-xyz"]}}]), f)
    assert "no-such-app-xyz" in why_unavailable(missing)
    live = parse_task(_task(config=[{"type": "chrome_open_tabs",
                                     "parameters": {"urls_to_open": ["https://www.example.org/"]}}]), f)
    assert "www.example.org" in why_unavailable(live)  # the session has no egress by default
    own = parse_task(_task(config=[{"type": "chrome_open_tabs",
                                    "parameters": {"urls_to_open": ["http://127.0.0.1:8000/"]}}]), f)
    assert why_unavailable(own) is None  # a page served on the session's own loopback
    local = parse_task(_task(config=[{"type": "download", "parameters": {"files": [
        {"url": "file:///tmp/a.txt", "path": "/home/user/a.txt"}]}}]), f)
    assert why_unavailable(local) is None
