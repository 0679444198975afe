#!/usr/bin/env bash
# Run HERE (Debian 12, Debian's archive reachable) before scripts/gpu/check.sh runs on the GPU
# machine, which reaches nothing: fills .gpu/ (git-ignored, carried by the device call) with
#   .gpu/debs/    the Debian packages the C++ build needs there (unpacked into a prefix there)
#   .gpu/fmnist/  the first 6,000 training and 1,000 test samples of Fashion-MNIST, as IDX .gz
#                 files (2 MB instead of the 30 MB package)
# Then:  run(command="scripts/gpu/check.sh", carry=[".gpu"], timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
rm -rf .gpu && mkdir -p .gpu/debs .gpu/fmnist
# Headers and CMake files (-dev) and the shared libraries they link, for what the device image
# lacks: it has a compiler, CMake, ninja, CUDA and torch, and no Debian -dev packages.
pkgs=(libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libcli11-dev
      libisal-dev libisal2 libpng-dev libpng16-16 zlib1g-dev libsqlite3-dev libsqlite3-0
      libgtest-dev libgmock-dev libgloo-dev)
(cd .gpu/debs && apt-get download "${pkgs[@]}" 2>&1 | { grep -v -e unsandboxed -e '^Get:' || true; })
python3 - /usr/share/datasets/fashion-mnist .gpu/fmnist <<'PY'
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for split, n in (("train", 6000), ("t10k", 1000)):
    for kind, item in (("images-idx3", 28 * 28), ("labels-idx1", 1)):
        name = f"{split}-{kind}-ubyte.gz"
        data = gzip.open(f"{src}/{name}").read()
        dims = data[3]
        head = bytearray(data[:4 + 4 * dims])
        struct.pack_into(">I", head, 4, n)  # the first dimension is the sample count
        gzip.open(f"{dst}/{name}", "wb").write(bytes(head) + data[4 + 4 * dims:4 + 4 * dims + n * item])
PY
du -sh .gpu/debs .gpu/fmnist
