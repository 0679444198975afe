#!/usr/bin/env bash
# Installs what trainprof needs (Debian 12), builds it, and runs the whole test suite: unit,
# golden, LibTorch end-to-end and benchmark smoke tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
