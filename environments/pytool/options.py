"""Per-session options of a pytool environment: every option typed and bounded.

The env server validates a session's ``env_options`` with :class:`PytoolOptions` (a value out of range
gets a 422 naming the option and its range) and then applies the operator's caps
(``mintgym serve pytool --max-option memory_mb=2048``); the host validates its own defaults the same way.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PytoolOptions(BaseModel):
    """Options a client may pass when it creates a pytool session; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: CPU seconds one cell may use (every process of the cell together).
    cpu_seconds: float = Field(10.0, gt=0, le=600)
    #: Wall-clock seconds one cell may run.
    wall_seconds: float = Field(30.0, gt=0, le=3600)
    #: Memory of the whole sandbox in MiB (anonymous, shared, memfd and the working directory's files).
    memory_mb: int = Field(1024, ge=64, le=65536)
    #: Size of the working directory in MiB (a size-limited tmpfs).
    disk_mb: int = Field(256, ge=1, le=65536)
    #: Largest single file in MiB.
    file_mb: int = Field(64, ge=1, le=65536)
    #: Open files per process.
    open_files: int = Field(256, ge=16, le=65536)
    #: Processes and threads of the sandbox.
    processes: int = Field(64, ge=1, le=4096)
    #: Characters of output one cell returns (the rest is counted, not kept).
    output_chars: int = Field(20_000, ge=100, le=10_000_000)
    #: Extra seconds the server waits past ``wall_seconds`` before it kills a stuck worker.
    grace_seconds: float = Field(5.0, ge=0, le=120)
    #: Seconds to wait for the worker's start-up handshake.
    start_seconds: float = Field(30.0, gt=0, le=600)
    #: Screenshot width and height in pixels.
    width: int = Field(1024, ge=64, le=4096)
    height: int = Field(768, ge=64, le=4096)
