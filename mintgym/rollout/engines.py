"""Layer 4: the one place an agent's inference engine is opened, for every entry point (``mintgym eval`` and
``rollout``, a run's rollout workers and its final evaluation).

:func:`open_engine` builds the engine registered under a name (:func:`mintgym.inference.make_engine`) and,
for an engine in this process (``hf``), wraps it so that concurrent agents' requests are batched into shared
``generate`` calls (:class:`mintgym.agents.batched.BatchedEngine`). A ``vllm`` engine batches its concurrent
calls itself; an ``openai`` one sends them to a server that does.
"""

from __future__ import annotations

import importlib
from typing import Any

from mintgym.inference import InferenceEngine, make_engine


def open_engine(name: str, *, batch: int = 1, **config: Any) -> tuple[InferenceEngine, InferenceEngine]:
    """The ``name`` engine built with ``config``, and what agents sample from: with ``batch`` > 1 and an
    in-process ``hf`` engine, a wrapper that gathers up to ``batch`` concurrent requests per ``generate`` call
    (closing it closes the engine), otherwise the engine itself. Weights are loaded into the first."""
    engine = make_engine(name, **config)
    if name != "hf" or batch <= 1:
        return engine, engine
    batched = importlib.import_module("mintgym.agents.batched")  # by name: see mintgym.rollout.agents
    return engine, batched.BatchedEngine(engine, max_batch_size=batch)
