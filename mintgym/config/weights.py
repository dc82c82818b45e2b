"""Layer 1: how a run's published weights reach its engines, a typed union keyed on ``weights.transport``.

    >>> WeightsSpec.validate_python({}).transport
    'ray'
    >>> WeightsSpec.validate_python({"transport": "filesystem", "keep": 3}).keep
    3
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, TypeAdapter

from mintgym.config.base import TaggedSection, tagged_union


class RayWeights(TaggedSection):
    transport: Literal["ray"] = Field("ray", description="Ray's object store, one copy per node.")


class _FolderWeights(TaggedSection):
    folder: str | None = Field(None, min_length=1, description="The shared folder every node sees (None: "
                               "``<out>/weights``).")
    keep: Annotated[StrictInt, Field(ge=1)] = Field(2, description="Weight versions kept on disk.")


class FilesystemWeights(_FolderWeights):
    transport: Literal["filesystem"] = Field(description="``.npz`` files in ``folder``, which each worker loads.")


class VLLMWeights(_FolderWeights):
    transport: Literal["vllm"] = Field(description="safetensors files in ``folder`` that each vLLM worker loads "
                                       "in place (vLLM's own update path; needs ``engine.name: vllm``).")


#: ``weights:`` of a run config, keyed on ``transport`` (``ray`` when not given).
WeightsConfig = tagged_union("transport", "ray", RayWeights, FilesystemWeights, VLLMWeights)
WeightsSpec: TypeAdapter[Any] = TypeAdapter(WeightsConfig)
