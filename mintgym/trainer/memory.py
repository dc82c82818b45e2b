"""Layer 6: what a training step holds in memory, and the switch that trades compute for activations.

:func:`use_activation_checkpointing` turns on the model's own activation checkpointing (``train.
activation_checkpointing``). :func:`estimate` is the memory model of one learner step on one device, term by
term (bytes); the peak is the larger of the backward's and the optimizer step's::

    weights      = P * m                 master weights (m = 4 for float32 masters, 2 for ``pure`` bfloat16)
    grads        = P * m                 one gradient per weight, in the master dtype
    adam         = 2 * P * m             Adam's exp_avg and exp_avg_sq
    casts        = P * c  (mixed only)   autocast's compute-dtype copies of the weights, saved for the backward
    activations  = n * S * L * a         without checkpointing
                 = n * S * L * H * c + S * a   with: each layer's input, plus one layer rebuilt in the backward
    logits       = S * V * c + R * V * 8 + n * R * V * 4   before: one sequence's logits at every position
                                         (prompt included), its response rows in float32 masked, and every
                                         sequence's log_softmax saved for the backward
                 = min(R, k) * V * (c + 12)   after: one chunk of k response positions (:class:`ResponseScorer`),
                                         its logits, float32 copy and log_softmax, rebuilt in the backward
    grad sums    = 2 * p_max * m         the autograd engine sums the contributions (one per sequence or chunk)
                                         to the largest gradient, the embedding's or the head's: two at once
    optimizer    = P * m                 Adam's step temporaries: foreach Adam (CUDA's default) makes one
                 = 2 * p_max * m         master-sized temporary; the per-parameter loop (CPU), two of the largest
    backward peak  = weights + grads + adam + casts + activations + logits + grad sums
    optimizer peak = weights + grads + adam + optimizer

``P`` parameters (``p_max`` the largest one), ``c`` the compute dtype's bytes, ``n`` the sequences whose graphs
are alive at once (one micro-batch: ``train.micro_batch``), ``S`` one sequence's length and ``R`` its response
length. A decoder layer saves, per token, ``a = c * (10 H + 2 H_kv + g I)`` bytes: the inputs and
outputs of its two RMSNorms (4 H), q and the o_proj input (2 H), the attention output and its float32 norm
upcasts (4 H), k and v (2 H_kv), and the MLP's gate, up, activation and product (g = 4, gated SiLU) or fc1 and
GELU outputs (g = 2). A vision block counts the same per patch (patches = 4 image tokens, spatial merge 2).
Sharded over ``gpus`` (FSDP2), weights, grads, Adam, casts and the optimizer's temporaries divide by ``gpus``;
activations, logits and gradient sums do not. ``benchmarks/trainer_memory.py`` checks the model against a
measured step (within 12%); docs/train.md ("Memory and sharding") gives its predictions for Qwen2.5-VL-3B and
-7B.

    >>> shape = Architecture(params=10**9, hidden=1024, layers=16, kv_hidden=256, intermediate=4096, vocab=1000)
    >>> round(estimate(shape, Step(prompt=900, response=100)).total / 2**30, 1)
    18.6
"""

from __future__ import annotations

from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field

#: ``train.activation_checkpointing`` None turns it on for models with at least this many parameters.
AUTO_CHECKPOINTING_PARAMS = 100_000_000


def use_activation_checkpointing(model: Any, setting: bool | None) -> bool:
    """Turn on ``model``'s activation checkpointing (non-reentrant) when ``setting`` says so (None: for a model of
    at least :data:`AUTO_CHECKPOINTING_PARAMS` parameters); returns whether it is on. Each decoder layer and
    vision block then keeps only its input for the backward and runs its forward again there."""
    on = setting if setting is not None else sum(p.numel() for p in model.parameters()) >= AUTO_CHECKPOINTING_PARAMS
    if on:
        if not getattr(model, "supports_gradient_checkpointing", False):
            raise ValueError(f"activation_checkpointing: {type(model).__name__} does not support it")
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return on


class Tower(BaseModel):
    """A stack of transformer layers, as the memory model sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hidden: int = Field(gt=0, description="Width of the residual stream (H).")
    layers: int = Field(gt=0, description="Layers (L).")
    kv_hidden: int = Field(gt=0, description="Width of k and of v (H_kv: kv heads x head size).")
    intermediate: int = Field(gt=0, description="MLP width (I).")
    gated: bool = Field(True, description="A gated (SwiGLU) MLP: g = 4 saved tensors of width I, else 2.")

    def per_token(self, dtype_bytes: int) -> int:
        """Bytes one layer saves for the backward per token (``a``)."""
        return dtype_bytes * (10 * self.hidden + 2 * self.kv_hidden + (4 if self.gated else 2) * self.intermediate)


class Architecture(Tower):
    """A VLM's sizes: the text decoder (this tower), its vocabulary and its vision tower."""

    params: int = Field(gt=0, description="All parameters (P), vision tower included.")
    largest: int = Field(0, ge=0, description="The largest parameter tensor (p_max; 0: the embedding, V x H).")
    vocab: int = Field(gt=0, description="Vocabulary size (V).")
    vision: Tower | None = Field(None, description="The vision tower (None: text only).")

    @classmethod
    def of(cls, config: Any, params: int | None = None) -> Architecture:
        """The sizes of a Qwen2-VL or Qwen2.5-VL ``config``; ``params`` counted on the meta device if not given."""
        text, vis = config.get_text_config(), getattr(config, "vision_config", None)
        vision = None
        if vis is not None:
            width = getattr(vis, "embed_dim", None) or vis.hidden_size  # Qwen2-VL: embed_dim; 2.5: hidden_size
            inter = getattr(vis, "intermediate_size", None) or int(width * vis.mlp_ratio)
            vision = Tower(hidden=width, layers=vis.depth, kv_hidden=width, intermediate=inter,
                           gated=getattr(vis, "intermediate_size", None) is not None)  # 2.5-VL: SwiGLU blocks
        heads = text.num_attention_heads
        return cls(params=params or count_params(config), hidden=text.hidden_size, layers=text.num_hidden_layers,
                   kv_hidden=text.num_key_value_heads * text.hidden_size // heads,
                   intermediate=text.intermediate_size, vocab=text.vocab_size, vision=vision)


def count_params(config: Any) -> int:
    """Parameters of the model ``config`` describes, built on the meta device (no memory, no download)."""
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return sum(p.numel() for p in model.parameters())


class Step(BaseModel):
    """What one micro-batch of a learner step runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: int = Field(gt=0, description="Prompt tokens per sequence, image tokens included.")
    response: int = Field(gt=0, description="Response tokens per sequence (R).")
    image_tokens: int = Field(0, ge=0, description="Image tokens per sequence (each from 4 vision patches).")
    sequences: int = Field(1, gt=0, description="Sequences whose graphs are alive at once (``train.micro_batch``).")
    compute_bytes: int = Field(2, description="Bytes of the compute dtype (c): 2 bfloat16, 4 float32.")
    master_bytes: int = Field(4, description="Bytes of the master weights (m): 4 with ``precision: mixed``.")
    checkpointing: bool = Field(True, description="Activation checkpointing on.")
    chunked: bool = Field(True, description="Response-only logits, ``chunk`` positions at a time.")
    chunk: int = Field(1024, gt=0, description="Response positions per logits chunk (k).")
    gpus: int = Field(1, gt=0, description="Devices the weights, grads and Adam state are sharded over.")
    foreach: bool = Field(True, description="Adam's foreach implementation (CUDA's default; the CPU loops over "
                                            "the parameters).")


class Estimate(BaseModel):
    """Predicted peak bytes of one learner step, by term."""

    weights: int
    grads: int
    adam: int
    casts: int
    activations: int
    logits: int
    grad_sums: int
    optimizer: int

    @property
    def backward_peak(self) -> int:
        return (self.weights + self.grads + self.adam + self.casts + self.activations + self.logits
                + self.grad_sums)

    @property
    def optimizer_peak(self) -> int:
        return self.weights + self.grads + self.adam + self.optimizer

    @property
    def total(self) -> int:
        return max(self.backward_peak, self.optimizer_peak)


def _activations(tower: Tower, tokens: int, step: Step) -> int:
    """Bytes saved for the backward by a micro-batch of sequences of ``tokens`` tokens each."""
    per_layer = tower.per_token(step.compute_bytes)
    if step.checkpointing:
        return step.sequences * tokens * tower.layers * tower.hidden * step.compute_bytes + tokens * per_layer
    return step.sequences * tokens * tower.layers * per_layer


def estimate(arch: Architecture, step: Step) -> Estimate:
    """The memory model (module docstring) for ``arch`` running ``step``."""
    p, m, c = arch.params, step.master_bytes, step.compute_bytes
    length = step.prompt + step.response
    acts = _activations(arch, length, step)
    if arch.vision is not None and step.image_tokens:
        acts += _activations(arch.vision, 4 * step.image_tokens, step)
    r, v = step.response, arch.vocab
    logits = (min(r, step.chunk) * v * (c + 12) if step.chunked
              else length * v * c + r * v * 8 + step.sequences * r * v * 4)
    largest = arch.largest or v * arch.hidden
    temporaries = p * m if step.foreach else 2 * largest * m
    return Estimate(weights=p * m // step.gpus, grads=p * m // step.gpus, adam=2 * p * m // step.gpus,
                    casts=p * c // step.gpus if c < m else 0, activations=acts,
                    logits=logits, grad_sums=2 * largest * m, optimizer=temporaries // step.gpus)


#: Qwen2.5-VL-3B-Instruct and -7B-Instruct, the sizes of their Hugging Face ``config.json``
#: (huggingface.co/Qwen/Qwen2.5-VL-3B-Instruct and .../Qwen2.5-VL-7B-Instruct, ``config.json``).
QWEN25_VL: dict[str, dict[str, Any]] = {
    "Qwen2.5-VL-3B": {"hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
                      "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936,
                      "tie_word_embeddings": True, "vision_out": 2048},
    "Qwen2.5-VL-7B": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                      "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
                      "tie_word_embeddings": False, "vision_out": 3584},
}


def qwen25_vl_config(name: str) -> Any:
    """The transformers config of one of :data:`QWEN25_VL` (vision tower: depth 32, width 1280, MLP 3420)."""
    from transformers import Qwen2_5_VLConfig

    if name not in QWEN25_VL:
        raise ValueError(f"unknown model {name!r}: expected one of {', '.join(QWEN25_VL)}")
    sizes = dict(QWEN25_VL[name])
    tie, out = sizes.pop("tie_word_embeddings"), sizes.pop("vision_out")
    return Qwen2_5_VLConfig(text_config=sizes, tie_word_embeddings=tie,
                            vision_config={"depth": 32, "hidden_size": 1280, "intermediate_size": 3420,
                                           "num_heads": 16, "out_hidden_size": out})
