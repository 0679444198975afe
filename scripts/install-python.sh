#!/usr/bin/env bash
# Installs the built trainprof Python package (build/release/python/trainprof) into a Python's
# site-packages, without network: Debian's /usr/bin/python3 by default (then into
# /usr/local/lib/python3.X/dist-packages, with sudo when not root), or the Python given, e.g.
# a virtualenv's:
#
#   python3 -m venv --system-site-packages ~/venv     # --system-site-packages: Debian's torch
#   ./scripts/install-python.sh ~/venv/bin/python
#
# The package's C++ extension is built for one Python version (Debian 12: 3.11); a Python of
# another version is refused with a message.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-/usr/bin/python3}"
BUILT="${TRAINPROF_BUILD_DIR:-build/release}/python/trainprof"

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if ! command -v "$PY" >/dev/null; then
  echo "install-python: no Python at $PY" >&2
  exit 2
fi
ext=$(ls "$BUILT"/_core*.so 2>/dev/null | head -1 || true)
if [ -z "$ext" ]; then
  echo "install-python: $BUILT/_core*.so is not built (run: cmake --build --preset release)" >&2
  exit 2
fi
suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
if [ "$(basename "$ext")" != "_core$suffix" ]; then
  echo "install-python: $(basename "$ext") was built for another Python than $PY (wants" \
    "_core$suffix); configure with -DPython_EXECUTABLE=$PY and rebuild" >&2
  exit 2
fi
site=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
SUDO=""
if [ ! -w "$(dirname "$site")" ] && [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO mkdir -p "$site"
$SUDO rm -rf "$site/trainprof.new"
$SUDO cp -r "$BUILT" "$site/trainprof.new"
$SUDO rm -rf "$site/trainprof"
$SUDO mv "$site/trainprof.new" "$site/trainprof"
(cd / && "$PY" -c 'import trainprof; print(f"install-python: trainprof {trainprof.__version__} installed in {trainprof.__path__[0]}")')
