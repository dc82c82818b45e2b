"""The docker provider against a real daemon: MintGym's own dockerd (scripts/dockerd.sh), images built
from images/ on a base made locally with debootstrap, host networking (the daemon has no bridge).

The first run builds the base rootfs and the wheelhouse (about a minute); later runs reuse both and
docker's layer cache, so only the layers holding the mintgym wheel are rebuilt when the source changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
SOCK = os.environ.get("MINTGYM_DOCKER_SOCK", "/run/mintgym-docker.sock")
DOCKER_HOST = f"unix://{SOCK}"
BASE = "mintgym/base-local:bookworm"
TAG = "mintgym-test/{name}:latest"


def _script(*args: str, timeout: float = 900) -> str:
    env = {**os.environ, "DOCKER_HOST": DOCKER_HOST, "MINTGYM_DOCKER_SOCK": SOCK}
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    return proc.stdout


@pytest.fixture(scope="session")
def docker_images():
    """Start the daemon, make the base image, build the base and pytool images; yields their tags."""
    if os.geteuid() != 0:
        pytest.skip("the docker tests start their own dockerd, which needs root")
    if shutil.which("dockerd") is None or shutil.which("docker") is None:
        pytest.skip("docker.io (dockerd and the docker CLI) is not installed: apt-get install -y docker.io")
    _script("scripts/dockerd.sh", "start", timeout=120)
    _script("scripts/make_base_image.sh")
    tags = {}
    for name in ("base", "pytool"):
        tags[name] = TAG.format(name=name)
        _script("images/build.sh", name, "--base", BASE, "--tag", tags[name])
    return tags


@pytest.fixture
def client(docker_images):
    from mintgym.runtime.docker import connect

    c = connect(DOCKER_HOST)
    yield c
    c.close()


@pytest.fixture
def provider(docker_images):
    from mintgym.runtime.docker import DockerProvider

    prov = DockerProvider(docker_host=DOCKER_HOST, network="host", pull="never",
                          image=TAG.replace("{name}", "{domain}"))
    yield prov
    prov.stop_run()


def test_images_run_as_non_root_with_a_healthcheck(client, docker_images):
    for tag in docker_images.values():
        config = client.images.get(tag).attrs["Config"]
        assert config["User"] == "10001:10001"
        assert config["Healthcheck"]["Test"][-1].endswith("healthcheck.py")
        assert "8000/tcp" in config["ExposedPorts"]


def test_pytool_server_in_a_container(provider, client):
    handle = provider.start("pytool")
    try:
        provider.wait_ready(handle, timeout=120)
        assert handle.base_url.startswith("http://127.0.0.1:")
        health = httpx.get(f"{handle.base_url}/v1/health", trust_env=False).json()
        assert health["status"] == "ok" and health["domain"] == "pytool"
        container = client.containers.get(handle.ident)
        assert container.labels["mintgym.managed"] == "true"
        assert container.labels["mintgym.run"] == provider.run_id
        assert container.labels["mintgym.owner_pid"] == str(os.getpid())
        # Docker's own HEALTHCHECK (the image's healthcheck.py) comes to the same verdict.
        deadline = time.monotonic() + 90
        while (status := client.containers.get(handle.ident).attrs["State"]["Health"]["Status"]) == "starting":
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        assert status == "healthy"
    finally:
        provider.stop(handle)
    assert not provider.alive(handle)
    assert not client.containers.list(all=True, filters={"id": handle.ident})
    provider.stop(handle)  # a second stop is harmless


def test_token_guards_the_api(provider):
    handle = provider.start("null", token="s3cret", options={"image": TAG.format(name="base")})
    try:
        provider.wait_ready(handle, timeout=120)
        assert httpx.get(f"{handle.base_url}/v1/spec", trust_env=False).status_code == 401
        ok = httpx.get(f"{handle.base_url}/v1/spec", headers={"Authorization": "Bearer s3cret"}, trust_env=False)
        assert ok.status_code == 200
    finally:
        provider.stop(handle)


def test_episode_through_make(docker_images):
    """A real episode (oracle actions) against the null environment served from the base image."""
    from mintgym.runtime.make import make

    env = make("null/echo", backend="docker", backend_options={
        "docker_host": DOCKER_HOST, "network": "host", "pull": "never", "image": docker_images["base"]})
    try:
        _run_oracle_episode(env)
    finally:
        env.close()


def test_pytool_episode_through_make(docker_images):
    """A real pytool episode in its container, once the pytool domain registers tasks."""
    from mintgym.env import registration
    from mintgym.errors import RegistrationError
    from mintgym.runtime.make import make

    try:
        task_ids = [t.id for t in registration.tasks() if t.domain == "pytool"]
    except (RegistrationError, ImportError) as err:
        pytest.skip(f"the pytool domain does not load yet: {err}")
    if not task_ids:
        pytest.skip("the pytool domain registers no tasks yet")
    env = make(task_ids[0], backend="docker", backend_options={
        "docker_host": DOCKER_HOST, "network": "host", "pull": "never", "image": docker_images["pytool"]})
    try:
        _run_oracle_episode(env)
    finally:
        env.close()


def _run_oracle_episode(env) -> None:
    obs, _info = env.reset(seed=0)
    assert obs["screenshot"].ndim == 3
    _run_oracle_episode_from_reset(env)


def test_missing_image_says_how_to_build_it(provider):
    from mintgym.errors import BackendError

    with pytest.raises(BackendError, match="images/build.sh"):
        provider.start("pytool", options={"image": "mintgym-test/not-built:nope"})


def test_unreachable_registry_is_a_clear_error(docker_images):
    from mintgym.errors import BackendError
    from mintgym.runtime.docker import DockerProvider

    # A registry on a closed loopback port: the pull fails at once, without leaving this machine.
    prov = DockerProvider(docker_host=DOCKER_HOST, network="host", pull="missing",
                          image="127.0.0.1:9/mintgym/{domain}:latest")
    with pytest.raises(BackendError, match="pulling it failed"):
        prov.start("pytool")


def test_unknown_option_is_rejected():
    from mintgym.runtime.docker import DockerProvider

    with pytest.raises(ValueError, match="unknown docker backend option"):
        DockerProvider(netwrok="host")
    with pytest.raises(ValueError, match="network"):
        DockerProvider(network="overlay")


def test_reap_removes_containers_of_dead_owners(client):
    import psutil
    from docker.errors import NotFound

    from mintgym.runtime.docker import reap

    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not psutil.pid_exists(dead.pid)
    me = psutil.Process()
    common = {"mintgym.managed": "true", "mintgym.run": "reap-test", "mintgym.owner_host": os.uname().nodename}
    labels = {
        "orphan": {**common, "mintgym.owner_pid": str(dead.pid)},
        "live": {**common, "mintgym.owner_pid": str(me.pid), "mintgym.owner_start": f"{me.create_time():.2f}"},
        # our pid, but another start time: a reused pid, so its owner is gone
        "reused": {**common, "mintgym.owner_pid": str(me.pid), "mintgym.owner_start": "1.00"},
    }
    containers = {kind: client.containers.run(BASE, ["sleep", "300"], detach=True, network_mode="none", labels=lab,
                                              name=f"mintgym-reap-test-{kind}-{os.getpid()}")
                  for kind, lab in labels.items()}
    try:
        removed = reap(client)
        assert containers["orphan"].name in removed and containers["reused"].name in removed
        assert containers["live"].name not in removed
        left = {c.name for c in client.containers.list(all=True, filters={"label": "mintgym.run=reap-test"})}
        assert left == {containers["live"].name}
    finally:
        for c in containers.values():
            try:
                c.remove(force=True)
            except NotFound:  # reaped
                pass


@pytest.mark.slow
def test_web_episodes_in_the_web_image(docker_images):
    """The web image (Chromium from Debian's mirror, so `--network host` for apt): MiniWoB episodes solved
    in a container. Slow (the Chromium layer downloads ~150 MB on a fresh daemon): `pytest -m slow`."""
    from mintgym.runtime.make import make

    tag = TAG.format(name="web")
    _script("images/build.sh", "web", "--base", BASE, "--tag", tag, "--network", "host", timeout=1800)
    env = make("miniwob/click-test", backend="docker", encoding="raw", backend_options={
        "docker_host": DOCKER_HOST, "network": "host", "pull": "never", "image": tag})
    try:
        for seed in (0, 1):
            env.reset(seed=seed)
            _run_oracle_episode_from_reset(env)
    finally:
        env.close()


@pytest.mark.slow
def test_desktop_episodes_in_the_desktop_image(docker_images):
    """The desktop image (Xvfb, openbox and the desktop apps from Debian's mirror): a desktop task solved by
    its oracle through the docker backend. The server runs as user 10001 there, so sessions are process
    groups of that user and the container is the boundary. Slow (about 1 GB of apps on a fresh daemon)."""
    from mintgym.runtime.make import make

    tag = TAG.format(name="desktop")
    _script("images/build.sh", "desktop", "--base", BASE, "--tag", tag, "--network", "host", timeout=3000)
    tasks = {"desktop/terminal-file-v0": {}}
    from mintgym.environments.desktop.osworld.loader import osworld_root

    root = osworld_root()
    if root is not None:  # an OSWorld task: its data mounted read-only, OSWorld's own metric code in the image
        tasks["osworld/gimp/7b7617bd-57cc-468e-9c91-40c4ec2bcb3d"] = {
            "volumes": {str(root): "/data/osworld"}, "environment": {"MINTGYM_OSWORLD_ROOT": "/data/osworld"}}
    for task_id, extra in tasks.items():
        env = make(task_id, backend="docker", encoding="raw", backend_options={
            "docker_host": DOCKER_HOST, "network": "host", "pull": "never", "image": tag, **extra})
        try:
            env.reset(seed=0)
            assert env.evaluate() == 0.0, task_id
            _run_oracle_episode_from_reset(env)
        finally:
            env.close()


def _run_oracle_episode_from_reset(env) -> None:
    for _ in range(100):
        action = env.oracle_action()
        if action is None:
            break
        _obs, _reward, terminated, truncated, _info = env.step(action)
        if terminated or truncated:
            break
    assert env.evaluate() == 1.0
