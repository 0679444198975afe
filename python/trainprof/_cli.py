"""The `trainprof` command that `pip install` puts on PATH: it becomes the packaged binary.

The wheel carries the C++ command as trainprof/_bin/trainprof (analyze, diff, merge, run, runs,
compare, gate, export, dataset). `trainprof profile` needs `trainprof-profile`, the LibTorch
job, which only the CMake build makes (docs/python.md).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional


def binary_path() -> str:
    """Where the packaged `trainprof` binary is (it may be missing outside a wheel install)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "trainprof")


def main(argv: Optional[List[str]] = None) -> None:
    """Replaces this process with the binary, so signals and the exit status are its own."""
    args = sys.argv[1:] if argv is None else argv
    exe = binary_path()
    if not os.access(exe, os.X_OK):
        sys.exit(f"trainprof: {exe} is missing: this trainprof package was not installed with "
                 "pip (pip install .); the CMake build's command is build/release/src/cli/trainprof")
    os.execv(exe, ["trainprof", *args])
