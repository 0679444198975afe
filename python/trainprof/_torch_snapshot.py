"""The CUDA allocator's snapshot for a Session: history recorded over ``snapshot.steps`` steps with
Python stacks, a ring buffer sized to keep whole steps, one file per rank, a snapshot written
when the allocator runs out of memory, and each file analysed by the C++ core into the report."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any, Dict, Optional, Tuple

import torch

DEFAULT_MAX_ENTRIES = 1_000_000  # torchtitan's; used when no step was measured
MIN_MAX_ENTRIES = 10_000
# alloc, free_requested and free_completed per block, plus a quarter for segment events and
# steps that allocate more than the measured one.
EVENTS_PER_ALLOCATION = 3 * 1.25


def _launcher_int(names: Tuple[str, ...], default: int) -> int:
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return default


def launcher_rank() -> int:
    """The rank torchrun or SLURM gave this process (RANK, SLURM_PROCID), else 0."""
    return _launcher_int(("RANK", "SLURM_PROCID"), 0)


def world() -> Tuple[int, int]:
    """(rank, world size): torch.distributed's when it is initialised, else the launcher's."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return launcher_rank(), _launcher_int(("WORLD_SIZE", "SLURM_NTASKS"), 1)


def file_name(rank: int, world_size: int, oom: bool = False) -> str:
    """memory_snapshot.pickle; memory_snapshot_rank{N}.pickle with several ranks; _oom before
    the rank for the snapshot written at an out-of-memory error."""
    stem = "memory_snapshot_oom" if oom else "memory_snapshot"
    return f"{stem}_rank{rank}.pickle" if world_size > 1 else f"{stem}.pickle"


def max_entries_for(allocations_per_step: Optional[int], steps: int) -> int:
    """A ring buffer that holds `steps` whole steps (and one more) of the measured size."""
    if allocations_per_step is None:
        return DEFAULT_MAX_ENTRIES
    need = math.ceil((steps + 1) * allocations_per_step * EVENTS_PER_ALLOCATION)
    return max(MIN_MAX_ENTRIES, need)


def _allocations() -> int:
    return int(torch.cuda.memory_stats().get("allocation.all.allocated", 0))


def _history_kwargs(stacks: str, max_entries: int) -> Dict[str, Any]:
    """The keywords this torch's _record_memory_history takes (2.1 added stacks/max_entries)."""
    wanted = {"enabled": "all", "context": "all", "stacks": stacks, "max_entries": max_entries}
    try:
        params = inspect.signature(torch.cuda.memory._record_memory_history).parameters
    except (TypeError, ValueError):
        return wanted
    return {k: v for k, v in wanted.items() if k in params}


class SnapshotRecorder:
    """torch.cuda.memory._record_memory_history from step ``warmup`` for ``steps`` steps, each
    step marked by a ``ProfilerStep#N`` record_function as torch.profiler marks it (the history
    keeps it as an annotation; the analysis takes overlapping marks of one step as one), then
    ``_dump_snapshot`` into the run folder; the core reads the file when the report is built."""

    def __init__(self, core: Any, run_dir: str, opts: Dict[str, Any]) -> None:
        self._core = core
        self._run_dir = run_dir
        self._rank, self._world = world()
        self._window = (opts["snapshot.warmup"], opts["snapshot.warmup"] + opts["snapshot.steps"])
        self._stacks = opts["snapshot.stacks"]
        self._max_entries = opts["snapshot.max_entries"]
        self._recording = False
        self._mark: Optional[Any] = None
        self._allocs_at: Optional[Tuple[int, int]] = None  # (step, allocations when it began)
        self._ok = self._available()
        if self._ok and opts["snapshot.oom"]:
            self._attach_oom_observer()
        if self._ok and self._window[0] == 0:
            self._begin(None)

    def _available(self) -> bool:
        mem = getattr(torch.cuda, "memory", None)
        if not torch.cuda.is_available():
            self._core.add_line(
                "snapshot_needs_cuda",
                "snapshot.enabled is true, but torch.cuda.is_available() is False (CPU-only torch "
                "or no GPU): no memory snapshot was written")
            return False
        if mem is None or not hasattr(mem, "_record_memory_history") or not hasattr(
                mem, "_dump_snapshot"):
            self._core.add_line(
                "snapshot_needs_torch_2_1",
                f"snapshot.enabled is true, but torch {torch.__version__} has no "
                "torch.cuda.memory._dump_snapshot (PyTorch 2.1 or later): no memory snapshot "
                "was written")
            return False
        return True

    @property
    def path(self) -> str:
        return os.path.join(self._run_dir, file_name(self._rank, self._world))

    def _begin(self, allocations_per_step: Optional[int]) -> None:
        entries = self._max_entries or max_entries_for(allocations_per_step,
                                                       self._window[1] - self._window[0])
        torch.cuda.memory._record_memory_history(**_history_kwargs(self._stacks, entries))
        self._recording = True
        how = (f"sized from {allocations_per_step} allocations in the step before"
               if allocations_per_step is not None and not self._max_entries else "as set")
        self._core.add_line(
            "snapshot_history",
            f"allocator history: steps {self._window[0]}-{self._window[1] - 1}, "
            f"{self._stacks} stacks, max_entries {entries} ({how})")

    def step_began(self, step: int) -> None:
        if not self._ok:
            return
        self._end_mark()
        if not self._recording and step == self._window[0] - 1:
            self._allocs_at = (step, _allocations())
        if not self._recording and step == self._window[0]:
            measured = None
            if self._allocs_at is not None and self._allocs_at[0] == step - 1:
                measured = _allocations() - self._allocs_at[1]
            self._begin(measured)
        elif self._recording and step >= self._window[1]:
            self.finish()
        if self._recording:
            self._mark = torch.autograd.profiler.record_function(f"ProfilerStep#{step}")
            self._mark.__enter__()

    def _end_mark(self) -> None:
        if self._mark is not None:
            mark, self._mark = self._mark, None
            mark.__exit__(None, None, None)

    def finish(self) -> None:
        self._end_mark()
        if not self._recording:
            return
        self._recording = False
        path = self.path
        torch.cuda.memory._dump_snapshot(path)
        torch.cuda.memory._record_memory_history(enabled=None)
        self._core.add_snapshot_file(path)

    # ---- out of memory -------------------------------------------------------------------------

    def _attach_oom_observer(self) -> None:
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is None:
            self._core.add_line(
                "snapshot_oom_unavailable",
                f"snapshot.oom is true, but torch {torch.__version__} has no out-of-memory "
                "observer (PyTorch 2.1 or later): no snapshot will be written at an OOM")
            return
        attach(self._on_oom)

    def _on_oom(self, device: int, requested: int, device_allocated: int,
                device_free: int) -> None:
        """PyTorch's out-of-memory observer: called before the OutOfMemoryError is raised.
        There is no detach, so an observer of a finished session does nothing."""
        if self._core is None:
            return
        path = os.path.join(self._run_dir, file_name(self._rank, self._world, oom=True))
        try:
            torch.cuda.memory._dump_snapshot(path)
        except Exception as e:  # the OOM is the user's error to see, not this one
            self._core.add_line("snapshot_oom_not_written",
                                f"out of memory on cuda:{device}, but {path} was not written: {e}")
            return
        self._core.add_oom(device, requested, device_allocated, device_free, path)

    def close(self) -> None:
        """Dumps what is being recorded; later OOMs of this process are not this session's."""
        self.finish()
        self._core = None
