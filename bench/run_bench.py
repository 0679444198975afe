#!/usr/bin/env python3
"""Benchmarks of `trainprof run`, each against its peer in the same run.

1. Start-up: from launching a command to the command running, under `trainprof run` and
   launched directly (the command prints the CLOCK_MONOTONIC time it started at).
2. Sampling cost: a tree of 32 processes (a parent and 31 sleeping children) sampled at 10 Hz;
   the report's own "Sampler cost (CPU of one core)" (the sampler thread's CPU time / wall
   time), and the per-sample CPU time.

    /usr/bin/python3 bench/run_bench.py [--cli build/release/src/cli/trainprof] [--smoke]

Figures and the command are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAMP = [sys.executable, "-S", "-c", "import time; print(time.monotonic_ns())"]


def started_after_ns(argv: list) -> int:
    t0 = time.monotonic_ns()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1]) - t0


def bench_startup(cli: str, out: str, rounds: int) -> dict:
    run = [cli, "run", "-q", "--db", "off", "-o", out, "--"]
    direct, wrapped = [], []
    for _ in range(rounds):  # alternated, so both see the same machine
        direct.append(started_after_ns(STAMP))
        wrapped.append(started_after_ns(run + STAMP))
    return {"direct_ms": statistics.median(direct) / 1e6,
            "run_ms": statistics.median(wrapped) / 1e6,
            "added_ms": (statistics.median(wrapped) - statistics.median(direct)) / 1e6}


TREE = """
import subprocess, sys, time
kids = [subprocess.Popen(["sleep", "{seconds}"]) for _ in range(31)]
for k in kids: k.wait()
"""


def bench_tree(cli: str, out: str, seconds: float) -> dict:
    run_dir = os.path.join(out, "tree")
    subprocess.run([cli, "run", "-q", "--db", "off", "--run-dir", run_dir, "--set",
                    "system.interval_s=0.1", "--", sys.executable, "-c",
                    TREE.format(seconds=seconds)], check=True)
    with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    system = next(s for s in report["sections"] if s["id"] == "system")
    metrics = system["metrics"]
    series = next(t for t in system["tables"] if t["id"] == "system_timeseries")
    counts = [r["process_count"] for r in series["rows"] if r.get("process_count") is not None]
    return {"sampler_cpu_percent": metrics["sampler_cpu_percent"]["value"],
            "sample_cpu_ms": 1e3 * metrics["sample_cpu_s"]["value"],
            "samples": metrics["samples"]["value"], "max_processes": max(counts)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cli", default=os.path.join(ROOT, "build/release/src/cli/trainprof"))
    p.add_argument("--smoke", action="store_true", help="tiny sizes: check that it runs")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as out:
        s = bench_startup(a.cli, out, 3 if a.smoke else 21)
        print(f"command started {s['direct_ms']:.2f} ms after launch directly, "
              f"{s['run_ms']:.2f} ms under trainprof run: +{s['added_ms']:.2f} ms (medians)")
        t = bench_tree(a.cli, out, 1 if a.smoke else 10)
        print(f"{t['max_processes']} processes sampled at 10 Hz ({t['samples']} samples): "
              f"sampler {t['sampler_cpu_percent']:.2f} % of one core, "
              f"{t['sample_cpu_ms']:.2f} ms CPU per sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
