"""TrainprofProfiler's cost on trainer.fit against Lightning's SimpleProfiler and no profiler.

Each run is a fresh process (so no run warms another's caches), the three kinds alternate
(so the machine's load falls on all of them alike), and each prints the wall time of
trainer.fit alone; the wall time until its reports are all written (TrainprofProfiler writes
its run folder on a thread of its own after fit returns: reading profiler.report waits for it;
the other kinds are done when fit returns); and the CPU time of both (all threads of the
process, measured once the reports are written: steadier than the wall time on a machine that
is busy with something else). Prints the medians (with the quartiles, to show the noise), the
profilers' costs over no profiler, and TrainprofProfiler's ratio to SimpleProfiler both of the
medians and as the median of each round's ratio. Each TrainprofProfiler run must have written
its whole run folder once profiler.report is read (checked).

    PYTHONPATH=<lightning src>:build/release/python python3 bench/lightning_overhead.py --rounds 11
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

CHILD = r"""
import os, sys, time, warnings
warnings.filterwarnings("ignore")
import torch, lightning
from torch.utils.data import DataLoader, TensorDataset
kind, batches, workdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(1)

class Tiny(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 1)
    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)
    def _register_sharded_tensor_state_dict_hooks_if_available(self):
        pass  # torch 1.13's torch.distributed._shard does not import under Python 3.11

g = torch.Generator().manual_seed(0)
data = TensorDataset(torch.randn(batches * 8, 32, generator=g), torch.randn(batches * 8, 1, generator=g))
if kind == "trainprof":
    from trainprof.lightning import TrainprofProfiler
    profiler = TrainprofProfiler(name="bench", output_dir=workdir,
                                 overrides={"output.print": False})
else:
    profiler = None if kind == "none" else kind
trainer = lightning.Trainer(max_epochs=2, profiler=profiler, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, num_sanity_val_steps=0,
                            default_root_dir=workdir)
t0, c0 = time.perf_counter(), time.process_time()
trainer.fit(Tiny(), DataLoader(data, batch_size=8))
seconds = time.perf_counter() - t0
if kind == "trainprof":
    run_dir = profiler.report.run_dir  # waits for the run folder
    done, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(" ".join(sorted(os.listdir(run_dir))))
else:
    done, cpu = seconds, time.process_time() - c0
print(seconds, done, cpu)
"""

# What a TrainprofProfiler run folder holds with the bench's (default) outputs.
RUN_FILES = {"report.html", "report.json", "summary.txt", "trace.json", "time_report.csv",
             "speed_report.csv", "training_rate.csv"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9, help="runs of each kind")
    ap.add_argument("--batches", type=int, default=400, help="training batches per epoch")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    kinds = ["none", "simple", "trainprof"]
    times: Dict[str, List[float]] = {k: [] for k in kinds}
    done: Dict[str, List[float]] = {k: [] for k in kinds}
    cpu: Dict[str, List[float]] = {k: [] for k in kinds}
    env = dict(os.environ, TRAINPROF_DB="off")
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for k in kinds if r % 2 == 0 else reversed(kinds):
                out = subprocess.run([sys.executable, "-c", CHILD, k, str(args.batches), work],
                                     capture_output=True, text=True, env=env, check=True)
                lines = out.stdout.strip().splitlines()
                wall_s, done_s, cpu_s = lines[-1].split()
                times[k].append(float(wall_s))
                done[k].append(float(done_s))
                cpu[k].append(float(cpu_s))
                if k == "trainprof" and not RUN_FILES <= set(lines[-2].split()):
                    sys.exit(f"trainprof's run folder lacks {RUN_FILES - set(lines[-2].split())}")
    print(f"trainer.fit, 2 epochs x {args.batches} batches, {args.rounds} fresh processes each "
          "(medians):")
    med = _print_medians("wall time (until fit returns)", times, 2 * args.batches)
    done_med = _print_medians("wall time until the reports are written", done, 2 * args.batches)
    cpu_med = _print_medians("CPU time (fit and reports)", cpu, 2 * args.batches)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"times": times, "medians": med, "done": done, "done_medians": done_med,
                       "cpu": cpu, "cpu_medians": cpu_med}, f, indent=1)


def _print_medians(what: str, times: Dict[str, List[float]], steps: int) -> Dict[str, float]:
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f" {what}:")
    for k, v in times.items():
        extra = "" if k == "none" else (
            f"  {100 * (med[k] / med['none'] - 1):+.1f} % over none, "
            f"{1e6 * (med[k] - med['none']) / steps:+.1f} µs per batch")
        q1, _, q3 = statistics.quantiles(v, n=4)
        print(f"  {k:<10} {med[k]:.3f} s (quartiles {q1:.3f}-{q3:.3f}){extra}")
    # The three kinds of a round run back to back: their ratio is steadier than the medians'
    # when the machine's speed drifts from round to round.
    paired = statistics.median(t / s for t, s in zip(times["trainprof"], times["simple"]))
    print(f"  trainprof / simple: {med['trainprof'] / med['simple']:.3f} "
          f"(median of the rounds' ratios: {paired:.3f})")
    return med


if __name__ == "__main__":
    main()
