"""The wheel, as a user gets it: built from a clean copy of the source tree, installed with pip
into a fresh virtualenv that sees no system packages (so no numpy, torch or pandas), used from
another folder, and uninstalled.

TRAINPROF_WHEEL names a wheel that is already built. Without it the wheel is built here from a
copy of the tracked and untracked-but-not-ignored files, reusing the CMake build that
TRAINPROF_CMAKE_BUILD_DIR names (scripts/test.sh passes build/release), else the one the
TRAINPROF_CLI under test was built in; with neither, setup.py builds the core from scratch in
the copy (minutes on two cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]
# What a native file of the wheel may load from the system: glibc (its loader, the vDSO and the
# libraries merged into it), libstdc++, libgcc_s, libm and zlib. Anything else must be inside
# the wheel.
SYSTEM_LIBRARIES = {
    "linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2",
    "libpthread.so.0", "librt.so.1", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1",
}
TRACE = REPO / "fuzz" / "corpus" / "kineto" / "kineto_small.json.gz"


def cmake_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(trainprof VERSION ([0-9.]+)", text).group(1)


def run(cmd: List[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def clean_copy(dst: Path) -> None:
    """The files git would hand a fresh clone, plus new files not yet committed (no build/)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = REPO / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("TRAINPROF_WHEEL")
    if given:
        return Path(given).resolve()
    for module, package in (("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"building the wheel needs {module} (Debian: {package})")
    if shutil.which("git") is None:
        pytest.skip("the clean copy of the source tree needs git")
    src = tmp_path_factory.mktemp("source")
    clean_copy(src)
    dist = tmp_path_factory.mktemp("dist")
    env = dict(os.environ)
    cli = os.environ.get("TRAINPROF_CLI")
    cli_build = Path(cli).resolve().parents[2:3] if cli else []  # <build>/src/cli/trainprof
    if "TRAINPROF_CMAKE_BUILD_DIR" not in env and cli_build and \
            (cli_build[0] / "CMakeCache.txt").is_file():
        env["TRAINPROF_CMAKE_BUILD_DIR"] = str(cli_build[0])
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps",
         "-w", dist, src], env=env)
    (built,) = dist.glob("trainprof-*.whl")
    return built


def make_venv(where: Path) -> Path:
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        pytest.skip("a fresh virtualenv needs venv and ensurepip (Debian: python3-venv)")
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", where])
    return where / "bin" / "python"


def pip_install(python: Path, wheel: Path) -> None:
    run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
         wheel])


def site_packages(python: Path) -> Path:
    out = run([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"]).stdout
    return Path(out.strip())


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    python = make_venv(tmp_path_factory.mktemp("venv") / "env")
    pip_install(python, wheel)
    yield python


@pytest.fixture()
def elsewhere(tmp_path: Path) -> Dict[str, str]:
    """A clean environment for a command run from a folder outside the source tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TRAINPROF"))}
    env["TRAINPROF_DB"] = str(tmp_path / "runs.db")
    return env


def test_the_wheel_holds_every_module_the_extension_and_the_command(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {f"trainprof/{p.relative_to(REPO / 'python' / 'trainprof').as_posix()}"
               for p in (REPO / "python" / "trainprof").rglob("*.py")}
    assert sources and sources <= names, f"missing from the wheel: {sorted(sources - names)}"
    assert any(re.fullmatch(r"trainprof/_core\.cpython-[^/]+\.so", n) for n in names)
    assert "trainprof/_bin/trainprof" in names
    assert "trainprof/py.typed" in names
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert f"\nVersion: {cmake_version()}\n" in metadata
    entry_points = zipfile.ZipFile(wheel).read(info.replace("METADATA", "entry_points.txt"))
    assert "trainprof = trainprof._cli:main" in entry_points.decode()
    assert not any(n.startswith(("tests/", "trainprof/tests")) for n in names)


def test_native_files_load_only_system_libraries_or_their_bundled_ones(venv: Path) -> None:
    site = site_packages(venv)
    natives = [p for d in (site / "trainprof", site / "trainprof.libs") if d.is_dir()
               for p in d.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]
    assert {p.name for p in natives} >= {"trainprof"}
    assert any(p.name.startswith("_core.") for p in natives)
    for native in natives:
        for line in run(["ldd", native]).stdout.splitlines():
            fields = line.split()
            soname = os.path.basename(fields[0])
            resolved = fields[2] if len(fields) > 2 and fields[1] == "=>" else ""
            if soname in SYSTEM_LIBRARIES:
                continue
            bundled = Path(os.path.realpath(resolved)).parent == (site / "trainprof.libs")
            assert bundled, \
                f"{native.name} loads {line.strip()}: neither a system library nor bundled"


def test_import_a_session_and_an_analysis_from_another_folder(venv: Path, tmp_path: Path,
                                                  elsewhere: Dict[str, str]) -> None:
    script = """
import importlib.metadata, importlib.util, json, sys
import trainprof
for heavy in ("numpy", "torch", "pandas"):
    assert importlib.util.find_spec(heavy) is None, heavy + " is visible: not a fresh venv"
    assert heavy not in sys.modules
try:
    import trainprof.torch
except ImportError as e:
    torch_error = str(e)
with trainprof.Session(name="wheel", output_dir="runs", overrides=["output.print=false"]) as s:
    s.batch_size = 4
    s.stage("train")
    for _ in range(3):
        with trainprof.scope("run_training_batch", kind="loop"):
            pass
        s.step()
analysis = trainprof.analyze(sys.argv[1])
try:
    analysis.table(analysis.tables[0][1])
except ImportError as e:
    pandas_error = str(e)
print(json.dumps({"file": trainprof.__file__, "version": trainprof.__version__,
                  "dist": importlib.metadata.version("trainprof"), "torch_error": torch_error,
                  "run_dir": s.report.run_dir, "run_id": s.report.run_id,
                  "sections": analysis.sections, "pandas_error": pandas_error}))
"""
    out = json.loads(run([venv, "-c", script, TRACE], cwd=tmp_path, env=elsewhere).stdout)
    assert out["file"].startswith(str(site_packages(venv)))
    assert out["version"] == out["dist"] == cmake_version()
    assert "trainprof.torch needs PyTorch" in out["torch_error"]
    assert "torch" in out["torch_error"]
    assert (Path(tmp_path, out["run_dir"]) / "report.json").is_file()
    assert out["run_id"]  # recorded in the SQLite history bundled with the extension
    assert "overview" in out["sections"]  # the C++ analysis, in-process, without pandas
    assert "pandas" in out["pandas_error"]


def test_the_trainprof_command_analyses_a_trace(venv: Path, tmp_path: Path,
                                                elsewhere: Dict[str, str]) -> None:
    command = venv.parent / "trainprof"
    assert command.is_file()
    elsewhere["PATH"] = f"{venv.parent}:{elsewhere.get('PATH', '/usr/bin:/bin')}"
    version = run(["trainprof", "--version"], cwd=tmp_path, env=elsewhere).stdout
    assert cmake_version() in version
    run(["trainprof", "analyze", TRACE, "--run-dir", "out"], cwd=tmp_path, env=elsewhere)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["kind"] == "analyze"
    assert report["meta"]["events"] == 3 and report["meta"]["devices"] == "A100"
    listed = run(["trainprof", "runs", "list"], cwd=tmp_path, env=elsewhere).stdout
    assert "analyze" in listed
    profile = subprocess.run(["trainprof", "profile"], cwd=tmp_path, env=elsewhere,
                             capture_output=True, text=True)
    assert profile.returncode != 0
    assert "pip package does not have it" in profile.stderr


def test_pip_show_and_uninstall(wheel: Path, tmp_path: Path, elsewhere: Dict[str, str]) -> None:
    python = make_venv(tmp_path / "env")
    pip_install(python, wheel)
    shown = run([python, "-m", "pip", "show", "trainprof"]).stdout
    assert f"Version: {cmake_version()}" in shown
    site = site_packages(python)
    assert (site / "trainprof").is_dir() and (python.parent / "trainprof").is_file()
    run([python, "-m", "pip", "uninstall", "-y", "trainprof"])
    left = [p.name for p in site.iterdir() if p.name.startswith("trainprof")]
    assert left == []
    assert not (python.parent / "trainprof").exists()
    gone = subprocess.run([python, "-c", "import trainprof"], cwd=tmp_path, env=elsewhere,
                          capture_output=True)
    assert gone.returncode != 0
