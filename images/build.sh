#!/usr/bin/env bash
# Build one MintGym environment image: images/build.sh NAME [options] [-- extra `docker build` args]
#
#   NAME                base | pytool | web | android   (a folder of images/ holding a Dockerfile)
#   --base IMAGE        base image (default debian:bookworm-slim; here: mintgym/base-local:bookworm)
#   --tag TAG           image tag (default mintgym/NAME:latest)
#   --network MODE      network for RUN steps (default: docker's; `host` where apt must reach a mirror)
#
# Python packages never come from the network inside `docker build`: this script builds a wheelhouse
# on the host with pip (which uses the host's own index settings: pip.conf, PIP_* variables), stages
# it with the image's files into a build context, and the Dockerfile installs from it with --no-index.
# So the same build works on a laptop, behind a proxy, and on an air-gapped cluster node. The
# dependency wheels are cached by the hash of pyproject.toml and the extras, and docker's layer
# cache skips every step whose inputs did not change.
#
# Settings: MINTGYM_CACHE_DIR (default /var/cache/mintgym), PIP (default: the repo's .venv pip),
# DOCKER_HOST (default: MintGym's own daemon, see scripts/dockerd.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
CACHE="${MINTGYM_CACHE_DIR:-/var/cache/mintgym}"
export DOCKER_HOST="${DOCKER_HOST:-unix://${MINTGYM_DOCKER_SOCK:-/run/mintgym-docker.sock}}"
if [[ -z "${PIP:-}" ]]; then
    if [[ -x "$REPO/.venv/bin/pip" ]]; then PIP="$REPO/.venv/bin/pip"; else PIP="python3 -m pip"; fi
fi

die() { echo "images/build.sh: $*" >&2; exit 1; }

name="${1:-}"
[[ -n "$name" && "$name" != -* ]] || die "usage: images/build.sh NAME [--base IMAGE] [--tag TAG] [--network MODE] [-- docker build args]"
shift
[[ -f "$HERE/$name/Dockerfile" ]] || die "no images/$name/Dockerfile"
# (desktop needs --network host: its Dockerfile apt-installs the desktop apps)
base="debian:bookworm-slim"
tag="mintgym/$name:latest"
network=""
extra=()
while (( $# )); do
    case "$1" in
        --base) base="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        --network) network="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) die "unknown option $1" ;;
    esac
done

# The pip extras an image installs are declared in its Dockerfile: `# mintgym-extras: web`.
extras="$(sed -n 's/^# mintgym-extras:[[:space:]]*//p' "$HERE/$name/Dockerfile" | head -n 1 | tr -d '[:space:]')"
spec="."
[[ -n "$extras" ]] && spec=".[$extras]"

ctx="$CACHE/context/$name"
mkdir -p "$ctx"

# 1. The project's source, only what the wheel is built from, then its wheel (no deps).
src="$CACHE/src"
rm -rf "$src" && mkdir -p "$src"
members=(pyproject.toml setup.py mintgym action_spaces environments agents evals)
for m in README.md LICENSE; do [[ -e "$REPO/$m" ]] && members+=("$m"); done
tar -C "$REPO" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' -cf - "${members[@]}" | tar -C "$src" -xf -
[[ -e "$src/README.md" ]] || echo "# MintGym" >"$src/README.md"
# SOURCE_DATE_EPOCH makes the wheel byte-identical for identical source; an unchanged wheel keeps its
# old file, so docker's cache of the install layer holds.
fresh="$CACHE/wheel.new"
rm -rf "$fresh" && mkdir -p "$fresh" "$ctx/wheels/app"
(cd "$src" && SOURCE_DATE_EPOCH=315532800 $PIP wheel --quiet --no-deps --no-build-isolation -w "$fresh" .) \
    >"$CACHE/wheel.log" 2>&1 || { cat "$CACHE/wheel.log" >&2; die "building the mintgym wheel failed"; }
if ! cmp -s "$fresh"/mintgym-*.whl "$ctx/wheels/app"/mintgym-*.whl 2>/dev/null; then
    rm -f "$ctx/wheels/app"/*.whl && mv "$fresh"/mintgym-*.whl "$ctx/wheels/app/"
fi
rm -rf "$fresh"

# 2. Dependency wheels, shared by the images that need the same extras and rebuilt only when
#    pyproject.toml or the extras change.
key="$( (cat "$REPO/pyproject.toml"; echo "$spec"; uname -m) | sha256sum | cut -c1-16)"
house="$CACHE/wheelhouse/$key"
if [[ ! -f "$house/.complete" ]]; then
    rm -rf "$house" && mkdir -p "$house"
    echo "images/build.sh: building dependency wheels for mintgym${spec#.} into $house"
    (cd "$src" && $PIP wheel --quiet -w "$house" "$spec") >"$CACHE/deps.log" 2>&1 \
        || { cat "$CACHE/deps.log" >&2; die "building dependency wheels failed"; }
    rm -f "$house"/mintgym-*.whl
    touch "$house/.complete"
fi
rm -rf "$ctx/wheels/deps" && cp -a "$house" "$ctx/wheels/deps" && rm -f "$ctx/wheels/deps/.complete"

# 2b. Packages installed without their dependencies, declared as `# mintgym-nodeps: NAME==VERSION ...`
#     (desktop-env: OSWorld's metric code, whose pins clash with ours; see README "OSWorld scoring").
nodeps="$(sed -n 's/^# mintgym-nodeps:[[:space:]]*//p' "$HERE/$name/Dockerfile" | head -n 1)"
rm -rf "$ctx/wheels/nodeps" && mkdir -p "$ctx/wheels/nodeps"
if [[ -n "$nodeps" ]]; then
    # shellcheck disable=SC2086  # one word per requirement
    $PIP wheel --quiet --no-deps -w "$ctx/wheels/nodeps" $nodeps >"$CACHE/nodeps.log" 2>&1 \
        || { cat "$CACHE/nodeps.log" >&2; die "building the no-deps wheels ($nodeps) failed"; }
fi

# 3. The image's own files and the shared entrypoint/healthcheck.
rm -rf "$ctx/files" && mkdir -p "$ctx/files"
cp "$HERE/common/"* "$ctx/files/"
find "$HERE/$name" -maxdepth 1 -type f ! -name Dockerfile -exec cp {} "$ctx/files/" \;
cp "$HERE/$name/Dockerfile" "$ctx/Dockerfile"

args=(build -t "$tag" --build-arg "BASE_IMAGE=$base" -f "$ctx/Dockerfile" --label "mintgym.image=$name")
[[ -n "$network" ]] && args+=(--network "$network")
# The classic builder: it is what Debian's docker.io ships and what the Docker SDK's build() drives.
DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker "${args[@]}" "${extra[@]}" "$ctx"
# The image this tag pointed to before is now dangling: drop it (only MintGym's, by label).
docker image prune -f --filter "label=mintgym.image=$name" >/dev/null
echo "built $tag (base $base)"
