#!/usr/bin/env bash
# Start, stop or query MintGym's own Docker daemon (Debian's docker.io), apart from any system dockerd.
#
#   scripts/dockerd.sh start|stop|status
#   eval "$(scripts/dockerd.sh env)"      # export DOCKER_HOST for docker clients
#
# The daemon runs as root without systemd, with its own data root and socket, no bridge and no
# iptables rules: containers use host networking (or none), so nothing here reaches a 172.17.x
# address. Storage driver: overlay2 where the kernel and the data root's filesystem allow it, else vfs.
#
# Settings (environment):
#   MINTGYM_DOCKER_ROOT    data root            (default /var/lib/mintgym-docker)
#   MINTGYM_DOCKER_SOCK    socket path          (default /run/mintgym-docker.sock)
#   MINTGYM_DOCKER_EXEC    exec root            (default /run/mintgym-docker)
#   MINTGYM_DOCKER_DRIVER  storage driver       (default: overlay2, falling back to vfs)
#   MINTGYM_DOCKER_TIMEOUT seconds to wait for `docker info` (default 60)
set -euo pipefail

ROOT="${MINTGYM_DOCKER_ROOT:-/var/lib/mintgym-docker}"
SOCK="${MINTGYM_DOCKER_SOCK:-/run/mintgym-docker.sock}"
EXEC_ROOT="${MINTGYM_DOCKER_EXEC:-/run/mintgym-docker}"
PIDFILE="${EXEC_ROOT}.pid"
LOG="${ROOT}/dockerd.log"
TIMEOUT="${MINTGYM_DOCKER_TIMEOUT:-60}"
export DOCKER_HOST="unix://${SOCK}"

die() { echo "dockerd.sh: $*" >&2; exit 1; }

answers() { docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; }

daemon_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

pick_driver() {
    if [[ -n "${MINTGYM_DOCKER_DRIVER:-}" ]]; then echo "$MINTGYM_DOCKER_DRIVER"; return; fi
    # A driver chosen once stays: switching would hide the images stored under the other one.
    if [[ -d "$ROOT/overlay2" ]]; then echo overlay2; return; fi
    if [[ -d "$ROOT/vfs" ]]; then echo vfs; return; fi
    local fs
    fs="$(stat -fc %T "$ROOT")"
    if grep -qw overlay /proc/filesystems && [[ "$fs" != "overlayfs" && "$fs" != "tmpfs" ]]; then
        echo overlay2
    else
        echo vfs
    fi
}

start() {
    if answers; then echo "dockerd already running at $DOCKER_HOST"; return 0; fi
    [[ "$(id -u)" == 0 ]] || die "must run as root (dockerd needs it)"
    command -v dockerd >/dev/null || die "dockerd not found: apt-get install -y docker.io"
    command -v docker >/dev/null || die "docker CLI not found: apt-get install -y docker.io"
    if pid="$(daemon_pid)"; then
        echo "dockerd (pid $pid) is up but not answering yet; waiting" >&2
    else
        mkdir -p "$ROOT" "$EXEC_ROOT"
        rm -f "$SOCK"
        local driver
        driver="$(pick_driver)"
        # setsid: the daemon outlives the shell (and the test session) that started it.
        setsid dockerd \
            --host "unix://${SOCK}" \
            --data-root "$ROOT" \
            --exec-root "$EXEC_ROOT" \
            --pidfile "$PIDFILE" \
            --storage-driver "$driver" \
            --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
            --userland-proxy=false \
            >>"$LOG" 2>&1 </dev/null &
        disown || true
    fi
    local waited=0
    until answers; do
        if (( waited >= TIMEOUT * 10 )); then
            tail -n 30 "$LOG" >&2 || true
            die "dockerd did not answer within ${TIMEOUT}s (log: $LOG)"
        fi
        if ! daemon_pid >/dev/null && (( waited > 20 )); then
            tail -n 30 "$LOG" >&2 || true
            die "dockerd exited during start (log: $LOG)"
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    echo "dockerd running at $DOCKER_HOST (storage driver $(docker info --format '{{.Driver}}'))"
}

stop() {
    local pid
    if ! pid="$(daemon_pid)"; then echo "dockerd not running"; rm -f "$PIDFILE"; return 0; fi
    kill -TERM "$pid"
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || { echo "dockerd stopped"; return 0; }
        sleep 0.1
    done
    die "dockerd (pid $pid) did not stop within 30s"
}

status() {
    if answers; then
        echo "running at $DOCKER_HOST: $(docker info --format 'server {{.ServerVersion}}, driver {{.Driver}}, {{.Containers}} containers, {{.Images}} images')"
    else
        echo "not running ($DOCKER_HOST)"
        return 3
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
    *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
