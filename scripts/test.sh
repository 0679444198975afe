#!/usr/bin/env bash
# Installs what trainprof needs (Debian 12), builds it, and runs the whole test suite: unit,
# golden, LibTorch end-to-end and benchmark smoke tests (ctest), then the Python package's tests
# (pytest, against the package in the build tree, and the pip wheel in a fresh virtualenv).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
# TRAINPROF_CMAKE_BUILD_DIR: python/tests/test_wheel.py builds the pip wheel from a clean copy
# of the tree with the release build's extension and command (seconds, not a second build).
TRAINPROF_CMAKE_BUILD_DIR="$PWD/build/release" \
  PYTHONPATH="$PWD/build/release/python" TRAINPROF_CLI="$PWD/build/release/src/cli/trainprof" \
  /usr/bin/python3 -m pytest -q -rs python/tests
