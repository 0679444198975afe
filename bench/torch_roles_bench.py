#!/usr/bin/env python3
"""What memory by role costs a recorded step: the GPT-style model of
python/tests/test_torch_roles.py (4 blocks, d_model 256, AdamW, batch 8 x 64 tokens) trained
on the CPU, each step once with the role sampler's hooks in place (forward, optimizer step,
step end: four samples) and once without, alternated, for --pairs pairs. Reported: the median
per-pair ratio of the step times, and one sample's cost measured alone.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/torch_roles_bench.py
    ... --pairs 3        # a few seconds, to check that it runs

Figures and the command are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, List, Tuple

import torch

from trainprof._torch_memory import ActivationCounter
from trainprof._torch_roles import RoleSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python", "tests"))
from test_torch_roles import Gpt, batch, loss_of  # noqa: E402


class NullCore:
    """Takes what the sampler sends and drops it (the C++ collector only appends a row)."""

    def add_role_sample(self, *args: Any) -> None:
        pass

    def set_role_modules(self, *args: Any) -> None:
        pass

    def add_line(self, *args: Any) -> None:
        pass


def one_step(model: Any, opt: Any, sampler: Any) -> float:
    t0 = time.perf_counter()
    loss_of(model, batch()).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    if sampler is not None:
        sampler.step_ended(sampler._step)
    return time.perf_counter() - t0


def pair(model: Any, opt: Any, on_first: bool) -> Tuple[float, float]:
    """(with roles, without) for two steps, in the order given."""
    off = 0.0 if on_first else one_step(model, opt, None)
    sampler = RoleSampler(model, opt, ActivationCounter(model), NullCore())
    sampler.start(0, (0, 1))
    on = one_step(model, opt, sampler)  # its step end closes the window: hooks gone
    return on, off if not on_first else one_step(model, opt, None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=21)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        one_step(model, opt, None)
    ratios: List[float] = []
    offs: List[float] = []
    for i in range(args.pairs):
        on, off = pair(model, opt, on_first=i % 2 == 0)
        ratios.append(on / off)
        offs.append(off)
    sampler = RoleSampler(model, opt, ActivationCounter(model), NullCore())
    sampler.start(0, (0, 1))
    t0 = time.perf_counter()
    for _ in range(200):
        sampler._sample("end of step")
    one = (time.perf_counter() - t0) / 200
    sampler.close()
    step = statistics.median(offs)
    print(f"step without roles: median {step * 1e3:.2f} ms over {args.pairs} pairs")
    print(f"with roles / without: median ratio {statistics.median(ratios):.4f} "
          f"(quartiles {statistics.quantiles(ratios, n=4)[0]:.4f}-"
          f"{statistics.quantiles(ratios, n=4)[2]:.4f})")
    print(f"one sample alone: {one * 1e6:.0f} us; four a step: {400 * one / step:.2f} % of a step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
