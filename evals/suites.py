"""Benchmark suites: named sets of registered tasks, read from the checked-in table ``suites.yaml``.

A suite entry is data (filters over the task registry plus the default action set, step limit and
seeds); :func:`resolve_suite` turns it into a :class:`Benchmark`, the record a harness runs. Tasks
that cannot run on this machine stay in the benchmark as ``skipped`` with their reason, unless the
suite asks for ``available_only``.

    >>> from mintgym.evals.suites import resolve_suite  # doctest: +SKIP
    >>> bench = resolve_suite("pytool-all")  # doctest: +SKIP
    >>> bench.task_ids[:2]  # doctest: +SKIP
    ('pytool/bar-chart-0', 'pytool/bar-chart-1')
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

SUITES_FILE = Path(__file__).with_name("suites.yaml")
_FILTER_KEYS = frozenset({"prefix", "domain", "family", "tags_any", "tags_all", "ids", "names", "any_of"})
_VERSION = re.compile(r"-v\d+$")


@dataclass(frozen=True)
class Benchmark:
    """What one evaluation runs: the task ids, and the settings that make comparisons fair."""

    name: str
    task_ids: tuple[str, ...]
    description: str = ""
    #: The action set the tasks are played with (the domain's, by default).
    action_set: str | None = None
    #: Most steps an agent gets per episode; None keeps each task's own ``max_steps``.
    max_steps: int | None = None
    #: One episode per seed and task (``--episodes`` overrides with seeds ``seed .. seed+N-1``).
    seeds: tuple[int, ...] = (0,)
    #: Tasks of the suite that cannot run here: (task id, reason).
    skipped: tuple[tuple[str, str], ...] = field(default=())
    #: Seeds of their own for some tasks, (task id, seeds), instead of ``seeds`` (a run's held-out seeds).
    task_seeds: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())


@dataclass(frozen=True)
class SuiteSpec:
    """One entry of the suites table, before it is resolved against the registry."""

    name: str
    description: str
    select: dict[str, Any]
    available_only: bool = False
    action_set: str | None = None
    max_steps: int | None = None
    seeds: tuple[int, ...] = (0,)


@lru_cache(maxsize=4)
def load_table(path: str | None = None) -> dict[str, SuiteSpec]:
    """The suites table (``suites.yaml`` next to this module, or ``path``), checked entry by entry."""
    source = Path(path) if path else SUITES_FILE
    raw = yaml.safe_load(source.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{source}: the suites table must be a mapping of suite name to entry")
    table = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("select"), dict):
            raise ValueError(f"{source}: suite {name!r} needs a 'select' mapping of filters")
        _check_filter(entry["select"], f"{source}: suite {name!r}")
        unknown = set(entry) - {"description", "select", "available_only", "action_set", "max_steps", "seeds"}
        if unknown:
            raise ValueError(f"{source}: suite {name!r} has unknown keys {sorted(unknown)}")
        seeds = entry.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
            raise ValueError(f"{source}: suite {name!r}: seeds must be a non-empty list of integers")
        max_steps = entry.get("max_steps")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError(f"{source}: suite {name!r}: max_steps must be a positive integer or null")
        table[str(name)] = SuiteSpec(str(name), str(entry.get("description", "")).strip(), entry["select"],
                                     bool(entry.get("available_only", False)), entry.get("action_set"),
                                     max_steps, tuple(seeds))
    return table


def _check_filter(select: dict[str, Any], where: str) -> None:
    unknown = set(select) - _FILTER_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown filters {sorted(unknown)}; known: {', '.join(sorted(_FILTER_KEYS))}")
    for sub in select.get("any_of", []):
        if not isinstance(sub, dict):
            raise ValueError(f"{where}: every any_of entry must be a mapping of filters")
        _check_filter(sub, where)


def suite_names() -> list[str]:
    return sorted({**load_table(), **osworld_list_suites()})


def osworld_list_suites() -> dict[str, SuiteSpec]:
    """OSWorld's own task lists of the OSWorld root in use (``test_all.json`` -> suite ``osworld-test_all``)."""
    from mintgym.environments.desktop.osworld.loader import OSWorldRootError, osworld_root, task_lists

    try:
        root = osworld_root()
        lists = task_lists(root) if root else {}
    except (OSWorldRootError, ValueError):
        return {}
    suites = {}
    for stem, by_app in lists.items():
        ids = sorted(f"osworld/{app}/{task_id}" for app, task_ids in by_app.items() for task_id in task_ids)
        suites[f"osworld-{stem}"] = SuiteSpec(
            f"osworld-{stem}", f"OSWorld's {stem}.json list from {root} ({len(ids)} tasks)", {"ids": ids},
            action_set="desktop", max_steps=None)
    return suites


def matches(task: Any, select: dict[str, Any]) -> bool:
    """Whether a registered task passes every filter of ``select``."""
    tags = set(task.tags)
    if "prefix" in select and not task.id.startswith(select["prefix"]):
        return False
    if "domain" in select and task.domain != select["domain"]:
        return False
    if "family" in select and task.family != select["family"]:
        return False
    if "tags_any" in select and not tags & set(select["tags_any"]):
        return False
    if "tags_all" in select and not set(select["tags_all"]) <= tags:
        return False
    if "ids" in select and task.id not in set(select["ids"]):
        return False
    if "names" in select and _VERSION.sub("", task.id.rsplit("/", 1)[-1]) not in set(select["names"]):
        return False
    return "any_of" not in select or any(matches(task, sub) for sub in select["any_of"])


def resolve_suite(name: str, tasks: Iterable[Any] | None = None) -> Benchmark:
    """The :class:`Benchmark` of suite ``name`` over the registered tasks (or the given ones).

    Raises:
        ValueError: the suite is unknown (the message lists the suites) or selects no task.
    """
    table = {**load_table(), **osworld_list_suites()}
    if name not in table:
        raise ValueError(f"unknown suite {name!r}; suites: {', '.join(sorted(table))}")
    spec = table[name]
    if tasks is None:
        from mintgym.env import registration

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # broken packs are reported below, not as warnings
            tasks = registration.tasks()
            broken = dict(registration.broken_packs)
    else:
        broken = {}
    chosen, skipped = [], []
    for task in sorted(tasks, key=lambda t: t.id):
        if not matches(task, spec.select):
            continue
        reason = task.unavailable()
        if reason and spec.available_only:
            continue
        chosen.append(task.id)
        if reason:
            skipped.append((task.id, reason))
    if not chosen:
        hint = ("; task packs that failed to load: " + "; ".join(f"{p}: {e}" for p, e in sorted(broken.items()))
                if broken else "")
        raise ValueError(f"suite {name!r} selects no registered task ({spec.description}){hint}")
    return Benchmark(name=name, task_ids=tuple(chosen), description=spec.description, action_set=spec.action_set,
                     max_steps=spec.max_steps, seeds=spec.seeds, skipped=tuple(skipped))


def benchmark_for_tasks(task_ids: Iterable[str], tasks_by_id: dict[str, Any] | None = None) -> Benchmark:
    """An ad-hoc :class:`Benchmark` of the given task ids (``mintgym eval --tasks``); unknown ids raise."""
    from mintgym.env import registration

    ids = [t.strip() for t in task_ids if t.strip()]
    if not ids:
        raise ValueError("no task ids given")
    skipped = []
    for task_id in dict.fromkeys(ids):
        task = tasks_by_id[task_id] if tasks_by_id and task_id in tasks_by_id else registration.task(task_id)
        reason = task.unavailable()
        if reason:
            skipped.append((task_id, reason))
    return Benchmark(name="custom", task_ids=tuple(dict.fromkeys(ids)), description="tasks given on the command line",
                     skipped=tuple(skipped))
