"""Forward hooks that capture torchinfo's columns for every module in one forward pass."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import torch


def _tensors(value: Any) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


class _Seen:
    __slots__ = ("input_shape", "output_shape", "output_bytes")

    def __init__(self) -> None:
        self.input_shape: Optional[List[int]] = None
        self.output_shape: Optional[List[int]] = None
        self.output_bytes = 0


class ModelSummaryHooks:
    """Hooks every module of ``model``; the first forward of the root fills the summary, sends
    it to the core and removes every hook, so later steps run without them."""

    def __init__(self, model: torch.nn.Module, core: Any) -> None:
        self._model = model
        self._core = core
        self._modules: List[Tuple[str, torch.nn.Module]] = list(model.named_modules())
        self._seen: Dict[int, _Seen] = {}
        self._input_bytes = 0
        self._handles: List[Any] = []
        for _, m in self._modules:
            self._handles.append(m.register_forward_hook(self._hook))
        self._handles.append(model.register_forward_pre_hook(self._root_pre))
        self._handles.append(model.register_forward_hook(self._root_done))

    def _root_pre(self, module: torch.nn.Module, args: Any) -> None:
        self._input_bytes = sum(t.element_size() * t.nelement() for t in _tensors(args))

    def _hook(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        seen = self._seen.setdefault(id(module), _Seen())
        ins, outs = _tensors(args), _tensors(output)
        if seen.input_shape is None and ins:
            seen.input_shape = list(ins[0].shape)  # the first call's input
        if outs:  # the last call's output
            seen.output_shape = list(outs[0].shape)
            seen.output_bytes = sum(t.element_size() * t.nelement() for t in outs)

    def _root_done(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        self.close()
        self._core.set_model_summary(type(self._model).__name__, self._rows(), self._input_bytes, [])

    def _rows(self) -> List[Tuple[Any, ...]]:
        index: Dict[int, int] = {}
        for _, m in self._modules:
            for i, (_, child) in enumerate(m.named_children(), start=1):
                index.setdefault(id(child), i)
        rows = []
        for name, m in self._modules:
            own = list(m.parameters(recurse=False))
            seen = self._seen.get(id(m))
            has = seen is not None and seen.output_shape is not None
            rows.append((
                name,
                type(m).__name__,
                0 if name == "" else name.count(".") + 1,
                index.get(id(m), 0),
                next(m.children(), None) is None,
                has,
                (seen.input_shape or []) if has else [],
                seen.output_shape if has else [],
                seen.output_bytes if has else 0,
                sum(p.numel() for p in own),
                sum(p.numel() for p in own if p.requires_grad),
                sum(p.numel() * p.element_size() for p in own),
            ))
        return rows

    def close(self) -> None:
        """Removes every hook (also when the summary batch never ran)."""
        for h in self._handles:
            h.remove()
        self._handles = []
