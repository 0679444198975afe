"""Activation memory (saved-tensor hooks), CUDA memory per step and the allocator snapshot."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import torch

_OUTSIDE = "(outside the model's forward)"


def _storage(t: torch.Tensor) -> Any:
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def _storage_bytes(s: Any) -> int:
    return int(s.nbytes()) if hasattr(s, "nbytes") else int(s.size() * s.element_size())


class ActivationCounter:
    """Counts the storages autograd saves for backward during the recorded steps: parameters
    excluded, each storage once per step, attributed to the innermost module whose forward was
    running when it was saved (by its dotted path, "blocks.3.attn"). Modules called from a
    parent's forward are its children however they are called: from an ``nn.ModuleList`` in a
    Python loop, from an ``nn.Sequential``, or one by one."""

    def __init__(self, model: Optional[torch.nn.Module]) -> None:
        self._model = model
        self._params: Set[int] = set()
        self._seen: Set[int] = set()
        self._bytes = 0
        self._tensors = 0
        self._by_module: Dict[str, int] = {}
        self._running: List[str] = []  # the modules whose forward runs, innermost last
        # Saved by the model's own forward, between its children (functional calls).
        self._own = f"({type(model).__name__}.forward itself)" if model is not None else _OUTSIDE
        self._hooks: Optional[Any] = None
        self._handles = []
        self._core: Any = None

    @property
    def bytes(self) -> int:
        """The bytes saved for backward in the current step so far."""
        return self._bytes

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
        current = self._running[-1] if self._running else _OUTSIDE
        self._by_module[current] = self._by_module.get(current, 0) + n
        return t

    def _enter(self) -> None:
        if self._model is not None:
            self._params = {_storage(p).data_ptr() for p in self._model.parameters()}
            self._running = []
            for name, module in self._model.named_modules():
                label = name if name else self._own
                self._handles.append(module.register_forward_pre_hook(self._pre(label)))
                self._handles.append(module.register_forward_hook(self._post(label)))
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()

    def _pre(self, name: str) -> Any:
        def hook(module: Any, args: Any) -> None:
            self._running.append(name)
        return hook

    def _post(self, name: str) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            # Pop back to this module's entry: a child whose forward raised left no post hook.
            while self._running:
                if self._running.pop() == name:
                    break
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
