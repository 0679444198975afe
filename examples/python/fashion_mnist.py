#!/usr/bin/env python3
"""The PyTorch profiler tutorial's CNN on Fashion-MNIST, a plain PyTorch loop profiled by
trainprof: the time report (Lightning's action names), the speed report, the run folder with
report.html and trace.json, and a row in the run history (`trainprof runs list`).

    python3 examples/python/fashion_mnist.py                       # 2 epochs of 300 batches
    python3 examples/python/fashion_mnist.py --epochs 1 --limit-train-batches 50 --device cuda
    python3 examples/python/fashion_mnist.py --config my.yaml      # trainprof keys: docs/config.md

The data is Debian's dataset-fashion-mnist (IDX files, gzip), read with gzip and numpy.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from typing import Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import trainprof
import trainprof.torch

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


class Cnn(nn.Module):
    """The tutorial's CIFAR10CNN with one input channel (28 -> 24 -> 12 -> 8 -> 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def read_idx(path: str) -> np.ndarray:
    """An IDX file (gzip or plain): magic 0x0000TTDD, DD dimensions of big-endian int32."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    dims = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {body.size} bytes of data for shape {shape}")
    return body.reshape(shape)


def load_split(data_dir: str, prefix: str) -> TensorDataset:
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.2860) / 0.3530  # Fashion-MNIST's mean and standard deviation
    return TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


def train_epoch(args, model, opt, loader, session, device) -> None:
    session.stage("train")
    model.train()
    with trainprof.scope("run_training_epoch", kind="loop"):
        for i, (x, y) in enumerate(trainprof.timed_iter(loader)):
            with trainprof.scope("run_training_batch", kind="loop"):
                x, y = x.to(device), y.to(device)
                with trainprof.scope("training_step", kind="step"):
                    with trainprof.scope("[Model].forward", kind="forward"):
                        out = model(x)
                    loss = F.cross_entropy(out, y)
                with trainprof.scope("optimizer_zero_grad", kind="optimizer"):
                    opt.zero_grad(set_to_none=True)
                with trainprof.scope("backward", kind="backward"):
                    loss.backward()
                with trainprof.scope("optimizer_step", kind="optimizer"):
                    opt.step()
            session.step()
            if args.limit_train_batches and i + 1 >= args.limit_train_batches:
                break


def validate(args, model, loader, session, device) -> Tuple[float, float]:
    session.stage("validation")
    model.eval()
    loss_sum, correct, seen = 0.0, 0, 0
    batches = trainprof.timed_iter(loader, action="[_EvaluationLoop].val_next")
    with trainprof.scope("run_validation", kind="loop"), torch.no_grad():
        for i, (x, y) in enumerate(batches):
            x, y = x.to(device), y.to(device)
            with trainprof.scope("validation_step", kind="step"):
                with trainprof.scope("[Model].forward", kind="forward"):
                    out = model(x)
                loss_sum += float(F.cross_entropy(out, y, reduction="sum"))
                correct += int((out.argmax(1) == y).sum())
                seen += len(y)
            session.step()
            if args.limit_val_batches and i + 1 >= args.limit_val_batches:
                break
    return loss_sum / max(seen, 1), correct / max(seen, 1)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--limit-train-batches", type=int, default=300, help="per epoch; 0 = all")
    p.add_argument("--limit-val-batches", type=int, default=10, help="per epoch; 0 = all")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--val-batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=0, help="DataLoader num_workers")
    p.add_argument("--config", help="trainprof YAML config (docs/config.md)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="trainprof key, as trainprof profile --set (repeatable)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--data", default=DEFAULT_DATA, help="folder of the IDX files")
    p.add_argument("--output-dir", "-o", help="output.dir (default runs)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"fashion_mnist.py: --device {args.device}, but torch sees no CUDA GPU",
              file=sys.stderr)
        return 2
    try:
        train_set, val_set = load_split(args.data, "train"), load_split(args.data, "t10k")
    except (OSError, ValueError) as e:
        print(f"fashion_mnist.py: {e} (Debian: apt-get install dataset-fashion-mnist)",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    device = torch.device(args.device)
    model = Cnn().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.workers)
    val_loader = DataLoader(val_set, batch_size=args.val_batch_size, num_workers=args.workers)
    try:
        session = trainprof.Session(args.config, name="fashion-mnist-py",
                                    output_dir=args.output_dir, overrides=args.set)
    except (trainprof.ConfigError, trainprof.TrainprofError) as e:
        print(f"fashion_mnist.py: {e}", file=sys.stderr)
        return 2
    with session:
        # memory.*, model_summary.*, snapshot.* (--set memory.enabled=true ...): operators,
        # memory and the model summary from PyTorch itself; nothing runs while they are off.
        trainprof.torch.attach(session, model)
        session.set_meta("model", "CIFAR10CNN (PyTorch profiler tutorial), 1x28x28 input")
        session.set_meta("dataset", f"Fashion-MNIST ({args.data})")
        session.set_meta("device", str(device))
        session.set_meta("torch", torch.__version__)
        session.dataloader_workers = args.workers
        for key in ("epochs", "batch_size", "limit_train_batches", "workers"):
            session.add_config(f"training.{key}", getattr(args, key))
        for epoch in range(args.epochs):
            session.epoch = epoch
            session.batch_size = args.batch_size
            train_epoch(args, model, opt, train_loader, session, device)
            session.batch_size = args.val_batch_size
            val_loss, acc = validate(args, model, val_loader, session, device)
            print(f"epoch {epoch + 1}/{args.epochs}: val loss {val_loss:.3f}, "
                  f"accuracy {100 * acc:.1f} %", file=sys.stderr)
        session.set_meta("result", f"validation loss {val_loss:.4f}, accuracy {100 * acc:.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
