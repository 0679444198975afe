#!/usr/bin/env bash
# Installs what trainprof needs (Debian 12), builds it, and runs the whole test suite: unit,
# golden, LibTorch end-to-end and benchmark smoke tests (ctest), then the Python package's tests
# (pytest, against the package in the build tree).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
PYTHONPATH="$PWD/build/release/python" TRAINPROF_CLI="$PWD/build/release/src/cli/trainprof" \
  /usr/bin/python3 -m pytest -q -rs python/tests
