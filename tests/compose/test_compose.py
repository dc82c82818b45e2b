"""The compose files: valid per `docker compose config` where the compose plugin exists, and in any
case structured so that `--scale SERVICE=N` works, every replica is token-guarded and health-checked,
and every variable they use is documented in .env.example."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "compose"
FILES = [COMPOSE / "docker-compose.yml", COMPOSE / "ray.yml"]
ENV_SERVERS = {"pytool", "web", "android"}


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())  # safe_load resolves the << merge keys


def _services() -> dict[str, dict]:
    services: dict[str, dict] = {}
    for path in FILES:
        services.update(_load(path)["services"])
    return services


def _image_name(service: dict) -> str:
    match = re.fullmatch(r"\$\{MINTGYM_REGISTRY:-\}mintgym/([a-z0-9-]+):\$\{MINTGYM_TAG:-latest\}", service["image"])
    assert match, f"image {service['image']!r} must be ${{MINTGYM_REGISTRY:-}}mintgym/NAME:${{MINTGYM_TAG:-latest}}"
    return match.group(1)


def test_every_service_has_an_image_built_from_images_and_a_healthcheck():
    services = _services()
    assert ENV_SERVERS | {"ray-head", "ray-worker"} <= set(services)
    for name, service in services.items():
        assert (REPO / "images" / _image_name(service) / "Dockerfile").exists(), name
        assert service["healthcheck"]["test"][0] == "CMD", name


def test_env_servers_scale_and_require_a_token():
    services = _services()
    for name in ENV_SERVERS:
        service = services[name]
        assert "container_name" not in service, f"{name}: a fixed name would break --scale"
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1::"), f"{name}: fixed host port {port} breaks --scale"
        env = service["environment"]
        assert env["MINTGYM_DOMAIN"] == name
        assert env["MINTGYM_HOST"] == "0.0.0.0" and env["MINTGYM_PORT"] == "8000"
        assert env["MINTGYM_TOKEN"].startswith("${MINTGYM_TOKEN:?"), f"{name}: the token must be required"
        assert "/v1/health" in (REPO / "images" / "common" / "healthcheck.py").read_text()
        assert service["healthcheck"]["test"][-1] == "/usr/local/lib/mintgym/healthcheck.py"
        assert "replicas" in service["deploy"]


def test_ray_workers_join_the_head_and_publish_only_on_loopback():
    services = _services()
    head, worker = services["ray-head"], services["ray-worker"]
    assert worker["depends_on"]["ray-head"]["condition"] == "service_healthy"
    assert any("--address=ray-head:6379" in part for part in worker["command"])
    assert "--head" in head["command"]
    for port in head.get("ports", []):
        assert str(port).startswith("127.0.0.1:"), port
    networks = {n for s in services.values() for n in s["networks"]}
    assert networks == {"envs"}, "env servers and Ray nodes must share one network"


def test_every_variable_is_documented_in_env_example():
    documented = {line.split("=", 1)[0] for line in (COMPOSE / ".env.example").read_text().splitlines()
                  if line and not line.startswith("#")}
    used = set()
    for path in FILES:
        used |= set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", path.read_text()))
    assert used <= documented, f"undocumented: {sorted(used - documented)}"


def _compose_cli() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_docker_compose_config_accepts_the_files(tmp_path):
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no compose CLI (docker compose plugin or docker-compose): the structural tests above stand in")
    args = [*cli, "--project-directory", str(COMPOSE), "--env-file", str(COMPOSE / ".env.example")]
    for path in FILES:
        args += ["-f", str(path)]
    proc = subprocess.run([*args, "config", "-q"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
