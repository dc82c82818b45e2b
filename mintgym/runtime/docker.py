"""Layer 3: the ``docker`` provider -- each env server in its own container (images/ via the Docker SDK).

Two network modes:

* ``bridge`` (the default): the server binds 0.0.0.0:8000 inside the container and Docker publishes
  that port on 127.0.0.1 at a free host port. Off loopback inside the container, so a bearer token is
  always used (one is generated when none is given).
* ``host``: the container shares the host's network; the server binds 127.0.0.1 on a free port.
  For daemons without a bridge (MintGym's own test daemon, scripts/dockerd.sh).

Task packs added in this process (``--packs``, ``register_tasks``, task files) and entry-point packs of
packages other than MintGym are forwarded explicitly: their files are mounted read-only under
``/mintgym/packs/<n>`` (task files and the pages, images and JSON they read) or ``/mintgym/pypath/<n>``
(a module pack's top-level package, put on ``PYTHONPATH``), and ``$MINTGYM_PACKS`` names each pack by its
path or ``module:function`` inside the container (see :func:`pack_mounts`). A pack that cannot be forwarded
is named, with why, in the server's unknown-task error.

Every container carries labels ``mintgym.managed=true``, ``mintgym.run=<run id>``,
``mintgym.owner_pid=<pid>`` (plus the owner's host name and process start time), so :meth:`reap`
can remove what a crashed run left behind without touching anyone else's containers.

Example:
    >>> prov = DockerProvider(network="host")                  # doctest: +SKIP
    >>> handle = prov.start("pytool"); prov.wait_ready(handle)  # doctest: +SKIP
    >>> prov.stop(handle)                                       # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import socket
import threading
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import psutil

from mintgym.env import registration
from mintgym.errors import BackendError
from mintgym.runtime.providers import Provider, ServerHandle, wait_for_health

CONTAINER_PORT = 8000
#: Where forwarded task-file packs and module packs appear inside a container.
PACKS_MOUNT = "/mintgym/packs"
PYPATH_MOUNT = "/mintgym/pypath"
LABEL_MANAGED = "mintgym.managed"
LABEL_RUN = "mintgym.run"
LABEL_OWNER_PID = "mintgym.owner_pid"
LABEL_OWNER_HOST = "mintgym.owner_host"
LABEL_OWNER_START = "mintgym.owner_start"
LABEL_DOMAIN = "mintgym.domain"


@dataclass
class DockerConfig:
    """How the docker provider runs env server containers (``backend_options`` of ``mintgym.make``)."""

    #: Image to run; ``{domain}`` is replaced by the domain name.
    image: str = "mintgym/{domain}:latest"
    #: ``bridge``: publish the server's port on 127.0.0.1; ``host``: share the host network, bind 127.0.0.1.
    network: Literal["bridge", "host"] = "bridge"
    #: Host address a bridge-mode port is published on.
    publish_ip: str = "127.0.0.1"
    #: ``missing``: pull when the image is not present; ``always``; ``never`` (fail with a build hint).
    pull: Literal["missing", "always", "never"] = "missing"
    #: Docker daemon URL (``unix:///run/mintgym-docker.sock``); None: DOCKER_HOST or Docker's default.
    docker_host: str | None = None
    #: Groups this provider's containers under ``mintgym.run``; None: a fresh id per provider.
    run_id: str | None = None
    #: CPU limit (cores, fractional allowed) and memory limit (``"2g"``) per container; None: unlimited.
    cpus: float | None = None
    memory: str | None = None
    #: /dev/shm size (Chromium needs more than Docker's 64 MB default).
    shm_size: str = "1g"
    #: Extra environment variables for the container (MINTGYM_TOKEN is set by the provider).
    environment: dict[str, str] = field(default_factory=dict)
    #: Request timeout the server applies, seconds.
    request_timeout: float = 60.0
    #: Device paths to pass through (``/dev/kvm`` for the android image).
    devices: list[str] = field(default_factory=list)
    #: Host folders mounted read-only in the container: host path -> container path (task data, such as
    #: an OSWorld ``evaluation_examples`` folder named by ``environment={"MINTGYM_OSWORLD_ROOT": ...}``).
    volumes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> DockerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown docker backend option(s) {unknown}; known: {sorted(known)}")
        config = cls(**options)
        if config.network not in ("bridge", "host"):
            raise ValueError(f"docker network must be 'bridge' or 'host', not {config.network!r}")
        if config.pull not in ("missing", "always", "never"):
            raise ValueError(f"docker pull must be 'missing', 'always' or 'never', not {config.pull!r}")
        return config


def _owner_identity() -> dict[str, str]:
    me = psutil.Process()
    return {LABEL_OWNER_PID: str(me.pid), LABEL_OWNER_HOST: socket.gethostname(),
            LABEL_OWNER_START: f"{me.create_time():.2f}"}


def _owner_alive(labels: dict[str, str]) -> bool:
    """Whether the process that started a container still runs (a reused pid with another start time does not count)."""
    try:
        pid = int(labels.get(LABEL_OWNER_PID, ""))
    except ValueError:
        return False
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return False
    start = labels.get(LABEL_OWNER_START)
    return start is None or f"{proc.create_time():.2f}" == start


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class DockerProvider(Provider):
    """Runs one env server container per :meth:`start`; :meth:`stop` removes it."""

    name = "docker"

    def __init__(self, **options: Any):
        self.config = DockerConfig.from_options(options)
        self.run_id = self.config.run_id or uuid.uuid4().hex[:12]
        self._client = None
        self._lock = threading.Lock()
        atexit.register(self._cleanup_at_exit)

    # -- the Docker client ------------------------------------------------------------------------

    @property
    def client(self):
        """The Docker SDK client, connected on first use."""
        with self._lock:
            if self._client is None:
                self._client = connect(self.config.docker_host)
            return self._client

    # -- Provider ---------------------------------------------------------------------------------

    def start(self, domain: str, *, token: str | None = None, options: dict | None = None) -> ServerHandle:
        options = dict(options or {})
        image = options.pop("image", None) or self.config.image.format(domain=domain)
        host_options = options.pop("host_options", {}) or {}
        request_timeout = options.pop("request_timeout", self.config.request_timeout)
        if options:
            raise ValueError(f"unknown docker start option(s) {sorted(options)}; known: image, host_options, "
                             "request_timeout")
        self.ensure_image(image)
        cfg = self.config
        if cfg.network == "bridge" and not token:
            token = secrets.token_urlsafe(24)  # the server binds 0.0.0.0 in its container: a token is required
        pack_volumes, pack_env = pack_mounts(*registration.pack_forwards(entry_points_too=True))
        env = {**cfg.environment, **pack_env, "MINTGYM_DOMAIN": domain}
        if token:
            env["MINTGYM_TOKEN"] = token
        run_kwargs: dict[str, Any] = {}
        if cfg.network == "host":
            port = _free_port()
            env.update(MINTGYM_HOST="127.0.0.1", MINTGYM_PORT=str(port))
            run_kwargs["network_mode"] = "host"
        else:
            env.update(MINTGYM_HOST="0.0.0.0", MINTGYM_PORT=str(CONTAINER_PORT))
            run_kwargs["ports"] = {f"{CONTAINER_PORT}/tcp": (cfg.publish_ip, None)}
        if cfg.cpus is not None:
            run_kwargs["nano_cpus"] = int(cfg.cpus * 1e9)
        if cfg.memory is not None:
            run_kwargs["mem_limit"] = cfg.memory
        if cfg.devices:
            run_kwargs["devices"] = [f"{d}:{d}:rwm" for d in cfg.devices]
        volumes = {str(Path(host).resolve()): inside for host, inside in cfg.volumes.items()}
        volumes.update(pack_volumes)
        if volumes:
            run_kwargs["volumes"] = {host: {"bind": inside, "mode": "ro"} for host, inside in volumes.items()}
        labels = {LABEL_MANAGED: "true", LABEL_RUN: self.run_id, LABEL_DOMAIN: domain, **_owner_identity()}
        name = f"mintgym-{domain}-{self.run_id}-{uuid.uuid4().hex[:6]}"
        command = ["--request-timeout", str(request_timeout), "--host-options", json.dumps(host_options)]
        from docker.errors import DockerException

        try:
            container = self.client.containers.run(image, command=command, name=name, detach=True, environment=env,
                                                   labels=labels, shm_size=cfg.shm_size, **run_kwargs)
        except DockerException as err:
            raise BackendError(f"could not start a container from {image!r} for {domain!r}: {err}") from err
        try:
            if cfg.network == "host":
                base_url = f"http://127.0.0.1:{port}"
            else:
                base_url = f"http://{cfg.publish_ip}:{self._published_port(container)}"
        except BaseException:
            container.remove(force=True)
            raise
        return ServerHandle(base_url, domain, token, container.id, {"name": name, "image": image, "run": self.run_id})

    def wait_ready(self, handle: ServerHandle, timeout: float = 120.0) -> None:
        try:
            wait_for_health(handle, timeout, alive=lambda: self.alive(handle))
        except BackendError as err:
            raise BackendError(f"{err}\n--- container log ({handle.extra.get('name')}) ---\n"
                               f"{self.logs(handle)}") from None

    def alive(self, handle: ServerHandle) -> bool:
        from docker.errors import NotFound

        try:
            container = self.client.containers.get(handle.ident)
        except NotFound:
            return False
        return container.status in ("created", "running")

    def stop(self, handle: ServerHandle) -> None:
        from docker.errors import NotFound

        try:
            container = self.client.containers.get(handle.ident)
        except NotFound:
            return
        try:
            container.stop(timeout=10)
        except NotFound:
            return
        try:
            container.remove(force=True)
        except NotFound:
            pass

    # -- helpers ----------------------------------------------------------------------------------

    def logs(self, handle: ServerHandle, chars: int = 4000) -> str:
        """The tail of a container's output (empty once it is removed)."""
        from docker.errors import NotFound

        try:
            return self.client.containers.get(handle.ident).logs(tail=200).decode(errors="replace")[-chars:]
        except NotFound:
            return "(container gone)"

    def ensure_image(self, image: str) -> None:
        """Make sure ``image`` is present: pull it per ``config.pull``, or raise BackendError saying how to get it."""
        from docker.errors import DockerException, ImageNotFound
        from docker.utils import parse_repository_tag

        present = True
        try:
            self.client.images.get(image)
        except ImageNotFound:
            present = False
        if present and self.config.pull != "always":
            return
        hint = (f"build it with `images/build.sh {image.split('/')[-1].split(':')[0]}` "
                "(see images/README.md) or push it to a registry this daemon can reach")
        if self.config.pull == "never":
            raise BackendError(f"image {image!r} is not present and pulling is off (pull='never'): {hint}")
        repo, tag = parse_repository_tag(image)
        try:
            self.client.images.pull(repo, tag=tag or "latest")
        except DockerException as err:
            if present:  # pull='always' but the registry is unreachable: the local copy will do
                return
            raise BackendError(f"image {image!r} is not present and pulling it failed ({err}); {hint}") from err

    def _published_port(self, container) -> int:
        container.reload()
        bindings = (container.attrs.get("NetworkSettings", {}).get("Ports") or {}).get(f"{CONTAINER_PORT}/tcp")
        if not bindings:
            logs = container.logs(tail=50).decode(errors="replace")
            raise BackendError(f"container {container.name} published no port for {CONTAINER_PORT}/tcp "
                               f"(status {container.status}); log:\n{logs}")
        return int(bindings[0]["HostPort"])

    def stop_run(self) -> int:
        """Remove every container of this provider's run; returns how many."""
        return _remove(self.client, {"label": [f"{LABEL_MANAGED}=true", f"{LABEL_RUN}={self.run_id}"]})

    def _cleanup_at_exit(self) -> None:
        if self._client is not None:  # never connect just to clean up
            from docker.errors import DockerException

            try:
                self.stop_run()
            except DockerException:
                pass  # the daemon went first; reap() cleans up on the next run

    def reap(self) -> list[str]:
        """Remove MintGym containers whose owner process (on this host) is gone; returns their names."""
        return reap(self.client)


def pack_mounts(forwards: list[registration.PackForward],
                unforwarded: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(read-only mounts host path -> container path, environment) that give a container's env server the
    packs ``forwards`` (see :func:`mintgym.env.registration.pack_forwards`)."""
    volumes: dict[str, str] = {}
    packs: dict[str, str] = {}
    pythonpath: list[str] = []
    for n, forward in enumerate(forwards):
        if forward.is_task_file:
            root = os.path.commonpath([forward.ref if os.path.isdir(forward.ref) else os.path.dirname(forward.ref),
                                       *(os.path.dirname(p) for p in forward.paths)])
            inside = f"{PACKS_MOUNT}/{n}"
            volumes[root] = inside
            relative = os.path.relpath(forward.ref, root)
            packs[forward.pack] = inside if relative == "." else f"{inside}/{relative}"
            continue
        for path in forward.paths:
            volumes[path] = f"{PYPATH_MOUNT}/{n}/{os.path.basename(path)}"
        if forward.paths:
            pythonpath.append(f"{PYPATH_MOUNT}/{n}")
        packs[forward.pack] = forward.ref
    env: dict[str, str] = {}
    if packs:
        env[registration.PACKS_ENV] = json.dumps(packs)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    if unforwarded:
        env[registration.UNFORWARDED_ENV] = json.dumps(unforwarded)
    return volumes, env


def connect(docker_host: str | None = None):
    """A Docker SDK client for ``docker_host`` (or DOCKER_HOST / Docker's default), with a clear error if
    unreachable."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.DockerClient(base_url=docker_host) if docker_host else docker.from_env()
        client.ping()
    except DockerException as err:
        where = docker_host or os.environ.get("DOCKER_HOST") or "Docker's default socket"
        raise BackendError(f"cannot reach the Docker daemon at {where}: {err} "
                           "(start one, e.g. `scripts/dockerd.sh start`, and set DOCKER_HOST)") from err
    return client


def reap(client) -> list[str]:
    """Remove containers labelled ``mintgym.managed=true`` by a process of this host that no longer runs."""
    from docker.errors import NotFound

    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL_MANAGED}=true"}):
        labels = container.labels or {}
        if labels.get(LABEL_OWNER_HOST, host) != host or _owner_alive(labels):
            continue
        try:
            container.remove(force=True)
        except NotFound:
            continue
        removed.append(container.name)
    return removed


def _remove(client, filters: dict) -> int:
    from docker.errors import NotFound

    count = 0
    for container in client.containers.list(all=True, filters=filters):
        try:
            container.remove(force=True)
            count += 1
        except NotFound:
            pass
    return count
