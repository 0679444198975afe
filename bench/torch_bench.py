#!/usr/bin/env python3
"""Benchmarks of trainprof.torch, each against its peer in the same run (alternated trials).

1. The operator report: a 20-step loop of examples/python's CNN with a 1 + 5 step window, run
   plain, under torch.profiler alone (the same activities, record_shapes, profile_memory, its
   trace written by tensorboard_trace_handler), and under a trainprof Session with
   trainprof.torch (memory.enabled; inside the loop it writes the trace as torch's handler does,
   and compresses it and builds the report in finish()). Reported: what each adds to the plain
   loop, as % of its wall time, and how long finish() took.
2. The model summary's hooks after the summary batch: step time of a model that was summarised
   against the same model never hooked (0 % expected: the hooks are removed).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/torch_bench.py
    ... --smoke            # a few seconds, to check that it runs

Figures and the command are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List

import torch

import trainprof
import trainprof.torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET = {"output.print": False, "output.csv": False, "output.trace": False}
FINISH_S: List[float] = []  # trainprof Session.finish() times


def load_cnn() -> type:
    path = os.path.join(ROOT, "examples", "python", "fashion_mnist.py")
    spec = importlib.util.spec_from_file_location("fashion_mnist", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.Cnn


def loop(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, steps: int,
         after_step: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        after_step()
    return time.perf_counter() - t0


def plain(model, opt, x, steps, tmp) -> float:
    return loop(model, opt, x, steps, lambda: None)


def torch_profiler(model, opt, x, steps, tmp) -> float:
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=5, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(tmp),
        record_shapes=True, profile_memory=True)
    prof.start()
    t = loop(model, opt, x, steps, prof.step)
    prof.stop()
    return t


def trainprof_torch(model, opt, x, steps, tmp) -> float:
    s = trainprof.Session(run_dir=os.path.join(tmp, f"run{time.perf_counter_ns()}"), db="off",
                          overrides={**QUIET, "memory.enabled": True, "memory.warmup": 1,
                                     "memory.steps": 5, "memory.record_shapes": True})
    trainprof.torch.attach(s, model)
    t = loop(model, opt, x, steps, s.step)
    t0 = time.perf_counter()
    s.finish()
    FINISH_S.append(time.perf_counter() - t0)
    return t


def bench_operators(steps: int, trials: int) -> Dict[str, float]:
    cnn = load_cnn()
    torch.manual_seed(0)
    model = cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 1, 28, 28)
    runs: Dict[str, List[float]] = {"plain": [], "torch.profiler": [], "trainprof.torch": []}
    fns = {"plain": plain, "torch.profiler": torch_profiler, "trainprof.torch": trainprof_torch}
    with tempfile.TemporaryDirectory() as tmp:
        plain(model, opt, x, 3, tmp)  # warm caches
        for _ in range(trials):
            for name, fn in fns.items():
                runs[name].append(fn(model, opt, x, steps, tmp))
    base = statistics.median(runs["plain"])
    out = {"plain_s": base}
    for name in ("torch.profiler", "trainprof.torch"):
        out[f"{name} adds %"] = 100 * (statistics.median(runs[name]) - base) / base
    out["trainprof.torch beyond torch.profiler, % of the plain run"] = (
        out["trainprof.torch adds %"] - out["torch.profiler adds %"])
    out["trainprof finish() s"] = statistics.median(FINISH_S)
    return out


def bench_hooks(steps: int, trials: int) -> Dict[str, float]:
    cnn = load_cnn()
    torch.manual_seed(0)
    summarised, never = cnn(), cnn()
    s = trainprof.Session(db="off", run_dir=tempfile.mkdtemp(),
                          overrides={**QUIET, "model_summary.enabled": True})
    trainprof.torch.attach(s, summarised)
    x = torch.randn(64, 1, 28, 28)
    summarised(x)  # the summary batch: the hooks go
    opts = {m: torch.optim.SGD(m.parameters(), lr=0.01) for m in (summarised, never)}
    times: Dict[int, List[float]] = {id(summarised): [], id(never): []}
    for _ in range(trials):
        for m in (summarised, never):
            times[id(m)].append(loop(m, opts[m], x, steps, lambda: None))
    s.finish()
    a, b = statistics.median(times[id(summarised)]), statistics.median(times[id(never)])
    return {"after the summary vs never hooked, %": 100 * (a - b) / b}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes: check that it runs")
    a = p.parse_args()
    torch.set_num_threads(1)
    steps, trials = (8, 1) if a.smoke else (20, 9)
    print(f"torch {torch.__version__}, kineto {torch.autograd.kineto_available()}, "
          f"{steps} steps x {trials} trials, 1 thread")
    for title, fn in (("operator report", bench_operators), ("summary hooks", bench_hooks)):
        for k, v in fn(steps, trials).items():
            print(f"{title}: {k}: {v:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
