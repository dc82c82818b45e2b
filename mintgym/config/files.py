"""Layer 1: a run config's YAML file (repeated keys refused) and ``dotted.key=value`` overrides on it.

    >>> apply_overrides({"train": {"lr": 0.1}}, ["train.lr=3e-4", "rollout.group_size=4"])
    {'train': {'lr': '3e-4'}, 'rollout': {'group_size': 4}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mintgym.config.base import ConfigError


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice",
                                                        key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file" if not path.exists() else f"{path} is not a file")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # SafeLoader, no repeated keys
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a mapping at the top level, got {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set ``dotted.key=value`` items into ``data`` (in place, and returned). Values are YAML scalars or flow
    collections (``3e-4``, ``true``, ``null``, ``[1, 2]``, ``{a: 1}``); list items are addressed by index
    (``tasks.0.seeds=[1,2]``). Whether the key exists and the value fits is checked by validation after."""
    for item in overrides:
        key, sep, text = item.partition("=")
        parts = key.strip().split(".")
        if not sep or not all(parts):
            raise ConfigError(f"override {item!r}: expected key.path=value (e.g. train.lr=3e-4)")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text  # not YAML: the text itself; validation says if a string does not fit
        node: Any = data
        for depth, part in enumerate(parts):
            here = ".".join(parts[:depth + 1])
            last = depth == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) > len(node):
                    raise ConfigError(f"{here}: no such item ({'.'.join(parts[:depth])} has {len(node)}; "
                                      f"address items by index, {len(node)} to add one)")
                part = int(part)
                if part == len(node):
                    node.append(None)
            elif not isinstance(node, dict):
                raise ConfigError(f"{here}: {'.'.join(parts[:depth])} is {node!r}, not a section")
            if last:
                node[part] = value
            else:
                if (node[part] if isinstance(node, list) else node.get(part)) is None:
                    node[part] = [] if parts[depth + 1].isdigit() else {}
                node = node[part]
    return data
