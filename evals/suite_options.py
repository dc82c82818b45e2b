"""A data suite's own options (``mintgym eval --suite-option KEY=VALUE``), validated by the suite's model.

Each data harness declares a pydantic model (``extra="forbid"``) of the keys it takes; this turns the raw
strings into it, or into one ``ValueError`` line naming the key and the problem.

    >>> from pydantic import BaseModel, ConfigDict
    >>> class Options(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     protocol: str = "official"
    >>> parse_suite_options(Options, {"protocol": "seeclick"}, "mind2web-test-task").protocol
    'seeclick'
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

Options = TypeVar("Options", bound=BaseModel)


def parse_suite_options(model: type[Options], options: dict[str, str] | None, suite: str) -> Options:
    """``model`` built from ``options``; a ``ValueError`` of one line for an unknown key or a bad value."""
    try:
        return model.model_validate(options or {})
    except ValidationError as err:
        problem = err.errors()[0]
        key = ".".join(str(part) for part in problem["loc"]) or "?"
        known = ", ".join(model.model_fields) or "none"
        if problem["type"] == "extra_forbidden":
            raise ValueError(f"{suite} has no suite option {key!r}; its options: {known}") from None
        raise ValueError(f"{suite} suite option {key}: {problem['msg']}") from None
