#!/usr/bin/env bash
# Rewrites the golden files in tests/golden/ from the current output (placeholders such as
# "<number>" are kept). Review the diff with `git diff tests/golden` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset release
TRAINPROF_UPDATE_GOLDEN=1 ctest --preset release -L golden
git status --short tests/golden
