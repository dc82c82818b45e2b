"""Layer 5: weight transport from the trainer to inference engines (send/receive a versioned state dict).

``FilesystemBroadcast`` is the reference implementation and test double; ``RayObjectStoreBroadcast``
puts each state dict into Ray's object store once and hands workers a reference; the ``vllm`` transport
writes safetensors files each vLLM engine loads in place (``safetensors_files``).
"""

from mintgym.weights.base import WeightBroadcast, WeightSyncFailed, WeightSyncTimeout
from mintgym.weights.filesystem import FilesystemBroadcast

__all__ = ["FilesystemBroadcast", "WeightBroadcast", "WeightSyncFailed", "WeightSyncTimeout"]
