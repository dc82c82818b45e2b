"""Per-session options of a desktop environment (the ``env_options`` of a session), typed and bounded.

The env server validates a session's options with :class:`DesktopOptions` before ``DesktopHost.create``
sees them, then applies the operator's caps (``mintgym serve desktop --max-option memory_mb=2048``); the
limits and caps a server applies are in its ``/v1/spec``. ``template`` (a host path) is not a client option.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mintgym.environments.desktop.sandbox import SessionLimits as Defaults


class DesktopOptions(BaseModel):
    """Options a client may pass when it creates a desktop session; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: Screen width and height of the session's X display, in pixels.
    width: int = Field(1280, ge=64, le=7680)
    height: int = Field(720, ge=64, le=4320)
    #: Seconds an X call (input, screenshot) may take before the display counts as dead.
    x_timeout: float = Field(10.0, gt=0, le=120)
    #: Give the session a way out to the internet (slirp4netns), never to the host's loopback; for tasks
    #: that open live websites. Off: the session's network is its own loopback alone.
    egress: bool = False
    #: Run the session's own AT-SPI bus so apps expose their accessibility tree (the ``a11y`` side
    #: channel and tasks that read the tree turn it on by themselves).
    accessibility: bool = False
    #: Memory of the whole session in MiB: its processes, its X server, shared memory and every file it
    #: wrote (they live on a tmpfs). Going over it ends the episode as the agent's failure.
    memory_mb: int = Field(Defaults.memory_mb, ge=128, le=262144)
    #: Processes and threads of the session together; a refused fork ends the episode as the agent's failure.
    processes: int = Field(Defaults.processes, ge=32, le=65536)
    #: CPU time the session may use per second, in cores.
    cpus: float = Field(Defaults.cpus, ge=0.05, le=256)
    #: Size of everything the session can write (home, /tmp, /var/tmp, /dev/shm) in MiB.
    disk_mb: int = Field(Defaults.disk_mb, ge=16, le=1048576)
