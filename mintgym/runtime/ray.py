"""Layer 3: the ``ray`` provider -- env servers as Ray actors, placed across a cluster.

Each :meth:`RayProvider.start` creates one actor, which binds a socket on its node, starts the env
server (``python -m mintgym.server``) as a child process serving on that socket, and reports the URL.
The child is told to die with the actor (``--parent-pid``), so ``ray.kill`` or a lost node leaves no
orphan server. Resources per session (``num_cpus``, custom resources such as ``{"browser": 1}``) let
Ray's scheduler spread servers over the nodes that can hold them; a ``placement_group`` start option puts
the server in that Ray placement group instead (on the node of the group's first bundle). The server's
health is polled by its actor, on the server's own node, so the caller need not reach the server's
address (a loopback one on another node).

Task packs added in this process (``--packs``, ``register_tasks``, task files) and entry-point packs of
packages other than MintGym travel with the actor: :func:`pack_bundles` reads their files (task files with
the pages, images and JSON they read; a module pack's package source) into the actor's arguments, and the
actor writes them to a private folder on its node and names them to the server in ``$MINTGYM_PACKS`` (and
``PYTHONPATH``), so a node that never saw the files serves the tasks. A pack that cannot be forwarded (a
lambda, a function in ``__main__``, more than :data:`MAX_BUNDLE_BYTES` of files) is named, with why, in the
server's unknown-task error.

Works with a local ``ray.init()`` and with a cluster (``address="auto"`` on a cluster node, or
``ray://head:10001`` through Ray Client). Off loopback the server requires a bearer token; one is
generated per server when none is given.

Example:
    >>> prov = RayProvider(num_cpus=1, resources={"browser": 1})  # doctest: +SKIP
    >>> handle = prov.start("web"); prov.wait_ready(handle)        # doctest: +SKIP
    >>> prov.stop(handle)                                           # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from typing import Any

from mintgym.env import registration
from mintgym.errors import BackendError, first_line
from mintgym.runtime.providers import Provider, ServerHandle, wait_for_health

NAMESPACE = "mintgym"
#: The most bytes of pack files one actor carries (task files, pages, a module pack's source).
MAX_BUNDLE_BYTES = 64 * 1024 * 1024


def pack_bundles(forwards: list[registration.PackForward],
                 unforwarded: dict[str, str]) -> tuple[list[dict], dict[str, str]]:
    """Each forwardable pack as ``{"pack", "ref", "files": {relative path: bytes}, "module": bool}`` (a task
    file's ref relative to its files' folder), plus the packs that cannot be carried -> why."""
    bundles: list[dict] = []
    unforwarded = dict(unforwarded)
    for forward in forwards:
        if forward.is_task_file:
            anchor = forward.ref if os.path.isdir(forward.ref) else os.path.dirname(forward.ref)
            root = os.path.commonpath([anchor, *(os.path.dirname(p) for p in forward.paths)])
            files = {os.path.relpath(p, root): p for p in forward.paths}
            ref = os.path.relpath(forward.ref, root)
        else:
            files = {}
            for path in forward.paths:
                if os.path.isfile(path):
                    files[os.path.basename(path)] = path
                    continue
                for folder, dirs, names in os.walk(path):
                    dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
                    for name in names:
                        if not name.endswith((".pyc", ".pyo")):
                            full = os.path.join(folder, name)
                            files[os.path.relpath(full, os.path.dirname(path))] = full
            ref = forward.ref
        size = sum(os.path.getsize(p) for p in files.values())
        if size > MAX_BUNDLE_BYTES:
            unforwarded[forward.pack] = (f"its files are {size / 2**20:.0f} MiB, more than a Ray actor carries "
                                         f"({MAX_BUNDLE_BYTES / 2**20:.0f} MiB); install the pack on the nodes")
            continue
        contents = {}
        for relative, path in files.items():
            with open(path, "rb") as f:
                contents[relative] = f.read()
        bundles.append({"pack": forward.pack, "ref": ref, "files": contents, "module": not forward.is_task_file})
    return bundles, unforwarded


def unpack_bundles(bundles: list[dict], unforwarded: dict[str, str], folder: str) -> dict[str, str]:
    """Write ``bundles`` under ``folder`` and return the server's environment that names them."""
    packs: dict[str, str] = {}
    pythonpath: list[str] = []
    for n, bundle in enumerate(bundles):
        root = os.path.join(folder, str(n))
        for relative, data in bundle["files"].items():
            path = os.path.normpath(os.path.join(root, relative))
            if os.path.commonpath([path, root]) != root:
                raise ValueError(f"pack {bundle['pack']!r}: file {relative!r} lies outside its folder")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        if bundle["module"]:
            pythonpath.append(root)
            packs[bundle["pack"]] = bundle["ref"]
        else:
            packs[bundle["pack"]] = os.path.normpath(os.path.join(root, bundle["ref"]))
    env: dict[str, str] = {}
    if packs:
        env[registration.PACKS_ENV] = json.dumps(packs)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath
                                            + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    if unforwarded:
        env[registration.UNFORWARDED_ENV] = json.dumps(unforwarded)
    return env


class EnvServerActor:
    """Runs one env server process on the actor's node (wrapped by ``ray.remote`` in :class:`RayProvider`)."""

    def __init__(self, domain: str, bind: str, token: str | None, request_timeout: float,
                 host_options: dict, python: str | None = None, packs: tuple[list, dict] = ([], {})):
        import ray

        self.domain, self.token = domain, token
        self.packs_dir = tempfile.mkdtemp(prefix="mintgym-ray-packs-")
        pack_env = unpack_bundles(packs[0], packs[1], self.packs_dir)

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((bind, 0))
        listener.listen(1024)
        self.port = listener.getsockname()[1]
        self.host = ray.util.get_node_ip_address() if bind in ("0.0.0.0", "") else bind
        fd, self.log = tempfile.mkstemp(prefix=f"mintgym-ray-{domain}-{self.port}-", suffix=".log")
        os.close(fd)
        cmd = [python or sys.executable, "-m", "mintgym.server", domain, "--fd", str(listener.fileno()),
               "--parent-pid", str(os.getpid()), "--request-timeout", str(request_timeout),
               "--host-options", json.dumps(host_options)]
        env = dict(os.environ)
        for name in (registration.PACKS_ENV, registration.UNFORWARDED_ENV):
            env.pop(name, None)  # only the packs the driver sent
        env.update(pack_env)
        if token:
            env["MINTGYM_TOKEN"] = token
        with open(self.log, "wb") as out:
            try:
                self.proc = subprocess.Popen(cmd, pass_fds=[listener.fileno()], stdout=out, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True, env=env)
            finally:
                listener.close()

    def info(self) -> dict:
        """Where the server listens, and on which node and process."""
        import ray

        return {"url": f"http://{self.host}:{self.port}", "pid": self.proc.pid,
                "node_id": ray.get_runtime_context().get_node_id(), "log": self.log}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout: float) -> str | None:
        """Poll the server's ``/v1/health`` from its own node; None once it answers, else why not."""
        handle = ServerHandle(f"http://{self.host}:{self.port}", self.domain, self.token, str(self.proc.pid))
        try:
            wait_for_health(handle, timeout, alive=self.alive)
        except BackendError as err:
            return str(err)
        return None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-chars:]
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> int | None:
        """End the server's process group; returns its exit code."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:  # whatever is left of the group (browsers, displays) goes too
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        code = self.proc.wait()
        try:
            os.unlink(self.log)
        except OSError:
            pass
        shutil.rmtree(self.packs_dir, ignore_errors=True)
        return code


class RayProvider(Provider):
    """Starts env servers as Ray actors.

    Args:
        address: Ray cluster to join when Ray is not initialized yet (None: a local Ray; ``"auto"``;
            ``"ray://head:10001"``). An already initialized Ray is used as it is.
        num_cpus: CPUs each server reserves on its node.
        resources: Custom resources each server reserves (``{"browser": 1}``).
        memory: Bytes of memory each server reserves (Ray's logical accounting), or None.
        bind: Address the server binds on its node: ``0.0.0.0`` (reachable from other nodes; a token
            is then required and generated if not given) or ``127.0.0.1`` (same-node clients only).
        scheduling: Ray scheduling strategy for the actors (``"SPREAD"`` or ``"DEFAULT"``).
        request_timeout: Request timeout the server applies, seconds.
        schedule_timeout: Seconds to wait for Ray to place and start the actor (a cluster without
            free resources would otherwise wait forever).
        python: Python executable on the nodes (default: the actor's own).
        init_kwargs: Extra ``ray.init`` arguments used when this provider initializes Ray.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: float = 1.0, resources: dict[str, float] | None = None,
                 memory: int | None = None, bind: str = "0.0.0.0", scheduling: str = "SPREAD",
                 request_timeout: float = 60.0, schedule_timeout: float = 300.0, python: str | None = None,
                 init_kwargs: dict | None = None):
        if num_cpus < 0:
            raise ValueError(f"num_cpus must be >= 0, not {num_cpus}")
        if scheduling not in ("SPREAD", "DEFAULT"):
            raise ValueError(f"scheduling must be 'SPREAD' or 'DEFAULT', not {scheduling!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.resources = dict(resources or {})
        self.memory = memory
        self.bind = bind
        self.scheduling = scheduling
        self.request_timeout = request_timeout
        self.schedule_timeout = schedule_timeout
        self.python = python
        self.init_kwargs = dict(init_kwargs or {})
        self._actors: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._remote_cls = None

    def _ray(self):
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, namespace=NAMESPACE, **self.init_kwargs)
        if self._remote_cls is None:
            self._remote_cls = ray.remote(EnvServerActor)
        return ray

    def start(self, domain: str, *, token: str | None = None, options: dict | None = None) -> ServerHandle:
        options = dict(options or {})
        host_options = options.pop("host_options", {}) or {}
        num_cpus = options.pop("num_cpus", self.num_cpus)
        resources = {**self.resources, **options.pop("resources", {})}
        request_timeout = options.pop("request_timeout", self.request_timeout)
        placement_group = options.pop("placement_group", None)
        if options:
            raise ValueError(f"unknown ray start option(s) {sorted(options)}; "
                             "known: host_options, num_cpus, resources, request_timeout, placement_group")
        ray = self._ray()
        from ray.exceptions import GetTimeoutError, RayError

        from mintgym.server.serve import is_loopback

        if not token and not is_loopback(self.bind):
            token = secrets.token_urlsafe(24)
        name = f"mintgym-{domain}-{uuid.uuid4().hex[:10]}"
        opts: dict[str, Any] = {"name": name, "num_cpus": num_cpus, "max_restarts": 0,
                                "scheduling_strategy": self.scheduling}
        if placement_group is not None:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(placement_group,
                                                                           placement_group_bundle_index=0)
        if resources:
            opts["resources"] = resources
        if self.memory is not None:
            opts["memory"] = self.memory
        packs = pack_bundles(*registration.pack_forwards(entry_points_too=True))
        actor = self._remote_cls.options(**opts).remote(domain, self.bind, token, request_timeout, host_options,
                                                         self.python, packs)
        try:
            info = ray.get(actor.info.remote(), timeout=self.schedule_timeout)
        except GetTimeoutError:
            ray.kill(actor)
            raise BackendError(f"Ray could not place a {domain!r} env server within {self.schedule_timeout:.0f}s: "
                               f"no node has num_cpus={num_cpus} and resources={resources} free "
                               f"(cluster has {ray.available_resources()})") from None
        except RayError as err:
            ray.kill(actor)
            raise BackendError(f"the Ray actor for a {domain!r} env server failed to start: {err}") from err
        with self._lock:
            self._actors[name] = actor
        return ServerHandle(info["url"], domain, token, name,
                            {"node_id": info["node_id"], "pid": info["pid"], "log": info["log"]})

    def wait_ready(self, handle: ServerHandle, timeout: float = 120.0) -> None:
        """Block until the server's actor sees it answer ``/v1/health`` on its node, or raise BackendError
        with the last failure and the server's log."""
        actor = self._actors.get(handle.ident)
        if actor is None:
            raise BackendError(f"env server for {handle.domain!r} ({handle.ident}): its actor is gone")
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        where = f"env server for {handle.domain!r} at {handle.base_url}"
        try:
            problem = ray.get(actor.wait_ready.remote(timeout), timeout=timeout + 30)
        except GetTimeoutError:
            problem = f"{where}: its actor did not answer within {timeout + 30:.0f}s"
        except RayActorError as err:
            problem = f"{where}: its actor died ({first_line(err)})"
        if problem is not None:
            raise BackendError(f"{problem}\n--- server log ({handle.ident}) ---\n{self.log_tail(handle)}")

    def alive(self, handle: ServerHandle) -> bool:
        actor = self._actors.get(handle.ident)
        if actor is None:
            return False
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        try:
            return bool(ray.get(actor.alive.remote(), timeout=30))
        except RayActorError:
            return False
        except GetTimeoutError:
            return True  # busy, not known to be gone

    def log_tail(self, handle: ServerHandle) -> str:
        actor = self._actors.get(handle.ident)
        if actor is None:
            return "(actor gone)"
        import ray
        from ray.exceptions import RayError

        try:
            return ray.get(actor.log_tail.remote(), timeout=10)
        except RayError as err:
            return f"(log unavailable: {err})"

    def stop(self, handle: ServerHandle) -> None:
        with self._lock:
            actor = self._actors.pop(handle.ident, None)
        if actor is None:
            return
        import ray
        from ray.exceptions import RayError

        try:
            ray.get(actor.stop.remote(), timeout=20)
        except RayError:
            pass  # the actor is gone or stuck: killing it below ends the server too (--parent-pid)
        ray.kill(actor, no_restart=True)

    def stop_all(self) -> None:
        for name in list(self._actors):
            self.stop(ServerHandle("", "", ident=name))
