"""Issue 59, item 3, on a GPU: time.cuda_events against torch.cuda.Event timing done by hand.

The Fashion-MNIST CNN trains on the GPU; each step's forward, backward and optimizer step is a
trainprof scope with time.cuda_events on, and inside it a pair of torch.cuda.Event is recorded on
the same (default) stream around the same work. trainprof's GPU total per action (the report's
gpu_time table) must be within 2 % of the hand-timed total. Prints both and the verdict; exits 1
when an action is off by more.

    python3 scripts/gpu/cuda_events_check.py OUT_DIR --data FASHION_MNIST_DIR
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import trainprof


def load(data: str, split: str, n: int):
    def idx(name):
        raw = gzip.open(os.path.join(data, name)).read()
        dims = raw[3]
        return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims)
    x = idx(f"{split}-images-idx3-ubyte.gz")[: n * 784].reshape(n, 1, 28, 28)
    y = idx(f"{split}-labels-idx1-ubyte.gz")[:n]
    return (torch.from_numpy(x.astype(np.float32) / 255.0),
            torch.from_numpy(y.astype(np.int64)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--data", required=True)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=256)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("cuda_events_check: torch sees no GPU", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    x, y = load(a.data, "train", a.steps * a.batch_size)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(64 * 24 * 24, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    hand = {}  # action -> list of (start, end) torch.cuda.Event

    class Both:
        """A trainprof scope with a torch.cuda.Event pair recorded just inside it."""
        def __init__(self, name, kind):
            self.scope, self.name = trainprof.scope(name, kind=kind), name
        def __enter__(self):
            self.scope.__enter__()
            self.start = torch.cuda.Event(enable_timing=True)
            self.start.record()
        def __exit__(self, *exc):
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            hand.setdefault(self.name, []).append((self.start, end))
            return self.scope.__exit__(*exc)

    session = trainprof.Session(None, name="cuda-events-check", output_dir=a.out,
                                overrides=["time.cuda_events=true", "memory.enabled=false",
                                           "system.enabled=false"])
    with session:
        for i in range(a.steps):
            xb = x[i * a.batch_size:(i + 1) * a.batch_size].to(dev, non_blocking=True)
            yb = y[i * a.batch_size:(i + 1) * a.batch_size].to(dev, non_blocking=True)
            with Both("[Model].forward", "forward"):
                loss = F.cross_entropy(model(xb), yb)
            with Both("backward", "backward"):
                loss.backward()
            with Both("optimizer_step", "optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            session.step()
        torch.cuda.synchronize()
    report = json.load(open(os.path.join(session.report.run_dir, "report.json")))
    ours = {}
    for s in report["sections"]:
        if s["id"] == "gpu_time":
            for row in s["tables"][0]["rows"]:
                ours[row["action"]] = (row["calls"], row["gpu_total_s"])
    worst = 0.0
    print(f"{'action':<18} {'calls':>5} {'trainprof':>12} {'by hand':>12} {'diff':>8}")
    for name, pairs in hand.items():
        by_hand = sum(s.elapsed_time(e) for s, e in pairs) / 1e3
        calls, total = ours.get(name, (0, float("nan")))
        diff = abs(total - by_hand) / by_hand * 100 if by_hand > 0 else float("nan")
        worst = max(worst, diff if diff == diff else 100.0)
        print(f"{name:<18} {calls:>5} {total * 1e3:>10.3f}ms {by_hand * 1e3:>10.3f}ms {diff:>7.2f}%")
    print(f"largest difference {worst:.2f} % (target: within 2 %): "
          f"{'met' if worst <= 2.0 else 'NOT met'}")
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
