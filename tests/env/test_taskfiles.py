"""Task files: the examples load, every mistake is one line naming the file, the task and the field, the
pytool answer rules score what they say, and a task file is a pack (``add_pack``, forwarding, lookups)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mintgym.action_spaces import Click, Done, Python
from mintgym.env import registration, taskfiles
from mintgym.env.taskfiles import TaskFileError, load_tasks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"

WEB = {"id": "web/t/form-v1", "domain": "web", "instruction": "Fill it.", "page": {"html": "<input id=a>"},
       "scorer": {"type": "field", "selector": "#a", "equals": "x"}}


def write(folder: Path, data, name: str = "tasks.yaml") -> Path:
    path = folder / name
    path.write_text(json.dumps(data))  # JSON is YAML too
    return path


def test_the_examples_load_with_their_oracles():
    found = {t.id: t for t in load_tasks(EXAMPLES)}
    assert set(found) == {"web/examples/sign-up-v1", "web/examples/open-settings-v1", "desktop/examples/hello-file-v1",
                          "pytool/examples/sum-of-squares-v1", "pytool/examples/primary-colour-v1"}
    assert {t.domain for t in found.values()} == {"web", "pytool", "desktop"}
    assert all(t.has_oracle() for t in found.values())
    assert found["web/examples/sign-up-v1"].viewport == (400, 300)
    assert found["web/examples/sign-up-v1"].tags == ("deterministic",)
    assert found["pytool/examples/sum-of-squares-v1"].steps == [
        Python(code="print(sum(i * i for i in range(1, 21)))"), Done(answer="2870")]
    desktop = found["desktop/examples/hello-file-v1"]
    assert desktop.spec.evaluator.funcs == ("exact_match",) and desktop.max_steps == 15
    files = {p.name for p in taskfiles.pack_files(EXAMPLES)}
    assert files == {"web-signup.yaml", "signup.html", "pytool-arith.yaml", "desktop-hello.json"}


@pytest.mark.parametrize("change, said", [
    ({"colour": "red"}, "field 'colour': unknown field"),
    ({"scorer": None}, "field 'scorer"),
    ({"scorer": {"type": "magic", "selector": "#a"}}, "field 'scorer"),
    ({"scorer": {"type": "field", "selector": "#a"}}, "give exactly one of 'equals' and 'contains'"),
    ({"page": {"html": "<p>", "file": "p.html"}}, "give exactly one of 'html' and 'file'"),
    ({"page": {"file": "missing.html"}}, "field 'page.file': no file 'missing.html' beside the task file"),
    ({"max_steps": 0}, "field 'max_steps'"),
    ({"id": "t/form-v1"}, "field 'id': ids in task files are domain/pack/name[-vN]"),
    ({"id": "pytool/t/form"}, "field 'id': ids in task files are domain/pack/name[-vN]"),
    ({"id": "web/t/bad name"}, "field 'id': task id 'web/t/bad name': segment 'bad name'"),
    ({"domain": "cooking"}, "field 'domain': task files hold desktop, pytool, web tasks, not 'cooking'"),
    ({"oracle": [{"type": "python", "code": "1"}]}, "field 'oracle[0]': 'python' is not an action of the web set"),
    ({"oracle": [{"type": "click", "x": "left"}]}, "field 'oracle[0]': "),
    ({"oracle": [{"tap_on": "#a"}]}, "field 'oracle[0]': a step is a shared action"),
    ({"oracle": [{"fill": "#a"}]}, "field 'oracle[0]': field 'text': missing"),
])
def test_a_mistake_is_one_line_naming_file_task_and_field(tmp_path, change, said):
    path = write(tmp_path, {**WEB, **change})
    with pytest.raises(TaskFileError) as err:
        load_tasks(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: task ")
    assert said in message, message


@pytest.mark.parametrize("text, said", [
    ("tasks: [1, 2", "not valid YAML"),
    ("", "holds a task object, a list of them"),
    ("tasks: []\nversion: 2", "unknown top-level field 'version'"),
    ("- 3", "task #1: a task is an object"),
])
def test_a_file_that_does_not_parse_is_one_line(tmp_path, text, said):
    path = tmp_path / "tasks.yaml"
    path.write_text(text)
    with pytest.raises(TaskFileError, match=said) as err:
        load_tasks(path)
    assert "\n" not in str(err.value)


def test_duplicates_folders_and_file_kinds(tmp_path):
    write(tmp_path, [WEB], "a.yaml")
    write(tmp_path, [WEB], "b.json")
    with pytest.raises(TaskFileError, match="task 'web/t/form-v1': field 'id': also defined in .*a.yaml"):
        load_tasks(tmp_path)
    with pytest.raises(TaskFileError, match="ends in .yaml, .yml or .json"):
        load_tasks(write(tmp_path, [WEB], "c.txt"))
    with pytest.raises(TaskFileError, match="no such task file or folder"):
        load_tasks(tmp_path / "nope.yaml")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TaskFileError, match="holds no"):
        load_tasks(empty)


def test_a_task_without_oracle_says_so():
    task = taskfiles.build({k: v for k, v in WEB.items()}, EXAMPLES / "x.yaml", 0)
    assert not task.has_oracle()
    with pytest.raises(NotImplementedError, match="ships no oracle"):
        task.oracle(None)


def test_web_oracle_helpers_and_literal_actions(tmp_path):
    task = load_tasks(write(tmp_path, {**WEB, "oracle": [{"click": "#a"}, {"fill": "#a", "text": "x"},
                                                          {"click_text": "Go"}, {"type": "click", "x": 3, "y": 4}]}))[0]
    assert [type(s).__name__ for s in task.steps] == ["Click", "Fill", "ClickText", "Click"]
    assert task.steps[-1] == Click(x=3, y=4)


def _pytool(scorer: dict):
    return taskfiles.build({"id": "pytool/t/q-v1", "domain": "pytool", "instruction": "?", "scorer": scorer},
                           EXAMPLES / "x.yaml", 0)


@pytest.mark.parametrize("scorer, right, wrong", [
    ({"type": "number", "value": 42}, ["42", "The answer is 42.", "42.0"], ["41", "42 or 43", None, "forty-two"]),
    ({"type": "number", "value": 3.14, "tolerance": 0.01}, ["3.141", "3.15"], ["3.2"]),
    ({"type": "point", "value": [120, 48], "tolerance": 3}, ["(121, 49)", "x=120, y=48"], ["(130, 48)", "120"]),
    ({"type": "word", "value": "red", "choices": ["red", "green", "blue"]}, ["Red.", "it is red"], ["red or blue"]),
    ({"type": "text", "value": "Paris"}, [" paris "], ["Paris, France"]),
    ({"type": "text", "value": "Paris", "case_sensitive": True}, ["Paris"], ["paris"]),
])
def test_pytool_answer_rules(scorer, right, wrong):
    rule = _pytool(scorer).scorer
    assert all(rule.score(a) for a in right) and not any(rule.score(a) for a in wrong)


def test_pytool_word_value_must_be_a_choice(tmp_path):
    with pytest.raises(TaskFileError, match="value 'pink' is not one of the choices"):
        _pytool({"type": "word", "value": "pink", "choices": ["red", "blue"]})


@pytest.mark.parametrize("change, said", [
    ({"config": [{"type": "teleport", "parameters": {}}]}, "field 'config[0].type': 'teleport' is not a supported"),
    ({"evaluator": {"func": "exact_match", "result": {"type": "vm_mind_reader"}}},
     "'evaluator.result[0].type': 'vm_mind_reader' is not a getter"),
    ({"evaluator": {"result": {}}}, "missing field 'evaluator.func'"),
    ({"osworld": "task.json"}, "not both"),
])
def test_desktop_tasks_are_checked_against_osworlds_steps_and_getters(tmp_path, change, said):
    data = json.loads((EXAMPLES / "desktop-hello.json").read_text())
    path = write(tmp_path, {**data, **change}, "t.json")
    with pytest.raises(TaskFileError, match=re.escape(said)) as err:
        load_tasks(path)
    assert "\n" not in str(err.value)


def test_desktop_task_may_name_an_osworld_json_beside_it(tmp_path):
    osworld = json.loads((EXAMPLES / "desktop-hello.json").read_text())
    for key in ("oracle", "max_steps"):
        osworld.pop(key)
    osworld["id"] = "0f1e2d3c-uuid-of-osworld"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "osworld.json").write_text(json.dumps(osworld))
    task = load_tasks(write(tmp_path, {"id": "desktop/mine/hello-v2", "domain": "desktop",
                                       "osworld": "sub/osworld.json"}))[0]
    assert task.id == "desktop/mine/hello-v2" and task.instruction == osworld["instruction"]
    assert task.spec.id == "desktop__mine__hello-v2" and not task.has_oracle()


@pytest.fixture
def forget():
    """Packs registered by a test are removed afterwards, tasks included."""
    added: list[str] = []
    yield added.append
    for pack in added:
        registration._pack_refs.pop(pack, None)
        registration._runtime_packs.discard(pack)
        registration.broken_packs.pop(pack, None)
        for task_id in [t for t, p in registration._task_pack.items() if p == pack]:
            registration._task_pack.pop(task_id)
            if registration._tasks is not None:
                registration._tasks.pop(task_id, None)


def test_a_task_file_is_a_pack_that_is_forwarded_by_path(tmp_path, forget, monkeypatch):
    monkeypatch.delenv(registration.PACKS_ENV, raising=False)
    page = tmp_path / "page.html"
    page.write_text("<input id=a>")
    path = write(tmp_path, [{**WEB, "page": {"file": "page.html"}},
                            {**WEB, "id": "web/t/form-v2"}])
    name = registration.add_pack(str(path))
    forget(name)
    assert name == str(path)
    assert [t.id for t in registration.pack_tasks(name)] == ["web/t/form-v1", "web/t/form-v2"]
    assert json.loads(registration.forwarding_environment()[registration.PACKS_ENV])[name] == str(path)
    forwards, _ = registration.pack_forwards()
    mine = next(f for f in forwards if f.pack == name)
    assert mine.is_task_file and set(mine.paths) == {str(path), str(page)}
    # one id scheme: long, short and unversioned spellings name one task; the unversioned one the latest
    assert registration.task("t/form-v1").id == "web/t/form-v1"
    assert registration.task("web/t/form").id == "web/t/form-v2"
    assert registration.task("t/form").id == "web/t/form-v2"
    assert registration.canonical_id(registration.task("miniwob/click-button")) == "web/miniwob/click-button"
    assert registration.task("web/miniwob/click-button").id == "miniwob/click-button"


def test_a_bad_task_file_pack_is_one_line(tmp_path):
    path = write(tmp_path, {**WEB, "scorer": {"type": "field", "selector": "#a"}})
    with pytest.raises(registration.RegistrationError, match=f"^{path}: task 'web/t/form-v1': field 'scorer'"):
        registration.add_pack(str(path))
    assert str(path) not in registration.packs()
    with pytest.raises(registration.RegistrationError, match="no such task file or folder"):
        registration.add_pack(str(tmp_path / "nope.yaml"))


def test_pytool_sandbox_cannot_read_the_task_file(tmp_path, forget):
    """What could the agent's code do to get reward 1 without the task? Read the expected value from the
    task file or the server's state: the file lies outside what the sandbox binds, the value only in the
    server. A guessed list of numbers does not pass the number rule."""
    import mintgym

    secret = 7919 * 7907
    path = write(tmp_path, {"id": "pytool/t/secret-v1", "domain": "pytool", "instruction": "Guess the number.",
                            "max_steps": 4, "scorer": {"type": "number", "value": secret}})
    forget(registration.add_pack(str(path)))
    env = mintgym.make("pytool/t/secret-v1", backend="inprocess", side_channels=("text",))
    try:
        env.reset(seed=0)
        probe = (f"import os\nfound = []\nfor top in ('/tmp', '/home', {str(tmp_path)!r}):\n"
                 f"    for root, _, files in os.walk(top):\n        for f in files:\n"
                 f"            try:\n                data = open(os.path.join(root, f), 'rb').read(1 << 20)\n"
                 f"            except OSError:\n                continue\n"
                 f"            found += [f] if b'{secret}' in data else []\n"
                 f"print('READABLE' if os.path.exists({str(path)!r}) else 'ABSENT', 'FOUND', found)")
        obs, *_ = env.step({"type": "python", "code": probe})
        assert "ABSENT FOUND []" in obs["text"], obs["text"]
        _, reward, terminated, _, _ = env.step({"type": "done",
                                                "answer": " ".join(str(secret + d) for d in (-1, 0, 1))})
        assert terminated and reward == 0.0
    finally:
        env.close()


def test_reloading_a_task_file_pack_reads_the_file_again(tmp_path, forget):
    path = write(tmp_path, [WEB])
    name = registration.add_pack(str(path))
    forget(name)
    write(tmp_path, [{**WEB, "id": "web/t/form-v2", "instruction": "Fill it again."}])
    registration.reload_pack(name)
    assert [t.id for t in registration.pack_tasks(name)] == ["web/t/form-v2"]
    assert registration.task("web/t/form").instruction == "Fill it again."
    with pytest.raises(registration.RegistrationError, match="unknown task id 'web/t/form-v1'"):
        registration.task("web/t/form-v1")


def test_a_folder_is_one_pack_and_a_name_may_be_given(forget):
    name = registration.add_pack(f"examples={EXAMPLES}")
    forget(name)
    assert name == "examples" and len(registration.pack_tasks("examples")) == 5
    assert registration.task("examples/sign-up").id == "web/examples/sign-up-v1"  # short and unversioned
    forwards, _ = registration.pack_forwards()
    mine = next(f for f in forwards if f.pack == "examples")
    assert mine.ref == str(EXAMPLES) and str(EXAMPLES / "signup.html") in mine.paths
