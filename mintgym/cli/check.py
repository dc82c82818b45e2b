"""``mintgym check PACK_OR_TASK``: the conformance check of tasks, run through an env server, as a table.

For each task: the untouched state scores 0 and the oracle (acting only through the shared actions)
scores 1; gymnasium's ``check_env`` passes on the env; and, for a task that declares it (the tag
``deterministic``), two resets with one seed give the same screenshot. The server is the one the chosen
backend starts (``local`` by default), so a pack that checks here also reaches that backend's servers.

    mintgym check pytool/count-shapes-0
    mintgym check mypkg.tasks:tasks            # a pack given as module:function
    mintgym check path/to/tasks.yaml           # a task file (or a folder of them), docs/task-files.md
    mintgym check --packs mypkg.tasks:tasks mine/green-button
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import typer

from mintgym.cli.agent_options import fail, use_packs
from mintgym.errors import error_line

#: The tag a task carries to declare that a reset with a given seed always gives the same screen.
DETERMINISTIC_TAG = "deterministic"
COLUMNS = ("untouched=0", "oracle=1", "check_env", "reset determinism")


def register(app: typer.Typer) -> None:
    app.command("check")(check)


@dataclass
class TaskCheck:
    """One task's row: each column's verdict (ok, FAIL, n/a, ...) and the reasons of the failures."""

    task_id: str
    cells: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: The full messages of errors that say more than one line (a task's own exception, with its frames).
    details: list[str] = field(default_factory=list)

    def fail(self, columns: tuple[str, ...], where: str, err: BaseException) -> None:
        """Mark ``columns`` (those not decided yet) FAIL because ``err`` was raised during ``where``."""
        for column in columns:
            self.cells.setdefault(column, "FAIL")
        self.notes.append(f"{where}: {error_line(err)}")
        if len(str(err).strip().splitlines()) > 1:
            self.details.append(str(err).strip())

    @property
    def failed(self) -> bool:
        return any(v in ("FAIL", "no oracle") for v in self.cells.values())


def check(target: str = typer.Argument(..., help="a task id, an id prefix, a pack name, a pack as "
                                                  "module:function, or a task file or folder of them"),
          packs: list[str] = typer.Option([], "--packs", help="more task packs (module:function, or a task "
                                                              "file or folder); repeatable"),
          backend: str = typer.Option("local", help="runtime that starts the env server: local | docker | ray"),
          base_url: str | None = typer.Option(None, help="check against a running env server instead"),
          token: str | None = typer.Option(None, envvar="MINTGYM_TOKEN"),
          seed: int = typer.Option(0, help="seed of the resets")) -> None:
    """Check tasks for conformance (oracle scores 1, untouched state 0, gymnasium check_env, reset
    determinism where declared) and print a table; exit status 1 when a check fails."""
    from mintgym.cli.core import _server, domain_unavailable
    from mintgym.env import registration

    use_packs(packs)
    found = select_tasks(target)
    rows: list[TaskCheck] = []
    by_domain: dict[str, list[Any]] = {}
    for task in found:
        reason = task.unavailable() or (None if base_url else domain_unavailable(task.domain))
        reason = reason or (None if base_url else registration.forwarding_problem(task.id))
        if reason:
            rows.append(TaskCheck(task.id, dict.fromkeys(COLUMNS, "skipped"), [f"cannot run here: {reason}"]))
        else:
            by_domain.setdefault(task.domain, []).append(task)
    for domain, domain_tasks in sorted(by_domain.items()):
        with _server(domain, backend, base_url, token) as (url, tok):
            for task in domain_tasks:
                try:
                    row = check_one(task, url, tok, seed)
                except Exception as err:  # noqa: BLE001 -- no session for this task: its row fails, the next goes on
                    row = TaskCheck(task.id)
                    row.fail(COLUMNS, "session", err)
                rows.append(row)
                typer.echo(f"checked {task.id}: {'FAIL' if row.failed else 'ok'}", err=True)
    rows.sort(key=lambda r: r.task_id)
    typer.echo(render_table(rows))
    for row in rows:
        for detail in row.details:
            typer.echo(f"\n{row.task_id}: {detail}")
    failed = sum(r.failed for r in rows)
    typer.echo(f"{len(rows)} tasks: {len(rows) - failed} pass, {failed} fail")
    if failed:
        raise typer.Exit(1)


def select_tasks(target: str) -> list[Any]:
    """The tasks ``target`` names: a pack ref (module:function), a task file or folder, a task id (any
    spelling of :mod:`mintgym.env.ids`), a pack name or an id prefix."""
    import os

    from mintgym.env import registration, taskfiles

    if ":" in target or target.endswith(taskfiles.SUFFIXES) or os.path.exists(target):
        return _pack_tasks(use_packs([target])[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = registration.tasks()
    by_id = {t.id: t for t in every}
    if target in by_id:
        return [by_id[target]]
    if target in registration.spellings():
        return [registration.task(target)]
    if target in registration.packs():
        return _pack_tasks(target)
    prefixed = [t for t in every if t.id.startswith(target.rstrip("/") + "/")]
    if prefixed:
        return prefixed
    registration.task(target)  # raises with close matches
    return []


def _pack_tasks(pack: str) -> list[Any]:
    from mintgym.env import registration

    found = registration.pack_tasks(pack)
    if not found:
        raise fail(f"task pack {pack!r} has no tasks")
    return found


def check_one(task: Any, url: str, token: str | None, seed: int) -> TaskCheck:
    """Run every check of one task against the env server at ``url``."""
    from gymnasium.utils.env_checker import check_env

    import mintgym

    row = TaskCheck(task.id)
    env = mintgym.make(task.id, base_url=url, token=token)
    try:
        try:
            _check_oracle(env, task, seed, row)
        except Exception as err:  # noqa: BLE001 -- a failed check is a row of the table, not a crash
            row.fail(("untouched=0", "oracle=1"), "reset/evaluate", err)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_env(env.unwrapped, skip_render_check=True)
            row.cells["check_env"] = "ok"
        except Exception as err:  # noqa: BLE001
            row.fail(("check_env",), "check_env", err)
        try:
            _check_determinism(env, task, seed, row)
        except Exception as err:  # noqa: BLE001
            row.fail(("reset determinism",), "reset determinism", err)
    finally:
        env.close()
    return row


def _check_oracle(env: Any, task: Any, seed: int, row: TaskCheck) -> None:
    env.reset(seed=seed)
    untouched = env.evaluate()
    row.cells["untouched=0"] = "ok" if untouched == 0.0 else "FAIL"
    if untouched != 0.0:
        row.notes.append(f"the untouched state scores {untouched}")
    if not task.has_oracle():
        row.cells["oracle=1"] = "no oracle"
        row.notes.append("the task ships no oracle")
        return
    reward, steps, errors = 0.0, 0, []
    try:
        while True:
            action = env.oracle_action()
            if action is None:  # the oracle is done without a `done`: score the state it left
                reward = env.evaluate()
                break
            _, reward, terminated, truncated, info = env.step(action)
            steps += 1
            if info.get("error") or info.get("action_error"):
                errors.append(str(info.get("error") or info.get("action_error")))
            if terminated or truncated:
                break
    except Exception as err:  # noqa: BLE001
        row.fail(("oracle=1",), "oracle", err)
        return
    ok = reward == 1.0 and not errors
    row.cells["oracle=1"] = "ok" if ok else "FAIL"
    if not ok:
        row.notes.append(f"oracle scored {reward} in {steps} steps"
                         + (f"; invalid actions: {errors}" if errors else ""))


def _check_determinism(env: Any, task: Any, seed: int, row: TaskCheck) -> None:
    import numpy as np

    if DETERMINISTIC_TAG not in task.tags:
        row.cells["reset determinism"] = "n/a"
        return
    first, _ = env.reset(seed=seed)
    second, _ = env.reset(seed=seed)
    same = np.array_equal(first["screenshot"], second["screenshot"])
    row.cells["reset determinism"] = "ok" if same else "FAIL"
    if not same:
        row.notes.append(f"two resets with seed {seed} gave different screenshots")


def render_table(rows: list[TaskCheck]) -> str:
    """A plain-text table: one row per task, one column per check, then the failures' reasons."""
    header = ("task", *COLUMNS, "notes")
    body = [(r.task_id, *(r.cells.get(c, "-") for c in COLUMNS), "; ".join(r.notes)) for r in rows]
    widths = [max(len(str(line[i])) for line in [header, *body]) for i in range(len(header) - 1)]
    lines = []
    for line in [header, *body]:
        cells = [str(v).ljust(w) for v, w in zip(line[:-1], widths, strict=True)]  # the notes stay unpadded
        lines.append("  ".join([*cells, str(line[-1])]).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
