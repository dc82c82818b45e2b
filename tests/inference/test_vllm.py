"""The vllm engine without a GPU: its import guard, the prompts and sampling params it builds, and, on a fake
``vllm`` module, its batching, weight updates and cache resets."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import sys
import threading
import time
import types
from pathlib import Path

import pytest
import torch
from PIL import Image

from mintgym.inference import GenerationRequest, SamplingParams, make_engine
from mintgym.inference.vllm import build_prompt, sampling_kwargs

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed here")
def test_missing_vllm_says_how_to_get_it(tiny_model_path):
    with pytest.raises(ImportError, match=r"mintgym\[vllm\].*make_engine\('hf'"):
        make_engine("vllm", model_path=tiny_model_path)


def test_prompt_is_the_hf_engines_chat_text_with_images_in_order(hf_engine, make_request, screenshot):
    request = make_request(0)
    request.messages[0]["content"].append({"type": "image", "image": screenshot[:60]})
    prompt = build_prompt(hf_engine.processor, request)
    images = prompt["multi_modal_data"]["image"]
    assert [im.size for im in images] == [(200, 120), (200, 60)] and all(isinstance(i, Image.Image) for i in images)
    assert prompt["prompt"].count("<|vision_start|><|image_pad|><|vision_end|>") == 2
    assert prompt["prompt"].endswith("<|im_start|>assistant\n")
    # the same text the hf engine tokenizes: same prompt token ids once the processor expands the pads
    enc = hf_engine.processor(text=[prompt["prompt"]], images=images, return_tensors="pt")
    [g] = hf_engine.generate([request])
    assert enc["input_ids"][0].tolist() == g.prompt_token_ids
    assert "multi_modal_data" not in build_prompt(hf_engine.processor, make_request(1, image=False))


def test_sampling_kwargs(make_request):
    kw = sampling_kwargs(make_request(0, seed=3, temperature=0.5, top_p=0.9, stop=("\n",), max_new_tokens=7).sampling,
                         stop_token_ids=[5, 2, 5])
    assert kw == {"n": 1, "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "logprobs": 0,
                  "skip_special_tokens": True, "seed": 3, "stop": ["\n"], "stop_token_ids": [2, 5],
                  "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0,
                  "frequency_penalty": 0.0, "min_tokens": 0}
    assert "seed" not in sampling_kwargs(make_request(0, seed=None).sampling)
    assert sampling_kwargs(make_request(0, top_logprobs=3).sampling)["logprobs"] == 3


# -- the engine itself, on a fake ``vllm`` module (no GPU) ------------------------------------------------


class _Logprob:
    def __init__(self, logprob: float, rank: int):
        self.logprob, self.rank = logprob, rank


class FakeLLM:
    """The part of ``vllm.LLM`` the engine uses. Its "weights" are the value in the last file it loaded; each
    generated token is that value, so an output shows which weights made it."""

    #: Where ``reset_encoder_cache`` lives: on ``llm_engine`` (vLLM's V1 LLMEngine), on the LLM, or nowhere.
    encoder_reset_on = "llm_engine"
    #: The engine's ``model_config.dtype`` (None: no model_config), and how long a generate call takes.
    dtype = None
    delay = 0.0

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.weights = 0
        self.batches: list[int] = []
        self.params: list[dict] = []
        self.events: list[str] = []
        self.files: list[dict] = []
        self.fail_load = False
        self.interleaved = False
        if self.encoder_reset_on == "llm_engine":
            self.llm_engine = types.SimpleNamespace(reset_encoder_cache=lambda: self.events.append("reset_encoder"))
        elif self.encoder_reset_on == "llm":
            self.reset_encoder_cache = lambda: self.events.append("reset_encoder")
        if self.dtype is not None:
            self.model_config = types.SimpleNamespace(dtype=self.dtype)

    def generate(self, prompts, params, use_tqdm=False):
        if any("too long" in p["prompt"] for p in prompts):  # vLLM refuses the whole call for one bad prompt
            raise ValueError("The decoder prompt (length 9000) is longer than the maximum model length of 8192")
        self.events.append("generate")
        weights = self.weights
        self.batches.append(len(prompts))
        self.params += params
        time.sleep(self.delay)
        self.interleaved |= self.weights != weights
        self.events.append("generated")
        completion = types.SimpleNamespace(token_ids=[weights], logprobs=[{weights: _Logprob(-0.1, 1)}],
                                           text=str(weights), finish_reason="stop")
        return [types.SimpleNamespace(outputs=[completion], prompt_token_ids=[1, 2], metrics=None) for _ in prompts]

    def collective_rpc(self, method, args=()):
        self.events.append(method)
        if method == "mintgym_load_weights":
            from safetensors.torch import load_file

            time.sleep(0.01)
            state = load_file(args[0])
            self.files.append({"path": Path(args[0]), "dtypes": {v.dtype for v in state.values()}})
            if self.fail_load:
                raise RuntimeError("CUDA out of memory")
            self.weights = int(next(iter(state.values())).flatten()[0])
        return [0.0]

    def reset_prefix_cache(self):
        self.events.append("reset_prefix")
        return True


@pytest.fixture
def fake_vllm(monkeypatch):
    """``vllm`` as the fake: ``fake_vllm(**class attributes)`` makes a VLLMEngine on the tiny model's path."""
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=FakeLLM, SamplingParams=lambda **kw: kw))
    engines = []

    def make(model_path, **attributes):
        for name, value in attributes.items():
            monkeypatch.setattr(FakeLLM, name, value)
        from mintgym.inference.vllm import VLLMEngine

        engines.append(VLLMEngine(model_path, batch_window_s=0.005))
        return engines[-1]

    yield make
    for engine in engines:
        engine.close()  # its folder under /dev/shm


_SHAPES: dict[str, tuple[int, ...]] = {}


@pytest.fixture(autouse=True)
def checkpoint_shapes(hf_engine):
    """The names and shapes of the tiny model's state dict (what a trainer of it publishes)."""
    _SHAPES.update({k: tuple(v.shape) for k, v in hf_engine.model.state_dict().items()})


def full_state(engine, value: float) -> dict[str, torch.Tensor]:
    """A state dict the checkpoint accepts, every entry ``value``."""
    return {name: torch.full(shape, float(value)) for name, shape in _SHAPES.items()}


def weights_file(engine, tmp_path, value: float) -> Path:
    from safetensors.torch import save_file

    path = tmp_path / f"weights-{value}.safetensors"
    save_file(full_state(engine, value), str(path))
    return path


def chat(text: str = "hi") -> GenerationRequest:
    return GenerationRequest([{"role": "user", "content": text}], SamplingParams(max_new_tokens=4))


@pytest.mark.parametrize("where", ["llm_engine", "llm"])
def test_an_update_resets_the_prefix_and_the_encoder_cache(fake_vllm, tiny_model_path, tmp_path, where):
    """vLLM keeps vision encoder outputs across requests by image hash: after new weights they are stale."""
    engine = fake_vllm(tiny_model_path, encoder_reset_on=where)
    engine.update_weights(1, weights_file(engine, tmp_path, 1))
    assert engine.llm.events == ["mintgym_load_weights", "reset_prefix", "reset_encoder"]
    assert engine.policy_version == 1 and engine.encoder_cache_resets == 1
    assert engine.generate([chat()])[0].response_token_ids == [1]


def test_a_vllm_without_an_encoder_cache_reset_says_so(fake_vllm, tiny_model_path, tmp_path):
    engine = fake_vllm(tiny_model_path, encoder_reset_on=None)
    with pytest.warns(RuntimeWarning, match="no reset_encoder_cache"):
        engine.update_weights(1, weights_file(engine, tmp_path, 1))
    assert engine.policy_version == 1 and engine.encoder_cache_resets == 0


async def test_concurrent_episodes_share_generate_calls_and_keep_their_versions(fake_vllm, tiny_model_path,
                                                                                tmp_path):
    """The reviewer's s4: 32 episodes calling at once while the trainer publishes 4 versions."""
    engine = fake_vllm(tiny_model_path, delay=0.05)
    files = [weights_file(engine, tmp_path, v) for v in range(1, 5)]

    async def episode(i):
        await asyncio.sleep(0.003 * (i % 8))
        return (await engine.agenerate([chat(f"task {i}")]))[0]

    async def trainer():
        for version, path in enumerate(files, start=1):
            await asyncio.sleep(0.03)
            await asyncio.to_thread(engine.update_weights, version, path)

    gens, _ = await asyncio.gather(asyncio.gather(*(episode(i) for i in range(32))), trainer())
    assert sum(engine.llm.batches) == 32 and len(engine.llm.batches) <= 8, engine.llm.batches
    assert all(g.response_token_ids == [g.policy_version] for g in gens)  # the weights that made it
    assert not engine.llm.interleaved and engine.policy_version == 4


async def test_one_bad_request_fails_alone(fake_vllm, tiny_model_path):
    engine = fake_vllm(tiny_model_path)
    results = await asyncio.gather(*(engine.agenerate([chat("too long" if i == 3 else f"task {i}")])
                                     for i in range(8)), return_exceptions=True)
    assert isinstance(results[3], ValueError) and "maximum model length" in str(results[3])
    assert all(isinstance(r, list) and r[0].response_token_ids == [0] for i, r in enumerate(results) if i != 3)


def test_an_update_waits_for_the_running_generate(fake_vllm, tiny_model_path, tmp_path):
    engine = fake_vllm(tiny_model_path, delay=0.3)
    path = weights_file(engine, tmp_path, 7)
    running = threading.Thread(target=engine.generate, args=([chat()],))
    running.start()
    while "generate" not in engine.llm.events:
        time.sleep(0.005)
    engine.update_weights(7, path)
    running.join()
    assert engine.llm.events[:3] == ["generate", "generated", "mintgym_load_weights"]


def test_sampling_excludes_the_tokens_the_trainer_masks(fake_vllm, tiny_model_path, hf_engine):
    """The placeholder and vision bracket ids, at -inf: vLLM never samples a token the trainer scores -inf."""
    from mintgym.inference.logprobs import suppressed_token_ids

    engine = fake_vllm(tiny_model_path)
    engine.generate([chat(), chat("again")])
    ids = suppressed_token_ids(hf_engine.model)
    pad, start = hf_engine.tokenizer.convert_tokens_to_ids(["<|image_pad|>", "<|vision_start|>"])
    assert {pad, start} <= set(ids) and len(engine.llm.params) == 2
    for params in engine.llm.params:
        assert params.get("logit_bias") == {i: -math.inf for i in ids}
    assert "logit_bias" not in sampling_kwargs(SamplingParams())


def test_the_state_dicts_file_is_gone_once_the_workers_loaded_it(fake_vllm, tiny_model_path):
    engine = fake_vllm(tiny_model_path)
    engine.update_weights(1, full_state(engine, 1))
    [loaded] = engine.llm.files
    assert loaded["path"].parent == engine._weights_dir and not loaded["path"].exists()
    engine.llm.fail_load = True
    with pytest.raises(RuntimeError, match="out of memory"):
        engine.update_weights(2, full_state(engine, 2))
    assert not list(engine._weights_dir.iterdir()) and engine.policy_version == 1
    engine.close()
    assert not engine._weights_dir.exists()


def test_a_state_dict_is_written_in_the_engines_dtype(fake_vllm, tiny_model_path):
    """float32 arrays (the ray and filesystem transports' numpy) go to a bf16 engine as bf16: half the bytes."""
    engine = fake_vllm(tiny_model_path, dtype=torch.bfloat16)
    engine.update_weights(1, {k: v.numpy() for k, v in full_state(engine, 1).items()})
    assert engine.llm.files[0]["dtypes"] == {torch.bfloat16} and engine.llm.weights == 1


@pytest.mark.parametrize("change, problem", [
    (lambda s: s.pop("lm_head.weight"), r"lacks 'lm_head.weight'"),
    (lambda s: s.update({"extra.weight": torch.zeros(1)}), r"has 'extra.weight', which the model has not"),
    (lambda s: s.update({"lm_head.weight": s["lm_head.weight"][:-1]}), r"'lm_head.weight' has shape"),
])
@pytest.mark.parametrize("as_file", [False, True])
def test_a_state_that_does_not_fit_is_refused_before_anything_loads(fake_vllm, tiny_model_path, tmp_path, change,
                                                                    problem, as_file):
    from safetensors.torch import save_file

    engine = fake_vllm(tiny_model_path)
    state = full_state(engine, 3)
    change(state)
    if as_file:
        save_file(state, str(tmp_path / "bad.safetensors"))
        state = tmp_path / "bad.safetensors"
    with pytest.raises(ValueError, match=problem) as raised:
        engine.update_weights(3, state)
    assert "\n" not in str(raised.value) and "keeps version 0" in str(raised.value)
    assert engine.llm.events == [] and engine.policy_version == 0


def test_the_vllm_extra_asks_for_a_vllm_that_runs_this_code():
    """``logprobs_mode`` needs vLLM >= 0.10.2, the ``rl`` extra's transformers >= 5 needs vLLM >= 0.19.1 (0.19.0
    still pinned transformers < 5)."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    [vllm] = [Requirement(r) for r in project["optional-dependencies"]["vllm"] if r.startswith("vllm")]
    assert not vllm.specifier.contains(Version("0.19.0")) and vllm.specifier.contains(Version("0.19.1"))


# -- a checkpoint whose generation_config.json sets its own sampling -------------------------------------


@pytest.fixture
def penalized_checkpoint(tiny_model_path, tmp_path):
    """The tiny checkpoint with a repetition penalty, top_k and an n-gram ban in its generation_config.json."""
    import json
    import shutil

    path = tmp_path / "tiny"
    shutil.copytree(tiny_model_path, path)
    config = json.loads((path / "generation_config.json").read_text())
    config.update(do_sample=True, repetition_penalty=1.3, top_k=5, no_repeat_ngram_size=2, min_new_tokens=8)
    (path / "generation_config.json").write_text(json.dumps(config))
    return path


def test_vllm_never_samples_with_the_checkpoints_generation_config(fake_vllm, penalized_checkpoint, hf_engine,
                                                                     caplog):
    """vLLM's ``generation_config="auto"`` (its default) would take the checkpoint's penalty and top_k as its
    sampling defaults; the engine asks for vLLM's own, sets every request's penalties off, and stops on the
    checkpoint's end-of-response ids, which vLLM then no longer reads from that file."""
    with caplog.at_level("WARNING", logger="mintgym.inference.checkpoint_sampling"):
        engine = fake_vllm(penalized_checkpoint)
    assert engine.llm.kwargs["generation_config"] == "vllm"
    assert "repetition_penalty=1.3" in caplog.text and "top_k=5" in caplog.text
    engine.generate([chat()])
    [params] = engine.llm.params
    assert params["repetition_penalty"] == 1.0 and params["top_k"] == 0 and params["min_tokens"] == 0
    assert params["presence_penalty"] == params["frequency_penalty"] == params["min_p"] == 0.0
    assert params["stop_token_ids"] == sorted(hf_engine.eos_token_ids)


def test_vllm_refuses_a_generation_config_argument(fake_vllm, tiny_model_path, monkeypatch):
    from mintgym.inference.vllm import VLLMEngine

    fake_vllm(tiny_model_path)  # installs the fake vllm module
    for name, value in (("generation_config", "auto"), ("override_generation_config", {"top_k": 5})):
        with pytest.raises(ValueError, match=f"vllm engine: {name} cannot be set"):
            VLLMEngine(tiny_model_path, **{name: value})
