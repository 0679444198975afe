#!/usr/bin/env python3
"""A/B of one trainprof command between two builds, in one run: the two CLIs alternate (ABBA
pairs, so drift and warm caches fall on both sides alike), and the medians and their ratio are
printed.

    /usr/bin/python3 bench/ab_cli.py --a OLD/trainprof --b build/release/src/cli/trainprof \\
        --rounds 15 -- analyze ../shared/data/traces/trace_diff_control --db off --format json

The command's output goes to /dev/null; `{run_dir}` in the arguments becomes a fresh folder per
run. Figures and commands are in docs/perf-log/.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List


def run_once(cli: str, args: List[str]) -> float:
    """Wall seconds of one run; exits on failure with its stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = [cli] + [a.replace("{run_dir}", os.path.join(tmp, "run")) for a in args]
        t0 = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"ab_cli: {' '.join(argv)} failed ({done.returncode}): "
                 f"{done.stderr.decode(errors='replace').strip()}")
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", required=True, help="the baseline CLI")
    p.add_argument("--b", required=True, help="the CLI under test")
    p.add_argument("--rounds", type=int, default=15, help="ABBA pairs (default 15)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- then the command's arguments")
    o = p.parse_args()
    args = o.args[1:] if o.args[:1] == ["--"] else o.args
    if not args:
        p.error("give the command after --")
    for cli in (o.a, o.b):
        if not os.access(cli, os.X_OK):
            p.error(f"{cli}: not an executable")
    run_once(o.a, args), run_once(o.b, args)  # warm the page cache
    times: Dict[str, List[float]] = {"a": [], "b": []}
    ratios: List[float] = []
    for r in range(o.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        got = {side: run_once(o.a if side == "a" else o.b, args) for side in order}
        for side in order:
            times[side].append(got[side])
        ratios.append(got["b"] / got["a"])
        print(f"\rround {r + 1}/{o.rounds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    ma, mb = statistics.median(times["a"]), statistics.median(times["b"])
    print(f"a: median {ma * 1e3:.1f} ms (min {min(times['a']) * 1e3:.1f})  {o.a}")
    print(f"b: median {mb * 1e3:.1f} ms (min {min(times['b']) * 1e3:.1f})  {o.b}")
    print(f"b/a: median of paired ratios {statistics.median(ratios):.3f}, "
          f"of medians {mb / ma:.3f} ({o.rounds} pairs)")


if __name__ == "__main__":
    main()
