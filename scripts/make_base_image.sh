#!/usr/bin/env bash
# Build the local base image mintgym/base-local:bookworm from Debian packages alone (no registry pull).
#
#   scripts/make_base_image.sh [--force]
#
# debootstrap makes a minimal Debian bookworm root filesystem with Python 3.11, venv and pip, from the
# Debian mirror this machine's apt is configured with; the tarball is cached so reruns skip the
# download; `docker import` turns it into an image. The images/ Dockerfiles build on it with
# --build-arg BASE_IMAGE=mintgym/base-local:bookworm where Docker Hub cannot be reached.
#
# Settings (environment):
#   MINTGYM_CACHE_DIR       cache for the rootfs tarball (default /var/cache/mintgym)
#   MINTGYM_DEBIAN_MIRROR   Debian mirror (default: the first bookworm URI in apt's sources)
#   MINTGYM_BASE_TAG        image tag (default mintgym/base-local:bookworm)
#   DOCKER_HOST             daemon to import into (default: MintGym's own, see scripts/dockerd.sh)
set -euo pipefail

SUITE=bookworm
TAG="${MINTGYM_BASE_TAG:-mintgym/base-local:bookworm}"
CACHE="${MINTGYM_CACHE_DIR:-/var/cache/mintgym}"
export DOCKER_HOST="${DOCKER_HOST:-unix://${MINTGYM_DOCKER_SOCK:-/run/mintgym-docker.sock}}"
# What the env server needs from the OS; everything Python comes from the image's wheelhouse.
PACKAGES=(python3 python3-venv python3-pip ca-certificates tini)

die() { echo "make_base_image.sh: $*" >&2; exit 1; }

force=0
[[ "${1:-}" == "--force" ]] && force=1

if (( ! force )) && docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "$TAG exists; skipping (use --force to rebuild)"
    exit 0
fi

mirror_from_apt() {
    # deb822 sources first (URIs: + Suites:), then one-line sources.list entries.
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        awk -v suite="$SUITE" '
            /^[[:space:]]*$/ { if (uri && ok) { print uri; exit } uri = ""; ok = 0; next }
            /^URIs:/   { uri = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) ok = 1 }
            END        { if (uri && ok) print uri }
        ' "$f" | head -n 1
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$f" ]] || continue
        awk -v suite="$SUITE" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i == suite) { print $(i - 1); exit } }' "$f"
    done
}

MIRROR="${MINTGYM_DEBIAN_MIRROR:-$(mirror_from_apt | head -n 1)}"
[[ -n "$MIRROR" ]] || die "no Debian $SUITE mirror in /etc/apt/sources*; set MINTGYM_DEBIAN_MIRROR"

key="$( (printf '%s ' "$SUITE" "${PACKAGES[@]}"; cat /etc/apt/sources.list.d/debian.sources 2>/dev/null) | sha256sum | cut -c1-12)"
TARBALL="$CACHE/debian-$SUITE-rootfs-$key.tar"

if (( force )) || [[ ! -s "$TARBALL" ]]; then
    [[ "$(id -u)" == 0 ]] || die "debootstrap needs root"
    command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
    mkdir -p "$CACHE"
    work="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    include="$(IFS=,; echo "${PACKAGES[*]}")"
    echo "debootstrap $SUITE from $MIRROR (+ $include)"
    # A mirror can drop a download now and then: retry, reusing what was fetched already.
    for attempt in 1 2 3; do
        if debootstrap --variant=minbase --include="$include" "$SUITE" "$work/rootfs" "$MIRROR" \
                >"$work/debootstrap.log" 2>&1; then
            break
        fi
        (( attempt < 3 )) || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed 3 times"; }
        echo "debootstrap attempt $attempt failed ($(grep -m1 '^E:' "$work/debootstrap.log" || echo 'see log')); retrying" >&2
        sleep 5
    done
    # apt inside the image uses the same sources as this machine (updates and security included).
    if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
        cp /etc/apt/sources.list.d/debian.sources "$work/rootfs/etc/apt/sources.list.d/debian.sources"
        : >"$work/rootfs/etc/apt/sources.list"
    fi
    # Slim it like debian:bookworm-slim: no package lists or caches in the image.
    rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/tmp/"*
    tar --numeric-owner -C "$work/rootfs" -cf "$TARBALL.partial" .
    mv "$TARBALL.partial" "$TARBALL"
    echo "cached rootfs at $TARBALL ($(du -h "$TARBALL" | cut -f1))"
fi

docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    "$TARBALL" "$TAG" >/dev/null
echo "imported $TAG from $TARBALL"
