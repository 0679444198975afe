"""Activation memory (saved-tensor hooks), CUDA memory per step and the allocator snapshot."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Set, Tuple

import torch

_OUTSIDE = "(outside the model's forward)"


def _storage(t: torch.Tensor) -> Any:
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def _storage_bytes(s: Any) -> int:
    return int(s.nbytes()) if hasattr(s, "nbytes") else int(s.size() * s.element_size())


class ActivationCounter:
    """Counts the storages autograd saves for backward during the recorded steps: parameters
    excluded, each storage once per step, attributed to the top-level module whose forward
    saved it."""

    def __init__(self, model: Optional[torch.nn.Module]) -> None:
        self._model = model
        self._params: Set[int] = set()
        self._seen: Set[int] = set()
        self._bytes = 0
        self._tensors = 0
        self._by_module: Dict[str, int] = {}
        self._current = _OUTSIDE
        # Saved by the model's own forward, between its children (functional calls).
        self._own = f"({type(model).__name__}.forward itself)" if model is not None else _OUTSIDE
        self._hooks: Optional[Any] = None
        self._handles = []
        self._core: Any = None

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        if isinstance(t, torch.nn.Parameter):
            return t
        s = _storage(t)
        key = s.data_ptr()
        if key in self._params or key in self._seen:
            return t
        self._seen.add(key)
        n = _storage_bytes(s)
        self._bytes += n
        self._tensors += 1
        self._by_module[self._current] = self._by_module.get(self._current, 0) + n
        return t

    def _enter(self) -> None:
        if self._model is not None:
            self._params = {_storage(p).data_ptr() for p in self._model.parameters()}
            for name, child in self._model.named_children():
                self._handles.append(child.register_forward_pre_hook(self._pre(name)))
                self._handles.append(child.register_forward_hook(self._post(self._own)))
            self._handles.append(self._model.register_forward_pre_hook(self._pre(self._own)))
            self._handles.append(self._model.register_forward_hook(self._post(_OUTSIDE)))
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()

    def _pre(self, name: str) -> Any:
        def hook(module: Any, args: Any) -> None:
            self._current = name
        return hook

    def _post(self, after: str) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            self._current = after
        return hook

    def start(self, core: Any, first_step: int, window: Tuple[int, int]) -> None:
        self._core = core
        if window[0] <= first_step < window[1]:
            self._enter()

    def step_ended(self, step: int, window: Tuple[int, int]) -> None:
        if self._hooks is not None and window[0] <= step < window[1]:
            by_module = sorted(self._by_module.items(), key=lambda kv: -kv[1])
            self._core.add_activation(step, self._bytes, self._tensors, by_module)
        self._seen.clear()
        self._bytes = self._tensors = 0
        self._by_module = {}
        nxt = step + 1
        if self._hooks is None and nxt == window[0]:
            self._enter()
        elif self._hooks is not None and nxt >= window[1]:
            self.close()

    def close(self) -> None:
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None
        for h in self._handles:
            h.remove()
        self._handles = []


class CudaMemoryStats:
    """torch.cuda.memory_stats() after every step; the peaks are reset so each step has its own."""

    def __init__(self, core: Any) -> None:
        self._core = core
        torch.cuda.reset_peak_memory_stats()

    def step_ended(self, step: int) -> None:
        s = torch.cuda.memory_stats()
        g = lambda key: int(s.get(key, 0))  # noqa: E731
        self._core.add_cuda_memory(
            step, g("allocated_bytes.all.current"), g("allocated_bytes.all.peak"),
            g("reserved_bytes.all.current"), g("reserved_bytes.all.peak"),
            g("active_bytes.all.current"), g("active_bytes.all.peak"),
            g("num_alloc_retries"), g("num_ooms"))
        torch.cuda.reset_peak_memory_stats()


SNAPSHOT_NAME = "memory_snapshot.pickle"


class SnapshotRecorder:
    """torch.cuda.memory._record_memory_history from step ``warmup`` for ``steps`` steps, then
    ``_dump_snapshot`` into the run folder and the digest into the report."""

    def __init__(self, core: Any, run_dir: str, warmup: int, steps: int) -> None:
        self._core = core
        self._path = os.path.join(run_dir, SNAPSHOT_NAME)
        self._window = (warmup, warmup + steps)
        self._recording = False
        self._ok = self._available()
        if self._ok and warmup == 0:
            self._begin()

    def _available(self) -> bool:
        mem = getattr(torch.cuda, "memory", None)
        if not torch.cuda.is_available():
            self._core.add_line(
                "snapshot_needs_cuda",
                "snapshot.enabled is true, but torch.cuda.is_available() is False (CPU-only torch "
                "or no GPU): no memory_snapshot.pickle was written")
            return False
        if mem is None or not hasattr(mem, "_record_memory_history") or not hasattr(
                mem, "_dump_snapshot"):
            self._core.add_line(
                "snapshot_needs_torch_2_1",
                f"snapshot.enabled is true, but torch {torch.__version__} has no "
                "torch.cuda.memory._dump_snapshot (PyTorch 2.1 or later): no "
                "memory_snapshot.pickle was written")
            return False
        return True

    def _begin(self) -> None:
        torch.cuda.memory._record_memory_history(max_entries=200000)
        self._recording = True

    def step_began(self, step: int) -> None:
        if not self._ok:
            return
        if not self._recording and step == self._window[0]:
            self._begin()
        elif self._recording and step >= self._window[1]:
            self.finish()

    def finish(self) -> None:
        if not self._recording:
            return
        self._recording = False
        snapshot = torch.cuda.memory._snapshot()
        torch.cuda.memory._dump_snapshot(self._path)
        torch.cuda.memory._record_memory_history(enabled=None)
        self._core.add_snapshot(*_snapshot_digest_input(snapshot), SNAPSHOT_NAME)


def _frames_text(frames: Any, depth: int = 3) -> str:
    out = []
    for f in (frames or [])[:depth]:
        out.append(f"{f.get('name', '?')} ({os.path.basename(str(f.get('filename', '?')))}:"
                   f"{f.get('line', '?')})")
    return " <- ".join(out)


def _snapshot_digest_input(snapshot: Dict[str, Any]) -> Tuple[Any, Any]:
    """The snapshot's segments and blocks, and its OOM events, as plain tuples."""
    blocks = []
    for seg in snapshot.get("segments", []):
        addr = int(seg.get("address", 0))
        for b in seg.get("blocks", []):
            blocks.append((int(seg.get("device", 0)), addr, int(seg.get("total_size", 0)),
                           str(seg.get("segment_type", "")), int(b.get("size", 0)),
                           str(b.get("state", "")), _frames_text(b.get("frames"))))
    ooms = []
    for dev, trace in enumerate(snapshot.get("device_traces", [])):
        for e in trace:
            if e.get("action") == "oom":
                ooms.append((dev, int(e.get("size", 0)), _frames_text(e.get("frames"), 6)))
    return blocks, ooms
