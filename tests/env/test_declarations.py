"""Each domain and pack declares itself (``mintgym.declarations`` entry points); the core reads the declarations."""

from __future__ import annotations

import pytest

from mintgym.env import declarations, registration, taskfiles
from mintgym.env.declarations import CommandOption, Declaration
from mintgym.errors import RegistrationError


def test_every_declaration_is_of_a_registered_domain_or_pack_and_its_refs_resolve():
    found = declarations.declarations()
    assert {"web", "desktop", "pytool", "android", "osworld"} <= set(found)
    assert set(found) <= set(registration.domains()) | set(registration.packs())
    for name, declared in found.items():
        if declared.task_entry:
            assert issubclass(declarations.load(declared.task_entry), taskfiles.TaskEntry), name
    assert set(taskfiles.kinds()) == {"web", "desktop", "pytool"}


def test_a_name_that_declares_nothing_gets_an_empty_declaration():
    assert declarations.declaration("no-such-domain") == Declaration()
    assert declarations.unavailable("no-such-domain") is None


def test_an_entry_point_that_is_not_a_declaration_is_refused():
    with declarations.declaring(odd="mintgym.env.declarations:GROUP"), \
            pytest.raises(RegistrationError, match="is a str, not a mintgym.env.declarations.Declaration"):
        declarations.declaration("odd")
    assert "odd" not in declarations.names()  # gone after the block
    for ref, message in (("nomodule_xyz:X", "cannot import 'nomodule_xyz'"),
                         ("mintgym.env.declarations:NOPE", "has no 'NOPE'"), ("no-colon", "module:attr")):
        with pytest.raises(RegistrationError, match=message):
            declarations.load(ref)


def test_options_are_listed_per_command():
    colour = CommandOption(flag="--colour", help="mine: c", commands=("check",))
    with declarations.declaring(mine=Declaration(options=(colour,))):
        assert [(n, o.flag) for n, o in declarations.options("check")] == [("mine", "--colour")]
    assert ("osworld", "--osworld-root") in [(n, o.flag) for n, o in declarations.options("tasks")]
    with pytest.raises(ValueError, match="flag"):
        CommandOption(flag="colour", help="x", commands=("check",))


def test_an_entry_without_domain_belongs_to_the_one_domain_claiming_its_fields():
    assert taskfiles._claiming_domain({"id": "x", "evaluator": {}}) == "desktop"
    assert taskfiles._claiming_domain({"id": "x"}) is None
    rival = Declaration(task_entry="mintgym.env.taskfiles:TaskEntry", task_entry_fields=("evaluator",))
    with declarations.declaring(rival=rival):
        assert taskfiles._claiming_domain({"id": "x", "evaluator": {}}) is None  # two claim it: the entry must say


def test_a_task_screen_is_the_domains_declared_one_or_the_sessions():
    ids = ("miniwob/click-test", "webapps/shop-cart-kettle", "null/echo")
    miniwob, webapp, echo = (registration.task(t) for t in ids)
    assert declarations.task_screen_size("web", miniwob, (800, 600)) == (160, 210)  # the task's viewport wins
    assert declarations.task_screen_size("web", webapp, (1024, 768)) == (800, 600)
    assert declarations.task_screen_size("null", echo, (64, 48)) == (64, 48)  # declares none: the session's size
    assert declarations.task_screen_size("web", None, (640, 480)) == (640, 480)
    with declarations.declaring(null=Declaration(task_screen=lambda task, size: (0, 10))), \
            pytest.raises(RegistrationError, match="declares a 0x10 screen for task 'null/echo'"):
        declarations.task_screen_size("null", echo, (64, 48))
