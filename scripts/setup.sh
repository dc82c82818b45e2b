#!/usr/bin/env bash
# Installs everything MintGym needs on a fresh Debian machine: system packages (Chromium, Xvfb and the
# desktop apps, dockerd, adb, debootstrap) and a Python 3.11 virtual environment in .venv with the
# project and all its extras. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(chromium chromium-driver xvfb x11-utils openbox xterm xdotool mousepad libreoffice-calc
  libreoffice-writer libreoffice-impress feh imagemagick fonts-dejavu-core bubblewrap util-linux docker.io adb
  debootstrap docker-compose pulseaudio pulseaudio-utils socat gnome-shell-common vlc gimp python3-xlib sysstat
  thunderbird ffmpeg slirp4netns dbus at-spi2-core python3-gi gir1.2-atspi-2.0 libatk-adaptor)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: these Debian packages are missing and need root: ${missing[*]}" >&2
    echo "setup: run 'sudo apt-get install -y ${missing[*]}' and re-run" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' || {
  echo "setup: MintGym needs Python 3.11 (found $("$PYTHON" --version))" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.mintgym-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] || [ scripts/setup.sh -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  # torch first, pinned: the CPU wheel; an unpinned torch would pull several GB of CUDA.
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q -e ".[all]"
  # OSWorld's own metric functions: desktop-env without its pins (numpy<2, torch~=2.5, ...), beside the light
  # libraries its metric modules import (the osworld extra); see README "OSWorld scoring".
  .venv/bin/pip install -q -e ".[osworld]" && .venv/bin/pip install -q --no-deps "desktop-env==1.0.2"
  touch "$stamp"
fi
echo "setup: ok ($(.venv/bin/python --version), $(.venv/bin/mintgym --help >/dev/null && echo 'mintgym CLI ready'))"
