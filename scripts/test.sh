#!/usr/bin/env bash
# Starts the services the tests need, then runs the default test suite (slow scale tests excluded).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -eq 0 ] && [ -x scripts/dockerd.sh ] && command -v dockerd >/dev/null; then
  ./scripts/dockerd.sh start
  export DOCKER_HOST=${DOCKER_HOST:-unix:///run/mintgym-docker.sock}
fi
exec .venv/bin/python -m pytest -m "not slow" "$@"
