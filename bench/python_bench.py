#!/usr/bin/env python3
"""Benchmarks of trainprof's Python package, each against its peer in the same run.

1. `with trainprof.scope(...)`: enter + exit, while recording and while the schedule skips,
   against a pure-Python timer that records as Lightning's SimpleProfiler does (a
   contextmanager whose start/stop store time.monotonic() and append the duration to a dict of
   lists).
2. The profiler's cost on examples/python/fashion_mnist.py's training loop: the same loop with
   a Session (time + speed reports on) and without one, alternated in one process.
3. With --live, the live view's cost on the same loop: a Session with live.mode lines (a
   snapshot a second) against one with the live view off, alternated.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_bench.py
    ... --smoke            # a few seconds, to check that it runs (CI)
    ... --skip-scopes --live   # the live view's cost only

Figures and the command are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from typing import Callable, Dict, Iterator, List

import trainprof

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SimpleProfilerLike:
    """Records like Lightning's SimpleProfiler: start/stop pairs of time.monotonic()."""

    def __init__(self) -> None:
        self.current_actions: Dict[str, float] = {}
        self.recorded_durations: Dict[str, List[float]] = defaultdict(list)

    def start(self, action_name: str) -> None:
        self.current_actions[action_name] = time.monotonic()

    def stop(self, action_name: str) -> None:
        end_time = time.monotonic()
        start_time = self.current_actions.pop(action_name)
        self.recorded_durations[action_name].append(end_time - start_time)

    @contextlib.contextmanager
    def profile(self, action_name: str) -> Iterator[str]:
        try:
            self.start(action_name)
            yield action_name
        finally:
            self.stop(action_name)


def per_call_ns(body: Callable[[int], None], inner: int, rounds: int) -> float:
    """Median over rounds of (time of `inner` calls - time of an empty loop) / inner."""
    def empty(n: int) -> None:
        for _ in range(n):
            pass

    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        empty(inner)
        t1 = time.perf_counter_ns()
        body(inner)
        t2 = time.perf_counter_ns()
        samples.append(((t2 - t1) - (t1 - t0)) / inner)
    return statistics.median(samples)


def bench_scopes(inner: int, rounds: int, out_dir: str) -> Dict[str, float]:
    scope = trainprof.scope

    def with_scope(n: int) -> None:
        for _ in range(n):
            with scope("bench"):
                pass

    peer = SimpleProfilerLike()

    def with_peer(n: int) -> None:
        for _ in range(n):
            with peer.profile("bench"):
                pass

    out = {}
    overrides = {"output.print": False, "output.trace": False, "output.csv": False,
                 "buffer.events_per_thread": 1 << 24}
    with trainprof.Session(name="bench-scope", overrides=overrides, db="off",
                           output_dir=out_dir):
        out["scope_recording_ns"] = per_call_ns(with_scope, inner, rounds)
    # Skipped steps: the schedule waits on every step (wait=1000000, active=1, repeat=1).
    skip = dict(overrides, **{"schedule.skip_first": 1000000})
    with trainprof.Session(name="bench-skip", overrides=skip, db="off",
                           output_dir=out_dir):
        out["scope_skipped_ns"] = per_call_ns(with_scope, inner, rounds)
    out["simpleprofiler_like_ns"] = per_call_ns(with_peer, inner, rounds)
    out["ratio"] = out["simpleprofiler_like_ns"] / out["scope_recording_ns"]
    return out


def load_example():
    path = os.path.join(ROOT, "examples", "python", "fashion_mnist.py")
    spec = importlib.util.spec_from_file_location("fashion_mnist", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_loop(batches: int, trials: int, out_dir: str, live: bool = False) -> Dict[str, float]:
    """Seconds per training step with and without a Session, alternated trial by trial; with
    `live`, a Session with the live view on against one with it off."""
    import torch
    from torch.utils.data import DataLoader

    ex = load_example()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    data = ex.load_split(ex.DEFAULT_DATA, "train")
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = ex.Cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    args = argparse.Namespace(limit_train_batches=batches)

    class NoSession:  # what the loop calls when nothing profiles it
        def stage(self, name: str) -> None: ...
        def step(self) -> None: ...

    overrides = {"output.print": False, "output.trace": False, "output.csv": False}
    on: List[float] = []
    off: List[float] = []
    ex.train_epoch(args, model, opt, loader, NoSession(), "cpu")  # warm-up
    for trial in range(2 * trials):
        profiled = trial % 2 == 0
        with_session = profiled or live
        chosen = dict(overrides, **{"live.mode": "lines" if live and profiled else "off"})
        session = (trainprof.Session(name="bench-loop", overrides=chosen, db="off",
                                     output_dir=out_dir)
                   if with_session else NoSession())
        if with_session:
            session.batch_size = 64
        t0 = time.perf_counter()
        ex.train_epoch(args, model, opt, loader, session, "cpu")
        seconds = (time.perf_counter() - t0) / batches
        if with_session:
            session.finish()
        (on if profiled else off).append(seconds)
    pairs = [a / b - 1.0 for a, b in zip(on, off)]
    return {"step_on_ms": 1e3 * statistics.median(on), "step_off_ms": 1e3 * statistics.median(off),
            "overhead_pct": 100.0 * statistics.median(pairs), "trials": trials}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes: check that it runs")
    p.add_argument("--skip-loop", action="store_true", help="only the scope benchmark")
    p.add_argument("--skip-scopes", action="store_true", help="no scope benchmark")
    p.add_argument("--live", action="store_true",
                   help="the loop with the live view on vs off (not with vs without trainprof)")
    a = p.parse_args()
    # The Sessions' run folders go into a folder of this run's own, removed at the end.
    with tempfile.TemporaryDirectory(prefix="trainprof-bench-") as out_dir:
        return run(a, out_dir)


def run(a: argparse.Namespace, out_dir: str) -> int:
    inner, rounds = (1000, 5) if a.smoke else (10000, 101)
    if not a.skip_scopes:
        s = bench_scopes(inner, rounds, out_dir)
        print(f"with trainprof.scope(...), recording      {s['scope_recording_ns']:8.1f} ns "
              "(median enter + exit)")
        print(f"with trainprof.scope(...), step skipped   {s['scope_skipped_ns']:8.1f} ns")
        print(f"SimpleProfiler-like pure-Python timer     {s['simpleprofiler_like_ns']:8.1f} ns")
        print(f"trainprof.scope is {s['ratio']:.1f}x faster")
    if not a.skip_loop:
        batches, trials = (5, 1) if a.smoke else (150, 10)
        l = bench_loop(batches, trials, out_dir, live=a.live)
        base, with_ = (("the live view off", "on") if a.live
                       else ("without trainprof", "with a Session (time + speed)"))
        print(f"fashion_mnist training step: {l['step_off_ms']:.3f} ms {base}, "
              f"{l['step_on_ms']:.3f} ms {with_}: "
              f"{l['overhead_pct']:+.2f} % (median of {l['trials']} alternated pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
