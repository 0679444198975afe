#!/usr/bin/env python3
"""trainprof.hta.TraceAnalysis against Holistic Trace Analysis' own, in one process.

For each trace folder: `TraceAnalysis(trace_dir=...)` and every breakdown both answer (temporal,
idle time with interval statistics, GPU kernels, comm/comp overlap, kernel launch stats, profiler
steps, queue length series, summary and time at a full queue; visualize off),
timed for HTA and for trainprof, alternating, `--repeat` times; the medians and their ratio.
Also how much of trainprof's time is building the DataFrames: every call on a constructed
TraceAnalysis against the in-process C++ analysis (`_core.analyze`, the constructor's work).

HTA is not a dependency: point --hta at its source (and its imports: pandas, numpy, networkx,
plotly) e.g. a `git archive` of github.com/facebookresearch/HolisticTraceAnalysis:

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_hta_bench.py \\
        --hta /tmp/hta_oracle --hta /tmp/hta_deps/root/usr/lib/python3/dist-packages \\
        ../shared/data/traces/trace_diff_control ../shared/data/traces/trace_diff_test
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from typing import Any, Callable, Dict, List


def every_call(analyzer: Any, ranks: List[int]) -> None:
    """Every breakdown both answer: HTA's five, then the profiler steps, the idle intervals'
    statistics and the queue-length family (issue 55)."""
    analyzer.get_temporal_breakdown(visualize=False)
    analyzer.get_idle_time_breakdown(ranks=ranks, visualize=False, show_idle_interval_stats=True)
    analyzer.get_gpu_kernel_breakdown(visualize=False)
    analyzer.get_comm_comp_overlap(visualize=False)
    analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    analyzer.get_profiler_steps()
    series = analyzer.get_queue_length_time_series(ranks=ranks)
    analyzer.get_queue_length_summary(ranks=ranks)
    analyzer.get_time_spent_blocked_on_full_queue(series, max_queue_length=1024)


def timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("traces", nargs="+", help="trace folders (one run each)")
    p.add_argument("--hta", action="append", default=[],
                   help="a folder to import HTA (and its dependencies) from; repeatable")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    sys.path[:0] = args.hta
    import pandas  # noqa: F401  (both need it; its import is not either's cost)

    from hta.trace_analysis import TraceAnalysis as HtaTraceAnalysis

    import trainprof
    from trainprof import _core
    from trainprof.hta import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.WARNING)
    print(f"trainprof {trainprof.__version__}; repeat {args.repeat}; medians in seconds")
    print(f"{'trace':28} {'HTA':>8} {'trainprof':>10} {'ratio':>7} {'analysis':>9} "
          f"{'frames':>8} {'frames/analysis':>16}")
    for folder in args.traces:
        runs: Dict[str, List[float]] = {"hta": [], "ours": [], "core": [], "frames": []}
        ranks = TraceAnalysis(trace_dir=folder)._analysis.ranks
        for _ in range(args.repeat):
            runs["hta"].append(timed(lambda: every_call(HtaTraceAnalysis(trace_dir=folder),
                                                        ranks)))
            runs["ours"].append(timed(lambda: every_call(TraceAnalysis(trace_dir=folder),
                                                         ranks)))
            runs["core"].append(timed(lambda: _core.analyze([folder], {"hta_compat": True},
                                                            True)))
            ours = TraceAnalysis(trace_dir=folder)
            runs["frames"].append(timed(lambda: every_call(ours, ranks)))
        m = {k: statistics.median(v) for k, v in runs.items()}
        name = folder.rstrip("/").split("/")[-1]
        print(f"{name:28} {m['hta']:8.3f} {m['ours']:10.3f} {m['hta'] / m['ours']:6.1f}x "
              f"{m['core']:9.3f} {m['frames']:8.4f} {100 * m['frames'] / m['core']:15.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
