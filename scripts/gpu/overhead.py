"""Issue 59, item 2, on a GPU: the CUPTI collector's cost against torch.profiler's (Kineto).

The same CNN on Fashion-MNIST, trained on the GPU by `trainprof profile` (C++) and by
examples/python/fashion_mnist.py (Python), in rounds that alternate every configuration:

  cpp-none      memory.enabled=false: no profiler
  cpp-ops       the operator observer alone (memory.cuda_activity=off)
  cpp-cupti     the operator observer and the CUPTI collector (memory.cuda_activity=on)
  py-none       memory.enabled=false
  py-kineto     torch.profiler with CPU and CUDA activities over the same steps

Each run's median training step (speed section, training_rate table, warm-up left out) is read
from its report.json. The profilers' costs are each against its own language's no-profiler
median: cpp-cupti - cpp-none against py-kineto - py-none (the target: CUPTI's <= Kineto's).

    python3 scripts/gpu/overhead.py OUT_DIR --data FASHION_MNIST_DIR [--rounds 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = ["--set", "training.epochs=2", "--limit-train-batches", "90"]
WINDOW = ["--set", "memory.warmup=2", "--set", "memory.steps=150"]


def configs(cli: str, data: str):
    cpp = [cli, "profile", "--no-progress", "--db", "off", "--set", f"data.dir={data}",
           "--set", "training.device=cuda", "--set", "training.limit_val_batches=2"] + STEPS
    py = [sys.executable, os.path.join(ROOT, "examples/python/fashion_mnist.py"), "--device",
          "cuda", "--epochs", "2", "--limit-train-batches", "90", "--limit-val-batches", "2",
          "--data", data]
    return {
        "cpp-none": cpp + ["--set", "memory.enabled=false"],
        "cpp-ops": cpp + WINDOW + ["--set", "memory.cuda_activity=off"],
        "cpp-cupti": cpp + WINDOW + ["--set", "memory.cuda_activity=on"],
        "py-none": py + ["--set", "memory.enabled=false"],
        "py-kineto": py + ["--set", "memory.enabled=true"] + WINDOW,
    }


def median_step(run_dir: str) -> float:
    r = json.load(open(os.path.join(run_dir, "report.json")))
    for s in r["sections"]:
        if s["id"] != "speed":
            continue
        for t in s["tables"]:
            if t["id"] != "training_rate":
                continue
            rates = [row["batches_per_s"] for row in t["rows"]
                     if row.get("step", 0) >= 5 and row.get("batches_per_s")]
            return statistics.median(1.0 / x for x in rates)
    raise ValueError(f"{run_dir}: no training_rate table")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--data", required=True)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    cli = os.environ.get("TRAINPROF_CLI", "trainprof")
    steps = {name: [] for name in configs(cli, a.data)}
    for k in range(a.rounds):
        for name, cmd in configs(cli, a.data).items():
            out = os.path.join(a.out, f"{name}-{k}")
            flag = ["-o", out]
            done = subprocess.run(cmd + flag, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}: {done.stderr[-800:]}")
                continue
            run = os.path.join(out, sorted(os.listdir(out))[0])
            steps[name].append(median_step(run))
            print(f"round {k} {name:<10} median step {steps[name][-1] * 1e3:.3f} ms", flush=True)
    med = {n: statistics.median(v) for n, v in steps.items() if v}
    print("\nmedian step over the rounds (ms):",
          {n: round(v * 1e3, 3) for n, v in med.items()})
    if all(n in med for n in ("cpp-none", "cpp-cupti", "py-none", "py-kineto")):
        cupti = med["cpp-cupti"] / med["cpp-none"] - 1
        ops = med.get("cpp-ops", float("nan")) / med["cpp-none"] - 1
        kineto = med["py-kineto"] / med["py-none"] - 1
        print(f"observer alone +{ops * 100:.1f} %, observer + CUPTI +{cupti * 100:.1f} % "
              f"(C++); torch.profiler (Kineto) +{kineto * 100:.1f} % (Python)")
        print(f"target CUPTI's cost <= Kineto's: {'met' if cupti <= kineto else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
