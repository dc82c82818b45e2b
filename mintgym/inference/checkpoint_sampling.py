"""A checkpoint's own sampling settings (``generation_config.json``), which no MintGym engine samples with.

transformers 5's ``generate`` fills every field that the ``GenerationConfig`` it is given leaves unset from the
model's own generation config, and vLLM (``generation_config="auto"``, its default) takes that file's values
as default sampling params. A repetition penalty, ``no_repeat_ngram_size``, ``min_new_tokens``, forced or
suppressed tokens, ``top_k`` from there would act on the logits before MintGym's sampler: the tokens would
come from another distribution than the one whose logprobs the engine reports and the trainer recomputes
(``log_softmax(logits / temperature)``, vision placeholders masked), and the mismatch metric would not show it
(measured on the tiny model with a repetition penalty of 1.3: sampler logprobs 0.05 off the trainer's, against
5e-7 without it). So the engines sample with :class:`~mintgym.inference.types.SamplingParams` alone and take
from the checkpoint only which tokens end a response; :func:`ignored_settings` names the rest, which each
engine logs once when it loads a checkpoint that has any.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

#: Fields that only say which tokens are special: the engines keep the checkpoint's end-of-response ids.
SPECIAL_TOKEN_FIELDS = frozenset({"bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"})


def ignored_settings(generation_config: Any) -> dict[str, Any]:
    """The settings of a transformers ``GenerationConfig`` that an engine does not sample with: every field
    set to something other than transformers' own default (or off), but for the special tokens.

    >>> from transformers import GenerationConfig
    >>> ignored_settings(GenerationConfig(repetition_penalty=1.05, top_k=1, eos_token_id=2, do_sample=False))
    {'repetition_penalty': 1.05, 'top_k': 1}
    """
    from transformers import GenerationConfig

    defaults = getattr(GenerationConfig, "_get_default_generation_params", dict)()
    return {key: value for key, value in sorted(generation_config.to_diff_dict().items())
            if key not in SPECIAL_TOKEN_FIELDS and key != "transformers_version" and not key.startswith("_")
            and value is not None and value is not False and value != defaults.get(key)}


def say_ignored(engine: str, checkpoint: str, settings: dict[str, Any]) -> None:
    """Log once, on the ``mintgym.inference.checkpoint_sampling`` logger, what ``engine`` ignores."""
    if settings:
        listed = ", ".join(f"{key}={value!r}" for key, value in settings.items())
        log.warning("%s engine: %s's generation_config sets %s; MintGym samples with its own SamplingParams "
                    "only (temperature, top_p), so these are not applied", engine, checkpoint, listed)
