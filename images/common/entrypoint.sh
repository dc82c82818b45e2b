#!/bin/sh
# Start the env server for MINTGYM_DOMAIN on MINTGYM_HOST:MINTGYM_PORT. The bearer token comes from
# MINTGYM_TOKEN (the server refuses to bind off loopback without one). Extra arguments go to the server.
set -eu
exec python -m mintgym.server "${MINTGYM_DOMAIN:?set MINTGYM_DOMAIN}" \
    --host "${MINTGYM_HOST:-0.0.0.0}" --port "${MINTGYM_PORT:-8000}" "$@"
