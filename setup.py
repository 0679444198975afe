"""Builds the trainprof wheel (pip install ., pip wheel .); pyproject.toml holds the metadata.

CMake builds the C++ core, as always: the Python extension (`trainprof_python`, every native
module it puts into <build>/python/trainprof/) and the `trainprof` command (`trainprof_cli`).
This file only drives that build and lays its outputs out beside the Python modules of
python/trainprof/:

    trainprof/_core.cpython-311-x86_64-linux-gnu.so   the extension (and any other one built)
    trainprof/_bin/trainprof                         the command; `trainprof` on PATH runs it
    trainprof.libs/libyaml-cpp-1a2b3c4d.so.0.7       shared libraries bundled as auditwheel does

The wheel is self-contained: its native files may load only the system's own libraries
(ALLOWED_LIBRARIES). Everything else that ldd finds (the extension's yaml-cpp, SQLite, libpng;
ISA-L) is copied into trainprof.libs/ under a soname of its own, so it cannot be taken for
another copy in the same process, and found through an RPATH of $ORIGIN/..., set with patchelf.
(The command links those statically, and fmt is compiled in; the extension cannot link them:
Debian's .a files are not position-independent, and the extension is a shared object.)

The build folder is build/pip-<interpreter> (kept, so a rebuild is incremental), configured
without tests, benchmarks, LibTorch or MPI. TRAINPROF_CMAKE_BUILD_DIR=DIR takes an already
configured build instead, such as build/release (scripts/profile.sh and scripts/test.sh do):
only the two targets are brought up to date there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, List

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

# Sonames a native file of the wheel may load from the system: glibc (with its dynamic loader
# and the libraries it merged in 2.34), libstdc++, libgcc_s and zlib.
ALLOWED_LIBRARIES = frozenset({
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libc.so.6", "libm.so.6",
    "libdl.so.2", "libpthread.so.0", "librt.so.1", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1",
})
LIBS_DIR = "trainprof.libs"
CLI_PATH = "trainprof/_bin/trainprof"
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF",  # pybind11's LTO: a minute of serial linking
    "-DTRAINPROF_BUILD_TESTS=OFF",
    "-DTRAINPROF_BUILD_BENCH=OFF",
    "-DTRAINPROF_WITH_TORCH=OFF",
    "-DTRAINPROF_WITH_MPI=OFF",
    "-DTRAINPROF_WITH_CUPTI=OFF",
    "-DTRAINPROF_WITH_PYTHON=ON",
]
CMAKE_TARGETS = ["trainprof_python", "trainprof_cli"]


def cmake_version() -> str:
    """The version in CMakeLists.txt's project(), the one the C++ core reports."""
    text = (ROOT / "CMakeLists.txt").read_text()
    found = re.search(r"project\(\s*trainprof\s+VERSION\s+([0-9]+(?:\.[0-9]+)*)", text)
    if not found:
        raise RuntimeError("setup.py: CMakeLists.txt has no project(trainprof VERSION x.y.z)")
    return found.group(1)


def run(command: List[str], **kwargs) -> None:
    print("setup.py: " + " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def needed_libraries(path: Path) -> Dict[str, str]:
    """ldd's answer for one native file: soname -> resolved path ("" when not found)."""
    out = subprocess.run(["ldd", str(path)], check=True, capture_output=True, text=True).stdout
    libs = {}
    for line in out.splitlines():
        fields = line.split()
        if not fields or fields[0] == "statically":
            continue
        name = os.path.basename(fields[0])
        resolved = fields[2] if len(fields) > 2 and fields[1] == "=>" else ""
        libs[name] = "" if resolved == "not" else resolved
    return libs


def is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


class CleanBuildPy(build_py):
    """Starts from an empty build/lib/trainprof, so a module deleted from the source tree is not
    shipped from an earlier build."""

    def run(self) -> None:
        for stale in ("trainprof", LIBS_DIR):
            shutil.rmtree(Path(self.build_lib) / stale, ignore_errors=True)
        super().run()


class BuildWithCMake(build_ext):
    """build_ext that runs CMake and lays out its outputs (see the file comment)."""

    def run(self) -> None:
        build_dir = self._cmake_build()
        out = ROOT / "python" if self.inplace else Path(self.build_lib)
        self._outputs: List[str] = []
        self._copy_extensions(build_dir / "python" / "trainprof", out / "trainprof")
        if not self.inplace:
            self._copy(build_dir / "src" / "cli" / "trainprof", out / CLI_PATH)
            self._bundle_libraries(out)

    def get_outputs(self) -> List[str]:
        return list(getattr(self, "_outputs", []))

    def _cmake_build(self) -> Path:
        given = os.environ.get("TRAINPROF_CMAKE_BUILD_DIR")
        if given:
            build_dir = Path(given).resolve()
            if not (build_dir / "CMakeCache.txt").is_file():
                raise RuntimeError(f"setup.py: TRAINPROF_CMAKE_BUILD_DIR={given} is not a "
                                   "configured CMake build (no CMakeCache.txt)")
        else:
            build_dir = ROOT / "build" / f"pip-{sys.implementation.cache_tag}"
            run(["cmake", "-S", str(ROOT), "-B", str(build_dir), *CMAKE_OPTIONS,
                 f"-DPython_EXECUTABLE={sys.executable}"])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        run(["cmake", "--build", str(build_dir), "-j", jobs, "--target", *CMAKE_TARGETS])
        return build_dir

    def _copy(self, src: Path, dst: Path) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            dst.unlink()
        shutil.copy2(src, dst)
        if shutil.which("strip") and not self.debug:
            run(["strip", "--strip-unneeded", str(dst)])
        self._outputs.append(str(dst))

    def _copy_extensions(self, built: Path, package: Path) -> None:
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        modules = sorted(p for p in built.rglob("*.so") if p.is_file())
        if not modules:
            raise RuntimeError(f"setup.py: CMake built no extension module in {built}")
        for module in modules:
            if not module.name.endswith(suffix):
                raise RuntimeError(
                    f"setup.py: {module} was built for another Python than {sys.executable} "
                    f"(wants the suffix {suffix}); configure that build with "
                    f"-DPython_EXECUTABLE={sys.executable}, or leave TRAINPROF_CMAKE_BUILD_DIR unset")
            self._copy(module, package / module.relative_to(built))

    def _bundle_libraries(self, out: Path) -> None:
        """Copies what the native files need beyond ALLOWED_LIBRARIES into trainprof.libs/."""
        libs_dir = out / LIBS_DIR
        bundled: Dict[str, str] = {}  # soname -> file name in trainprof.libs/
        pending = [Path(p) for p in self._outputs if is_elf(Path(p))]
        while pending:
            native = pending.pop()
            replaced = []
            for soname, resolved in needed_libraries(native).items():
                if soname in ALLOWED_LIBRARIES or soname in bundled.values():
                    continue
                if not resolved:
                    raise RuntimeError(f"setup.py: {native.name} needs {soname}, "
                                       "which is not found on this machine")
                if soname not in bundled:
                    bundled[soname] = self._bundle_one(Path(resolved), soname, libs_dir)
                    pending.append(libs_dir / bundled[soname])
                replaced.append(soname)
            if replaced:
                patchelf = self._patchelf()
                for soname in replaced:
                    run([patchelf, "--replace-needed", soname, bundled[soname], str(native)])
                rpath = os.path.relpath(libs_dir, native.parent)
                run([patchelf, "--set-rpath", f"$ORIGIN/{rpath}", str(native)])

    def _bundle_one(self, resolved: Path, soname: str, libs_dir: Path) -> str:
        data = resolved.read_bytes()
        stem, _, version = soname.partition(".so")
        name = f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}.so{version}"
        dst = libs_dir / name
        libs_dir.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        dst.chmod(0o755)
        run([self._patchelf(), "--set-soname", name, str(dst)])
        self._outputs.append(str(dst))
        return name

    @staticmethod
    def _patchelf() -> str:
        found = shutil.which("patchelf")
        if not found:
            raise RuntimeError("setup.py: the wheel must bundle a shared library and needs "
                               "patchelf for it (Debian: apt-get install patchelf)")
        return found


setup(
    version=cmake_version(),
    ext_modules=[Extension("trainprof._core", sources=[])],
    cmdclass={"build_py": CleanBuildPy, "build_ext": BuildWithCMake},
)
