#!/usr/bin/env python3
"""Writes a world of N Kineto rank traces with a culprit, noise and unsynchronised clocks.

For `mpirun -n P trainprof analyze OUT --mpi` at scale (docs/performance.md, "Ten thousand
ranks"). Every rank runs the same steps: a data-loader range, KERNELS GEMM kernels each launched
by an aten::mm, and one data-parallel all-reduce at the step's end (process group "dp", args as
PyTorch 2.x writes them on an ncclDevKernel_*). With --tp T, ranks form tensor-parallel groups of
T ("tp0", "tp1", ...) with an all-reduce after the first half of the kernels, so two groups'
collectives interleave. Rank CULPRIT's kernels run SLOW times longer; every rank's compute has
+-NOISE of jitter per step; the all-reduce ends at the same moment on every rank of its group
(the last arrival plus the transfer), so the others absorb the wait and the step times stay
equal. Each rank's clock is shifted by a random offset within +-CLOCK_MS. With --no-seq the
collectives carry no "Seq" (matching falls back to the order of issue). Nothing is committed.

  bench/make_world_traces.py OUT_DIR [--ranks 10000] [--mb 0.5] [--culprit 5] [--slow 1.25]
        [--noise 0.02] [--clock-ms 50] [--tp 0] [--no-seq] [--seed 1]
"""
import argparse
import json
import os
import random

BASE_US = 1_712_000_000_000.0  # 2024, in microseconds
KERNEL_US = 150.0
TRANSFER_US = {"dp": 400.0, "tp": 60.0}


def compute_factors(a):
    """Per rank and step, how much longer than KERNEL_US its kernels run."""
    rng = random.Random(a.seed)
    out = []
    for r in range(a.ranks):
        slow = a.slow if r == a.culprit else 1.0
        out.append([slow * (1 + rng.uniform(-a.noise, a.noise)) for _ in range(a.steps)])
    return out


def group_ends(a, factors, kernels):
    """Per step, when each group's collectives end, from the step's start (all ranks agree)."""
    half = kernels // 2
    tp_end, dp_end = [], []
    for s in range(a.steps):
        tp = {}
        if a.tp:
            for r in range(a.ranks):
                g = r // a.tp
                tp[g] = max(tp.get(g, 0.0), 100.0 + half * KERNEL_US * factors[r][s])
            tp = {g: t + TRANSFER_US["tp"] for g, t in tp.items()}
        last = 0.0
        for r in range(a.ranks):
            start = tp[r // a.tp] if a.tp else 100.0
            left = kernels - half if a.tp else kernels
            last = max(last, start + left * KERNEL_US * factors[r][s])
        tp_end.append(tp)
        dp_end.append(last + TRANSFER_US["dp"])
    return tp_end, dp_end


class Rank:
    def __init__(self, rank, skew):
        self.ev, self.corr, self.skew, self.rank = [], 1, skew, rank
        self.seq = {}

    def x(self, name, cat, pid, tid, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
             "ts": round(ts + self.skew, 3), "dur": round(dur, 3)}
        if args:
            e["args"] = args
        self.ev.append(e)

    def kernel(self, t_host, t_gpu, dur):
        c = self.corr
        self.corr += 1
        self.x("aten::mm", "cpu_op", 1, 1, t_host, 8.0, {"External id": c})
        self.x("cudaLaunchKernel", "cuda_runtime", 1, 1, t_host + 1.0, 5.0,
               {"correlation": c, "External id": c})
        self.x("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "kernel", 0, 7,
               t_gpu, dur, {"correlation": c, "External id": c, "device": 0, "stream": 7})

    def collective(self, a, group, size, t_host, t_gpu, end):
        c = self.corr
        self.corr += 1
        seq = self.seq.get(group, 0)
        self.seq[group] = seq + 1
        args = {"correlation": c, "device": 0, "stream": 9, "Collective name": "allreduce",
                "In msg nelems": 1 << 22, "Out msg nelems": 1 << 22, "dtype": "BFloat16",
                "Group size": size, "Process Group Name": group}
        if not a.no_seq:
            args["Seq"] = seq
        self.x("record_param_comms", "cpu_op", 1, 1, t_host, 10.0)
        self.x("cudaLaunchKernel", "cuda_runtime", 1, 1, t_host + 1.0, 5.0, {"correlation": c})
        self.x("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               "kernel", 0, 9, t_gpu, end - t_gpu, args)


def rank_events(a, r, skew, factors, tp_end, dp_end, kernels):
    out = Rank(r, skew)
    step_us = dp_end[0] + 200.0
    half = kernels // 2 if a.tp else kernels
    for s in range(a.steps):
        t = BASE_US + s * step_us
        out.x(f"ProfilerStep#{s}", "user_annotation", 1, 1, t, step_us - 10.0)
        out.x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation",
              1, 1, t + 1.0, 40.0)
        gpu, dur = t + 100.0, KERNEL_US * factors[r][s]
        for k in range(kernels):
            if a.tp and k == half:
                out.collective(a, f"tp{r // a.tp}", a.tp, gpu - 30.0, gpu,
                               t + tp_end[s][r // a.tp])
                gpu = t + tp_end[s][r // a.tp]
            out.kernel(gpu - 30.0, gpu, dur)
            gpu += dur
        out.collective(a, "dp", a.ranks, gpu - 30.0, gpu, t + dp_end[s])
    return out.ev


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--ranks", type=int, default=10000)
    ap.add_argument("--mb", type=float, default=0.5)
    ap.add_argument("--culprit", type=int, default=5, help="-1: no slow rank (the control)")
    ap.add_argument("--slow", type=float, default=1.25)
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--clock-ms", type=float, default=50.0)
    ap.add_argument("--tp", type=int, default=0)
    ap.add_argument("--no-seq", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    kernels = 40
    a.steps = max(1, int(a.mb * 1e6 / (kernels * 3 * 160 + 1000)))
    factors = compute_factors(a)
    tp_end, dp_end = group_ends(a, factors, kernels)
    rng = random.Random(a.seed + 1)
    os.makedirs(a.out_dir, exist_ok=True)
    for r in range(a.ranks):
        skew = rng.uniform(-a.clock_ms, a.clock_ms) * 1000.0
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                     "totalGlobalMem": 85_000_000_000, "computeMajor": 9,
                                     "computeMinor": 0, "numSms": 132}],
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": a.ranks},
               "traceEvents": rank_events(a, r, skew, factors, tp_end, dp_end, kernels)}
        with open(os.path.join(a.out_dir, f"rank{r}.pt.trace.json"), "w") as f:
            json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {a.ranks} ranks of {a.steps} steps to {a.out_dir}")


if __name__ == "__main__":
    main()
