#!/usr/bin/env python3
"""Writes N synthetic Kineto rank traces of about SIZE MB each, for timing multi-rank analysis.

Each rank has the same steps: CPU ops, launch calls, compute kernels, and one NCCL all-reduce
per step whose kernel carries today's collective args (Process Group Name, Seq, In/Out msg
nelems, dtype, Group size). Every rank has its own clock offset; rank SLOW computes 20 % longer,
so the others wait for it at each all-reduce. Nothing here comes from a real job: the traces
exist to time `trainprof analyze` on many ranks (docs/performance.md).

  bench/make_rank_traces.py OUT_DIR [--ranks 1000] [--mb 1.0] [--slow 3]
"""
import argparse
import json
import os

BASE_US = 1_712_000_000_000_000 // 1000


def rank_events(rank, ranks, steps, kernels, slow):
    ev = []
    corr = 1
    skew = rank * 1.234 - 2000.0
    t = BASE_US + 1000.0
    for s in range(steps):
        step_us = 10_000.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                   "pid": 1, "tid": 1, "ts": t + skew, "dur": step_us})
        gpu = t + 100.0
        compute = 6.0 * (1.2 if rank == slow else 1.0)
        for k in range(kernels):
            launch = t + 10.0 + k * 8.0
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                       "ts": launch - 1.0 + skew, "dur": 7.0, "args": {"External id": corr}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": launch + skew, "dur": 4.0,
                       "args": {"correlation": corr, "External id": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_64x64_nn", "pid": 0,
                       "tid": 7, "ts": gpu + skew, "dur": compute,
                       "args": {"correlation": corr, "External id": corr, "device": 0,
                                "stream": 7}})
            gpu += compute
            corr += 1
        end = t + 100.0 + kernels * 6.0 * 1.2 + 500.0  # every rank's all-reduce ends here
        launch = t + 10.0 + kernels * 8.0
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": launch + skew, "dur": 4.0, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel",
                   "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
                   "pid": 0, "tid": 9, "ts": gpu + skew, "dur": end - gpu,
                   "args": {"correlation": corr, "device": 0, "stream": 9,
                            "Collective name": "allreduce", "In msg nelems": 1 << 20,
                            "Out msg nelems": 1 << 20, "dtype": "Float",
                            "Group size": ranks, "Process Group Name": "0", "Seq": s}})
        corr += 1
        t += step_us + 100.0
    return ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--slow", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    kernels = 40
    one = len(json.dumps(rank_events(0, a.ranks, 1, kernels, a.slow)))
    steps = max(1, int(a.mb * 1e6 / one))
    for r in range(a.ranks):
        doc = {"schemaVersion": 1,
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": a.ranks},
               "traceEvents": rank_events(r, a.ranks, steps, kernels, a.slow)}
        with open(os.path.join(a.out, f"rank{r}.pt.trace.json"), "w") as f:
            json.dump(doc, f)


if __name__ == "__main__":
    main()
