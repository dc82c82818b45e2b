"""Each engine's options section is held to the constructor that takes them: a field the engine does not take,
or a default that differs from the engine's own, fails here (the section is the config's typed copy)."""

import inspect

import pytest

from mintgym.config import ConfigError, RunConfig, engine_kwargs
from mintgym.config.engine import HFEngineOptions, VLLMEngineOptions
from mintgym.inference.hf import HFEngine
from mintgym.inference.vllm import VLLMEngine

#: Arguments the run gives an engine itself, never its options.
FROM_THE_RUN = {"model_path", "model", "processor", "policy_version"}


@pytest.mark.parametrize(("options", "engine"), [(HFEngineOptions, HFEngine), (VLLMEngineOptions, VLLMEngine)])
def test_an_options_section_names_what_its_engine_takes_with_its_defaults(options, engine):
    params = inspect.signature(engine).parameters
    takes_more = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    for name, field in options.model_fields.items():
        if name in params:
            assert field.default == params[name].default, f"{options.__name__}.{name}"
        else:
            assert takes_more, f"{options.__name__}.{name} is not an argument of {engine.__name__}"
    own = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY or p.default is not p.empty} - FROM_THE_RUN
    missing = own - set(options.model_fields)
    assert not missing, f"{engine.__name__} options the config cannot set: {missing}"


def test_only_the_options_a_config_sets_reach_the_engine():
    base = {"model": {"path": "m"}, "tasks": [{"id": "null/echo"}]}
    hf = RunConfig.from_dict({**base, "engine": {"options": {"max_batch_size": 4}}}).engine
    assert hf.name == "hf" and engine_kwargs(hf) == {"max_batch_size": 4}
    vllm = RunConfig.from_dict({**base, "engine": {"name": "vllm", "options": {
        "gpu_memory_utilization": 0.5, "kv_cache_memory_bytes": 1 << 26}}}).engine
    assert engine_kwargs(vllm) == {"gpu_memory_utilization": 0.5, "kv_cache_memory_bytes": 1 << 26}


def test_an_option_of_the_other_engine_is_refused_naming_this_ones():
    base = {"model": {"path": "m"}, "tasks": [{"id": "null/echo"}]}
    with pytest.raises(ConfigError, match=r"^engine.options.max_images: unknown key \(known: device, dtype, "):
        RunConfig.from_dict({**base, "engine": {"name": "hf", "options": {"max_images": 2}}})
