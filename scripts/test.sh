#!/usr/bin/env bash
# Starts the services the tests need, then runs the default test suite (slow scale tests excluded).
set -euo pipefail
cd "$(dirname "$0")/.."
# Lint first (the rule set is pyproject.toml's [tool.ruff]): any finding stops the run before a test starts.
.venv/bin/ruff check . || { echo "ruff found the problems above; fix them (make lint) before the tests run" >&2; exit 1; }
if [ "$(id -u)" -eq 0 ] && [ -x scripts/dockerd.sh ] && command -v dockerd >/dev/null; then
  ./scripts/dockerd.sh start
  export DOCKER_HOST=${DOCKER_HOST:-unix:///run/mintgym-docker.sock}
fi
# Two workers (one per core here), a test file's tests on one worker: most tests wait on browsers, X servers
# and subprocesses, so this halves the wall time. MINTGYM_TEST_WORKERS=0 runs them in this process.
exec .venv/bin/python -m pytest -m "not slow" -n "${MINTGYM_TEST_WORKERS:-2}" --dist loadfile --durations=25 "$@"
