#!/usr/bin/env python3
"""Writes a PyTorch CUDA allocator snapshot (the dict torch.cuda.memory._snapshot() returns) from
a generated training history whose answers are known by construction, with Python's pickle.

Device 0 runs `steps` training steps, each annotated ProfilerStep#k with forward / backward /
optimizer inside (external_annotations, as record_function writes them):
  forward:   `layers` activations of `act` bytes each        (stack forward_layer)
  backward:  `layers` gradients of `grad` bytes; the activations are freed
  optimizer: one temporary of `tmp` bytes, freed; the gradients freed; and one block of `leak`
             bytes that is never freed                        (stack leaky_cache)
Frames lists are shared between an alloc and its frees and frame dicts between stacks, as in
PyTorch's snapshots, so the pickle refers back to them through its memo.
Device 1 holds an out-of-memory event with fragmentation: one 20 MiB segment, four 5 MiB blocks,
the second and fourth freed, then a request of 8 MiB fails (10 MiB free, largest block 5 MiB).

  make_snapshot.py out.pickle --steps 500 --layers 999     # ~1,000,000 events (the benchmark)
  make_snapshot.py out.pickle --answers answers.json       # the known answers beside it
"""

from __future__ import annotations

import argparse
import json
import pickle
from typing import Any, Dict, List, Optional

MIB = 1 << 20
SEGMENT = 64 * MIB


def _frame(filename: str, line: int, name: str) -> Dict[str, Any]:
    return {"filename": filename, "line": line, "name": name}


_CPP = [_frame("??", 0, "c10::cuda::CUDACachingAllocator::malloc"), _frame("??", 0, "at::empty_cuda")]
_OUTER = [_frame("/work/train.py", 50, "train_step"), _frame("/work/train.py", 90, "<module>")]


def _stack(name: str, file: str, line: int, cpp: bool) -> List[Dict[str, Any]]:
    return (_CPP if cpp else []) + [_frame(file, line, name)] + _OUTER


class History:
    """Device 0's events, with the bookkeeping that gives the known answers."""

    def __init__(self, cpp_frames: bool) -> None:
        self.events: List[Dict[str, Any]] = []
        self.annotations: List[Dict[str, Any]] = []
        self.t = 1_000_000
        self.allocated = 0
        self.reserved = 0
        self.live: Dict[int, Dict[str, Any]] = {}  # addr -> alloc entry
        self.segments: List[List[int]] = []  # [base, size, used]
        self.curve: List[tuple] = []  # (time, allocated) after each event
        self.cpp = cpp_frames
        self.stacks = {n: _stack(n, f"/work/{f}", l, cpp_frames) for n, f, l in (
            ("forward_layer", "model.py", 12), ("backward_grad", "autograd.py", 30),
            ("optimizer_tmp", "optim.py", 77), ("leaky_cache", "cache.py", 5))}

    def _tick(self) -> int:
        self.t += 1
        return self.t

    def _event(self, e: Dict[str, Any]) -> None:
        self.events.append(e)
        self.curve.append((e["time_us"], self.allocated))

    def _address(self, size: int) -> int:
        seg = self.segments[-1] if self.segments else None
        if seg is None or seg[2] + size > seg[1]:
            base = 0x7F0000000000 + len(self.segments) * (SEGMENT * 4)
            seg = [base, max(SEGMENT, size), 0]
            self.segments.append(seg)
            self.reserved += seg[1]
            self._event({"action": "segment_alloc", "addr": base, "size": seg[1], "stream": 0,
                         "time_us": self._tick(), "frames": []})
        addr = seg[0] + seg[2]
        seg[2] += size
        return addr

    def alloc(self, stack: str, size: int) -> int:
        addr = self._address(size)
        self.allocated += size
        e = {"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": self._tick(),
             "frames": list(self.stacks[stack])}
        self.live[addr] = e
        self._event(e)
        return addr

    def free(self, addr: int) -> None:
        e = self.live.pop(addr)
        self.allocated -= e["size"]
        for action in ("free_requested", "free_completed"):
            # The same frames list object as the alloc's: pickled once, then a memo reference.
            self._event({"action": action, "addr": addr, "size": e["size"], "stream": 0,
                         "time_us": self._tick(), "frames": e["frames"]})

    def mark(self, name: str, stage: str) -> None:
        self.annotations.append({"name": name, "stage": stage, "device": 0,
                                 "time_us": self._tick()})


def generate(steps: int, layers: int, act: int, grad: int, tmp: int, leak: int,
             cpp_frames: bool = True, drop_first: int = 0) -> tuple:
    h = History(cpp_frames)
    phase_bytes: Dict[str, int] = {}
    peak = (-1, 0, None)  # allocated, time, live-by-stack at the peak
    for k in range(steps):
        h.mark(f"ProfilerStep#{k}", "START")
        h.mark("forward", "START")
        acts = [h.alloc("forward_layer", act) for _ in range(layers)]
        h.mark("forward", "END")
        h.mark("backward", "START")
        grads = []
        for a in acts:
            grads.append(h.alloc("backward_grad", grad))
            h.free(a)
        h.mark("backward", "END")
        h.mark("optimizer", "START")
        h.free(h.alloc("optimizer_tmp", tmp))
        for g in grads:
            h.free(g)
        h.alloc("leaky_cache", leak)
        h.mark("optimizer", "END")
        h.mark(f"ProfilerStep#{k}", "END")
        if k == 0:
            first_step = (len(h.curve), h.t)
    events = h.events[drop_first:]
    curve = h.curve[drop_first:]
    # Known answers: from the bookkeeping above, not from the analysis.
    t0 = events[0]["time_us"]
    peak_i = max(range(len(curve)), key=lambda i: (curve[i][1], -i))
    live_at_peak: Dict[str, int] = {}
    alive: Dict[int, Dict[str, Any]] = {}
    for e in h.events[: drop_first + peak_i + 1]:
        if e["action"] == "alloc":
            alive[e["addr"]] = e
        elif e["action"] == "free_requested":
            alive.pop(e["addr"], None)
    for e in alive.values():
        name = e["frames"][2 if cpp_frames else 0]["name"]
        live_at_peak[name] = live_at_peak.get(name, 0) + e["size"]
    for name in ("forward", "backward", "optimizer"):
        phase_bytes[name] = {"forward": layers * act, "backward": layers * grad,
                             "optimizer": tmp + leak}[name] * steps
    first_peak = max(a for _, a in h.curve[: first_step[0]])
    answers = {
        "first_step_peak": first_peak,
        "first_step_end_s": (first_step[1] - h.events[0]["time_us"]) / 1e6,
        "peak_allocated": curve[peak_i][1],
        "peak_time_s": (curve[peak_i][0] - t0) / 1e6,
        "live_at_peak": live_at_peak,
        "phase_allocated_bytes": phase_bytes,
        "leak_bytes": leak * (steps - 1),
        "leak_steps": steps - 1,
        "end_allocated": h.allocated,
        "end_reserved": h.reserved,
        "events_device0": len(events),
    }
    segments = _segments(h) + _oom_segments()
    snapshot = {
        "segments": segments,
        "device_traces": [events, _oom_history()],
        "external_annotations": [a for a in h.annotations
                                 if not drop_first or a["time_us"] >= t0],
        "allocator_settings": {"expandable_segments": False},
    }
    answers.update(OOM_ANSWERS)
    return snapshot, answers


def _segments(h: History) -> List[Dict[str, Any]]:
    """The end state: every segment with its live blocks and the free gaps between them."""
    out = []
    for base, size, _used in h.segments:
        blocks = []
        cursor = base
        for addr in sorted(a for a in h.live if base <= a < base + size):
            e = h.live[addr]
            if addr > cursor:
                blocks.append({"address": cursor, "size": addr - cursor, "requested_size": 0,
                               "state": "inactive", "frames": []})
            blocks.append({"address": addr, "size": e["size"], "requested_size": e["size"],
                           "state": "active_allocated", "frames": e["frames"]})
            cursor = addr + e["size"]
        if cursor < base + size:
            blocks.append({"address": cursor, "size": base + size - cursor, "requested_size": 0,
                           "state": "inactive", "frames": []})
        allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        out.append({"device": 0, "address": base, "total_size": size, "stream": 0,
                    "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                    "allocated_size": allocated, "active_size": allocated,
                    "requested_size": allocated, "blocks": blocks})
    return out


OOM_BASE = 0x7E0000000000
OOM_ANSWERS = {"oom_requested": 8 * MIB, "oom_allocated": 10 * MIB, "oom_reserved": 20 * MIB,
               "oom_largest_free": 5 * MIB, "oom_device_free": 1 * MIB,
               "oom_inactive_split_blocks": 2}


def _oom_history() -> List[Dict[str, Any]]:
    frames = _stack("make_buffer", "/work/buffers.py", 8, cpp=False)
    t = 2_000_000
    ev = [{"action": "segment_alloc", "addr": OOM_BASE, "size": 20 * MIB, "stream": 0,
           "time_us": t, "frames": []}]
    for i in range(4):
        ev.append({"action": "alloc", "addr": OOM_BASE + i * 5 * MIB, "size": 5 * MIB,
                   "stream": 0, "time_us": t + 1 + i, "frames": frames})
    for i in (1, 3):
        for action in ("free_requested", "free_completed"):
            ev.append({"action": action, "addr": OOM_BASE + i * 5 * MIB, "size": 5 * MIB,
                       "stream": 0, "time_us": t + 10 + i, "frames": frames})
    ev.append({"action": "oom", "size": 8 * MIB, "device_free": 1 * MIB, "stream": 0,
               "time_us": t + 20, "frames": _stack("grow", "/work/buffers.py", 20, cpp=False)})
    return ev


def _oom_segments() -> List[Dict[str, Any]]:
    blocks = [{"address": OOM_BASE + i * 5 * MIB, "size": 5 * MIB, "requested_size": 5 * MIB,
               "state": "inactive" if i in (1, 3) else "active_allocated", "frames": []}
              for i in range(4)]
    return [{"device": 1, "address": OOM_BASE, "total_size": 20 * MIB, "stream": 0,
             "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
             "allocated_size": 10 * MIB, "active_size": 10 * MIB, "requested_size": 10 * MIB,
             "blocks": blocks}]


def main(argv: Optional[List[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--act", type=int, default=4 * MIB)
    p.add_argument("--grad", type=int, default=2 * MIB)
    p.add_argument("--tmp", type=int, default=1 * MIB)
    p.add_argument("--leak", type=int, default=512 * 1024)
    p.add_argument("--protocol", type=int, default=pickle.DEFAULT_PROTOCOL)
    p.add_argument("--drop-first", type=int, default=0,
                   help="drop the first N entries, as PyTorch's ring buffer (max_entries) does")
    p.add_argument("--python-only", action="store_true", help="no C++ frames")
    p.add_argument("--answers", help="write the known answers here (JSON)")
    a = p.parse_args(argv)
    snap, answers = generate(a.steps, a.layers, a.act, a.grad, a.tmp, a.leak,
                             cpp_frames=not a.python_only, drop_first=a.drop_first)
    with open(a.out, "wb") as f:
        pickle.dump(snap, f, protocol=a.protocol)
    if a.answers:
        with open(a.answers, "w", encoding="utf-8") as f:
            json.dump(answers, f, indent=1)


if __name__ == "__main__":
    main()
