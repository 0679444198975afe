#!/usr/bin/env bash
# Installs the trainprof Python package with pip, without network: into Debian's /usr/bin/python3
# by default (its /usr/local/lib/python3.X/dist-packages, with sudo when not root, and PEP 668's
# --break-system-packages), or into the Python given, e.g. a virtualenv's:
#
#   ./scripts/install-python.sh                              # Debian's python3
#   python3 -m venv ~/venv && ./scripts/install-python.sh ~/venv/bin/python
#   ./scripts/install-python.sh ~/venv/bin/python build/dist/trainprof-*.whl   # a built wheel
#
# Without a wheel it builds one from this source tree (pip wheel, setup.py: CMake in
# build/pip-<python>, or in TRAINPROF_CMAKE_BUILD_DIR when set), with the given Python when it
# has setuptools and wheel, else with /usr/bin/python3. A copy left by the old copying script (a
# trainprof folder without pip's metadata) is removed first; `pip uninstall trainprof` undoes it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
PY="${1:-/usr/bin/python3}"
WHEEL="${2:-}"
if ! command -v "$PY" >/dev/null; then
  echo "install-python: no Python at $PY" >&2
  exit 2
fi

if [ -z "$WHEEL" ]; then
  builder="$PY"
  if ! "$builder" -c 'import setuptools, wheel' 2>/dev/null; then builder=/usr/bin/python3; fi
  dist=$(mktemp -d)
  trap 'rm -rf "$dist"' EXIT
  "$builder" -m pip wheel --no-build-isolation --no-index --no-deps -q -w "$dist" . >&2
  WHEEL=$(ls "$dist"/trainprof-*.whl)
fi

site=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
managed=$("$PY" -c 'import os, sys, sysconfig
print(int(sys.prefix == sys.base_prefix and
          os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))')
pip_args=(--no-index --no-deps --force-reinstall --root-user-action=ignore --disable-pip-version-check)
if [ "$managed" = 1 ]; then pip_args+=(--break-system-packages); fi
SUDO=""
if [ "$(id -u)" -ne 0 ] && ! [ -w "$(dirname "$site")" ]; then SUDO="sudo"; fi

# The old scripts/install-python.sh copied the folder without pip's metadata; pip would write
# over it and leave its stale files behind, so it goes first.
if [ -d "$site/trainprof" ] && ! compgen -G "$site/trainprof-*.dist-info" >/dev/null; then
  echo "install-python: removing $site/trainprof (a copy not installed by pip)" >&2
  $SUDO rm -rf "$site/trainprof"
fi
$SUDO "$PY" -m pip install "${pip_args[@]}" -q "$WHEEL" >&2
(cd / && "$PY" -c 'import trainprof; print(f"install-python: trainprof {trainprof.__version__} installed in {trainprof.__path__[0]}")')
