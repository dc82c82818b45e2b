"""The ScreenSpot suites' own options (``mintgym eval --suite screenspot-pro --suite-option KEY=VALUE``).

ScreenSpot-Pro takes the official script's switches (eval_screenspot_pro.py:18-31): ``inst_style``
(instruction, action, description), ``gt_type`` (positive, negative) and ``language`` (en, cn), each one
value, a comma-separated list, or ``all``. ScreenSpot v1/v2 (SeeClick's script) take none.

    >>> options = ProOptions.model_validate({"gt_type": "all", "language": "en"})
    >>> options.gt_type, options.inst_style
    (('positive', 'negative'), ('instruction',))
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

#: eval_screenspot_pro.py:18-20, in the official order.
GT_TYPES = ("positive", "negative")
INSTRUCTION_STYLES = ("instruction", "action", "description")
LANGUAGES = ("en", "cn")


def _choices(value: Any, known: tuple[str, ...]) -> tuple[str, ...]:
    """``all``, one name or a comma list (eval_screenspot_pro.py:346-359) as a tuple of known names."""
    if isinstance(value, (tuple, list)):
        names = [str(v) for v in value]
    elif value == "all":
        return known
    else:
        names = [v.strip() for v in str(value).split(",")]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"{', '.join(unknown) or 'nothing'} is not one of {', '.join(known)} or 'all'")
    if len(set(names)) != len(names):
        raise ValueError(f"{','.join(names)} names a value twice")
    return tuple(names)


class ProOptions(BaseModel):
    """ScreenSpot-Pro's options, as the official script's command line takes them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Instruction styles to run (each only labels the samples: the script shows the same instruction).
    inst_style: tuple[str, ...] = ("instruction",)
    #: Ground-truth types: ``negative`` asks the model whether the target is there at all (refusal split).
    gt_type: tuple[str, ...] = ("positive",)
    #: Instruction languages: ``en`` (``instruction``) or ``cn`` (``instruction_cn``).
    language: tuple[str, ...] = ("en",)

    @field_validator("inst_style", mode="before")
    @classmethod
    def _styles(cls, value: Any) -> tuple[str, ...]:
        return _choices(value, INSTRUCTION_STYLES)

    @field_validator("gt_type", mode="before")
    @classmethod
    def _gt_types(cls, value: Any) -> tuple[str, ...]:
        return _choices(value, GT_TYPES)

    @field_validator("language", mode="before")
    @classmethod
    def _languages(cls, value: Any) -> tuple[str, ...]:
        return _choices(value, LANGUAGES)

    @model_validator(mode="after")
    def _chinese_only_for_positive_instructions(self) -> ProOptions:
        # eval_screenspot_pro.py:377-380 raises for any other combination
        if "cn" in self.language and (self.inst_style != ("instruction",) or self.gt_type != ("positive",)):
            raise ValueError("language cn goes only with inst_style=instruction and gt_type=positive")
        return self


class SeeClickOptions(BaseModel):
    """ScreenSpot v1/v2: SeeClick's script has no such switches, so neither does the suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)
