#!/usr/bin/env bash
# Installs what trainprof needs (Debian 12), builds it, installs the Python package with pip for
# Debian's python3 (`import trainprof` then works from any folder, and `trainprof` is on PATH;
# the wheel is made from the release build just built), and runs the main job: `trainprof
# profile` with the default config, which trains the CNN on Fashion-MNIST and prints the
# reports. Extra arguments go to `trainprof profile` (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
# What the job and the Python package need, no tests: trainprof (and trainprof-profile, the
# binary `profile` runs in) and the extension; ./scripts/test.sh builds the rest in this build.
cmake --build --preset release --target trainprof_cli trainprof_python
TRAINPROF_CMAKE_BUILD_DIR=build/release ./scripts/install-python.sh >&2
exec ./build/release/src/cli/trainprof profile "$@"
