#!/usr/bin/env python3
"""The in-process analysis of a torch.profiler trace by trainprof.torch: Session.finish() with
the trace handed to the C++ core (read, analysed, its overview/GPU/HTA sections added) against
the same finish() without one, medians of alternated runs.

    bench/make_long_trace.py ../shared/data/traces/trace_diff_test/test.json.gz \\
        /tmp/long100m.json --mb 100
    PYTHONPATH=build/release/python /usr/bin/python3 bench/torch_trace_inprocess.py \\
        /tmp/long100m.json

Figures and the command are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Optional

import trainprof
from trainprof import _core

QUIET = {"output.print": False, "output.csv": False, "output.trace": False}


def finish_s(trace: Optional[str]) -> float:
    s = trainprof.Session(run_dir=tempfile.mkdtemp() + "/r", db="off", overrides=QUIET)
    collector = _core.TorchCollector(s._core)
    if trace is not None:
        collector.set_trace(trace)
    s.step()
    t0 = time.perf_counter()
    s.finish()
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", help="a Kineto trace (.json or .json.gz)")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    without, with_trace = [], []
    for _ in range(a.runs):
        without.append(finish_s(None))
        with_trace.append(finish_s(a.trace))
    w, t = statistics.median(without), statistics.median(with_trace)
    print(f"finish() without a trace {w:.3f} s, with {a.trace} {t:.3f} s: "
          f"in-process analysis {t - w:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
