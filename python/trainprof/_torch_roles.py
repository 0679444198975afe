"""Memory by role in the training loop, exact: by tensor identity, at the phase boundaries of the
recorded steps.

The parameters (and buffers) are the model's, the gradients their ``.grad``, the optimizer state
the tensors in ``optimizer.state`` (AdamW's two moments and its step counters), the activations
the storages autograd saved for backward (counted by :class:`ActivationCounter`), the input the
tensors handed to the model's forward. Each storage counts once. On a GPU the allocator's total
(``torch.cuda.memory_allocated``) gives the rest: temporaries and whatever else is live. On the
CPU PyTorch keeps no allocator total, so the rest is absent, never 0."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch

from trainprof._torch_memory import ActivationCounter, _storage, _storage_bytes

Optimizers = Union[None, torch.optim.Optimizer, Sequence[torch.optim.Optimizer],
                   Callable[[], Any]]

# The moments sampled, in the order of a step.
# "start of optimizer.step" is the end of the backward in a plain loop; with a closure
# (Lightning's automatic optimization) the forward and backward run inside the step.
FORWARD, STEP_BEGINS, OPTIMIZER, STEP_END = ("end of forward", "start of optimizer.step",
                                             "end of optimizer.step", "end of step")
_MODEL_ITSELF = "(the model itself)"


def _bytes_by_storage(tensors: Iterable[Any], skip: Dict[int, int]) -> Dict[int, int]:
    out: Dict[int, int] = {}
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        s = _storage(t)
        key = s.data_ptr()
        if key not in skip and key not in out:
            out[key] = _storage_bytes(s)
    return out


def _autocast_dtype(named: List[Tuple[str, torch.Tensor]]) -> str:
    """The dtype autocast runs in on the parameters' device ("bfloat16"), "" when it is off."""
    on_cuda = any(p.is_cuda for _, p in named)
    if on_cuda and torch.is_autocast_enabled():
        return str(torch.get_autocast_gpu_dtype()).replace("torch.", "")
    if not on_cuda and torch.is_autocast_cpu_enabled():
        return str(torch.get_autocast_cpu_dtype()).replace("torch.", "")
    return ""


def _owner(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else _MODEL_ITSELF


class RoleSampler:
    """Samples parameters, gradients, optimizer state, activations and input at the end of the
    model's forward, at the start and end of the optimizer's step and at the end of each step of
    ``window``; sends each sample, and the per-module figures of the last one after an optimizer
    step, to the collector."""

    def __init__(self, model: Optional[torch.nn.Module], optimizers: Optimizers,
                 activations: ActivationCounter, core: Any) -> None:
        self._model = model
        self._given = optimizers
        self._optimizers: List[torch.optim.Optimizer] = []
        self._activations = activations
        self._core = core
        self._step = 0
        self._input: Dict[int, int] = {}
        self._handles: List[Any] = []
        self._wrapped: List[torch.optim.Optimizer] = []
        self._modules: Optional[List[Tuple[str, int, int, int]]] = None
        self._autocast = ""  # the dtype autocast ran the forward in, "" when it was off
        self._window = (0, 0)  # no recorded steps until start()
        self._on = False

    # ---- the window ----------------------------------------------------------------------------

    def start(self, first_step: int, window: Tuple[int, int]) -> None:
        self._window = window
        self._step = first_step
        if window[0] <= first_step < window[1]:
            self._enter()

    def step_ended(self, step: int, live: bool = False) -> None:
        """`step` ended: its sample in the window, and (`live`) the live view's figures, from
        one count."""
        if self._on or live:
            self._step_end(step, live)
        self._input = {}
        self._step = step + 1
        if not self._on and self._step == self._window[0]:
            self._enter()
        elif self._on and self._step >= self._window[1]:
            self.close()

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        for opt in self._wrapped:
            del opt.step  # the class's own step again
        self._wrapped = []
        if self._on and self._modules is not None:
            self._core.set_role_modules(self._modules)
        if self._on and self._autocast:
            fp32 = [p for _, p in self._named_parameters() if p.dtype == torch.float32]
            self._core.set_role_autocast(self._autocast, sum(_bytes_by_storage(fp32, {}).values()))
        self._on = False

    def _enter(self) -> None:
        self._on = True
        self._optimizers = self._resolve()
        if self._model is not None:
            self._handles.append(self._model.register_forward_pre_hook(self._forward_begins))
            self._handles.append(self._model.register_forward_hook(self._forward_ends))
        for opt in self._optimizers:
            self._hook_optimizer(opt)
        if not self._optimizers:
            self._core.add_line(
                "roles_without_optimizer",
                "memory by role: no optimizer was given to trainprof.torch.attach(..., optimizer=)"
                ", so optimizer state is not measured and the optimizer's step is not a phase")

    def _resolve(self) -> List[torch.optim.Optimizer]:
        given = self._given() if callable(self._given) else self._given
        if given is None:
            return []
        if isinstance(given, torch.optim.Optimizer):
            return [given]
        return [o for o in given if isinstance(o, torch.optim.Optimizer)]

    def _hook_optimizer(self, opt: torch.optim.Optimizer) -> None:
        if hasattr(opt, "register_step_pre_hook"):  # torch 2.0 and later
            self._handles.append(opt.register_step_pre_hook(lambda *a: self._sample(STEP_BEGINS)))
            self._handles.append(opt.register_step_post_hook(lambda *a: self._after_step()))
            return
        step = opt.step  # torch 1.13: the bound method, wrapped on this instance until close()

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self._sample(STEP_BEGINS)
            out = step(*args, **kwargs)
            self._after_step()
            return out

        opt.step = wrapped
        self._wrapped.append(opt)

    # ---- the samples ---------------------------------------------------------------------------

    def _forward_begins(self, module: Any, args: Any) -> None:
        flat = list(args) + [v for a in args if isinstance(a, (list, tuple)) for v in a]
        self._input.update(_bytes_by_storage(flat, {}))

    def _forward_ends(self, module: Any, args: Any, output: Any) -> None:
        self._sample(FORWARD)
        if self._on and not self._autocast:
            self._autocast = _autocast_dtype(self._named_parameters())

    def _after_step(self) -> None:
        self._sample(OPTIMIZER)
        self._modules = self._by_module()

    def _named_parameters(self) -> List[Tuple[str, torch.Tensor]]:
        named = list(self._model.named_parameters()) if self._model is not None else []
        seen = {id(p) for _, p in named}
        for i, opt in enumerate(self._optimizers):
            for g in opt.param_groups:
                named += [(f"(optimizer {i})", p) for p in g["params"] if id(p) not in seen]
        return named

    def _state_tensors(self, params: Iterable[torch.Tensor]) -> List[List[torch.Tensor]]:
        """Per parameter (in the order given), the optimizer's state tensors for it."""
        out = []
        for p in params:
            ts: List[torch.Tensor] = []
            for opt in self._optimizers:
                ts += [v for v in opt.state.get(p, {}).values() if isinstance(v, torch.Tensor)]
            out.append(ts)
        return out

    def _figures(self) -> Tuple[int, int, Optional[int], Optional[int], Dict[int, int]]:
        """(parameters, gradients, optimizer state or None without an optimizer, the allocator's
        total or None, the weights' storages) now."""
        named = self._named_parameters()
        params = [p for _, p in named]
        buffers = list(self._model.buffers()) if self._model is not None else []
        weights = _bytes_by_storage(params + buffers, {})
        grads = _bytes_by_storage([p.grad for p in params], weights)
        state = _bytes_by_storage([t for ts in self._state_tensors(params) for t in ts],
                                  {**weights, **grads})
        return (sum(weights.values()), sum(grads.values()),
                sum(state.values()) if self._optimizers else None, self._allocated(params),
                weights)

    def _sample(self, at: str, figures: Optional[Tuple[Any, ...]] = None) -> None:
        if not self._on:
            return
        weights, grads, state, allocated, storages = figures or self._figures()
        forward = at == FORWARD
        act = self._activations.bytes if forward else None
        inp = sum(v for k, v in self._input.items() if k not in storages) if forward else None
        self._core.add_role_sample(self._step, at, weights, grads, state, act, inp, allocated)

    def _step_end(self, step: int, live: bool) -> None:
        if not self._on:
            self._optimizers = self._resolve()  # outside the window: the live view's alone
        figures = self._figures()
        self._sample(STEP_END, figures)
        if live:
            weights, grads, state, allocated, _ = figures
            self._core.set_live_roles(step, weights, grads, state, allocated)

    @staticmethod
    def _allocated(params: Sequence[torch.Tensor]) -> Optional[int]:
        devices = {p.device for p in params if p.device.type == "cuda"}
        if len(devices) != 1:
            return None  # on the CPU (no allocator total) or over several GPUs
        return int(torch.cuda.memory_allocated(devices.pop()))

    def _by_module(self) -> List[Tuple[str, int, int, int]]:
        """(module, parameter, gradient, optimizer state) bytes by the module owning each
        parameter, each storage once."""
        named = self._named_parameters()
        seen: Dict[int, int] = {}
        rows: Dict[str, List[int]] = {}
        states = self._state_tensors([p for _, p in named])
        for (name, p), ts in zip(named, states):
            row = rows.setdefault(_owner(name), [0, 0, 0])
            for i, tensors in enumerate(([p], [p.grad], ts)):
                got = _bytes_by_storage(tensors, seen)
                seen.update(got)
                row[i] += sum(got.values())
        return [(m, *r) for m, r in rows.items()]
