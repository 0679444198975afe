"""trainprof.torch: PyTorch's own depth in the trainprof report.

Attach it to a Session, with the model, before the loop::

    import trainprof, trainprof.torch

    with trainprof.Session(overrides={"memory.enabled": True, "model_summary.enabled": True}) as s:
        trainprof.torch.attach(s, model)
        for x, y in loader:
            loss = loss_fn(model(x), y); loss.backward(); opt.step(); opt.zero_grad()
            s.step()

What it adds to the run folder, each as a section of the one report:

* ``memory.enabled``: torch.profiler runs on trainprof's schedule (``memory.warmup`` steps, then
  ``memory.steps`` recorded); its trace is ``torch_trace.pt.trace.json.gz``; the operator table
  (self/total CPU, self/total CUDA on a GPU, memory, input shapes with ``memory.record_shapes``)
  and, for a CUDA trace, the overview, GPU and HTA sections of ``trainprof analyze``. Also the
  activation memory of the recorded steps (saved-tensor hooks) and, on a GPU, CUDA memory per
  step (``torch.cuda.memory_stats``). Activation memory is counted in the ``memory.steps``
  steps after the operator window, so its hooks do not inflate the operator times; in those
  steps memory by role is sampled too, by tensor identity (attach with ``optimizer=``).
* ``model_summary.enabled``: torchinfo's table from forward hooks on the first forward pass
  after ``attach`` (the hooks are removed right after it), in ``model_summary.txt`` too.
* ``snapshot.enabled``: the CUDA allocator's history from step ``snapshot.warmup`` for
  ``snapshot.steps`` steps (``snapshot.stacks``: python or all; ``snapshot.max_entries``, 0 to
  keep whole steps), dumped to ``memory_snapshot.pickle`` (``memory_snapshot_rank{N}.pickle``
  with several ranks) and analysed in the report as ``trainprof analyze`` would; with
  ``snapshot.oom``, ``memory_snapshot_oom.pickle`` is written when the allocator runs out of
  memory. Each file also opens at pytorch.org/memory_viz.

The numbers are computed by trainprof's C++ core; this module only collects. What cannot be
measured here (no CUDA, no Kineto, no snapshot API) is one plain line in the report.
"""

from __future__ import annotations

import gzip
import os
import shutil
import time
from typing import Any, Dict, List, Optional, Tuple

try:
    import torch
except ImportError as _torch_error:
    raise ImportError("trainprof.torch needs PyTorch (pip install torch), which does not import "
                      f"here: {_torch_error}") from _torch_error

from trainprof import _core
from trainprof._session import Session
from trainprof._torch_summary import ModelSummaryHooks
from trainprof._torch_memory import ActivationCounter, CudaMemoryStats
from trainprof._torch_roles import Optimizers, RoleSampler
from trainprof._torch_snapshot import SnapshotRecorder, launcher_rank

TRACE_NAME = "torch_trace.pt.trace.json.gz"
_PLAIN_TRACE = "torch_trace.pt.trace.json"  # until finish() compresses it

__all__ = ["TorchProfiler", "attach", "TRACE_NAME"]


def _kineto() -> bool:
    return bool(getattr(torch.autograd, "kineto_available", lambda: False)())


class TorchProfiler:
    """Collects torch.profiler's operators, CUDA and activation memory, the model summary and
    the allocator snapshot for one :class:`trainprof.Session`; made by :func:`attach`."""

    def __init__(self, session: Session, model: Optional[torch.nn.Module] = None,
                 optimizer: Optimizers = None) -> None:
        if not isinstance(session, Session):
            raise TypeError(
                "trainprof.torch.attach(session, model): session must be a trainprof.Session, "
                f"got {type(session).__name__}"
            )
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(
                "trainprof.torch.attach(session, model): model must be a torch.nn.Module, "
                f"got {type(model).__name__}"
            )
        if any(isinstance(x, TorchProfiler) for x in session._listeners):
            raise _core.TrainprofError(
                "trainprof.torch.attach: this session has PyTorch's profiler attached already "
                "(one attach per Session; torch.profiler can run only once at a time)"
            )
        self._session = session
        self._core = _core.TorchCollector(session._core)
        self._opts: Dict[str, Any] = _core.torch_options(session._core)
        self._start = session.profiler_step
        o = self._opts
        self._window = (o["memory.warmup"], o["memory.warmup"] + o["memory.steps"])
        self._prof: Optional[Any] = None
        self._done: Optional[Any] = None  # the torch.profiler.profile whose trace was written
        self._reported = False
        self._activations: Optional[ActivationCounter] = None
        self._roles: Optional[RoleSampler] = None
        self._live_at = float("-inf")  # when the live view last got memory by role
        self._cuda: Optional[CudaMemoryStats] = None
        self._summary: Optional[ModelSummaryHooks] = None
        self._snapshot: Optional[SnapshotRecorder] = None
        if o["memory.enabled"]:
            self._start_memory(model, optimizer)
        if self._roles is None and o["live.on"] and (model is not None or optimizer is not None):
            # The live view's memory by role, without memory.enabled's recorded steps.
            self._roles = RoleSampler(model, optimizer, ActivationCounter(model), self._core)
        if o["model_summary.enabled"]:
            self._start_summary(model)
        if o["snapshot.enabled"]:
            self._snapshot = SnapshotRecorder(self._core, session.run_dir, o)
        session._add_listener(self)

    # ---- memory.* ------------------------------------------------------------------------------

    def _start_memory(self, model: Optional[torch.nn.Module], optimizer: Optimizers) -> None:
        if self._opts["memory.trace_rank0_only"] and launcher_rank() != 0:
            self._core.add_line(
                "operators_not_on_this_rank",
                f"memory.trace_rank0_only is true and this is rank {launcher_rank()}: torch.profiler "
                "did not run here")
            return
        if torch.cuda.is_available():
            self._cuda = CudaMemoryStats(self._core)
        else:
            self._core.add_line(
                "cuda_memory_without_cuda",
                "CUDA memory per step: torch.cuda.is_available() is False (CPU-only torch or no "
                "GPU), so there is no CUDA memory table")
        if not _kineto():
            self._core.add_line(
                "torch_profiler_legacy",
                f"torch {torch.__version__} is built without Kineto: torch.profiler falls back "
                "to the legacy autograd profiler, which records CPU operators only (no kernels, "
                "no device time, no GPU sections)")
        end = self._window[1]
        self._activation_window = (end, end + self._opts["memory.steps"])
        self._activations = ActivationCounter(model)
        self._activations.start(self._core, self._start, self._activation_window)
        self._roles = RoleSampler(model, optimizer, self._activations, self._core)
        self._roles.start(self._start, self._activation_window)
        self._begin_profiler()

    def _begin_profiler(self) -> None:
        warmup, end = self._window
        first = max(warmup - self._start, 0)
        active = end - max(warmup, self._start)
        if active <= 0:
            self._core.add_line(
                "memory_schedule_passed",
                f"trainprof.torch.attach() came at step {self._start}, after the operator window "
                f"(steps {warmup}-{end - 1}): attach before the loop")
            return
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available() and _kineto():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._prof = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=0, warmup=first, active=active, repeat=1),
            on_trace_ready=self._trace_ready,
            record_shapes=bool(self._opts["memory.record_shapes"]),
            profile_memory=True,
        )
        self._prof.start()

    @property
    def profiler(self) -> Optional[Any]:
        """The torch.profiler.profile of the recorded steps once its trace was written (for
        ``key_averages()`` and the like), else None."""
        return self._done

    def _trace_ready(self, prof: Any) -> None:
        # Inside the training loop: only what torch.profiler's own trace handlers do (write the
        # trace); compressing it and building the report wait for finish().
        self._done = prof
        prof.export_chrome_trace(os.path.join(self._session.run_dir, _PLAIN_TRACE))

    def _report_operators(self) -> None:
        prof, self._reported = self._done, True
        run_dir = self._session.run_dir
        plain = os.path.join(run_dir, _PLAIN_TRACE)
        path = os.path.join(run_dir, TRACE_NAME)
        with open(plain, "rb") as src, gzip.open(path + ".tmp", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst)
        os.replace(path + ".tmp", path)
        os.remove(plain)
        first, end = max(self._window[0], self._start), self._window[1]
        # One operator table: from the Kineto trace; without Kineto from the events, as the
        # legacy trace has neither input shapes nor memory.
        if _kineto():
            self._core.set_trace(path, first, end)
        else:
            self._core.add_ops(_op_tuples(prof.events()), first, end)

    # ---- model_summary.* -----------------------------------------------------------------------

    def _start_summary(self, model: Optional[torch.nn.Module]) -> None:
        if model is None:
            self._core.add_line(
                "model_summary_not_taken",
                "model_summary.enabled is true, but trainprof.torch.attach() was given no model: "
                "there is no model summary")
            return
        self._summary = ModelSummaryHooks(model, self._core)

    # ---- the Session's steps -------------------------------------------------------------------

    def _on_step(self, step: int) -> None:
        """Called by Session.step() after the step `step - 1` ended."""
        ended = step - 1
        if self._cuda is not None:
            self._cuda.step_ended(ended)
        if self._activations is not None:
            self._activations.step_ended(ended, self._activation_window)
        if self._roles is not None:
            self._roles.step_ended(ended, live=self._live_due())
        if self._snapshot is not None:  # first: its dump must not catch the profiler's next step
            self._snapshot.step_began(step)
        if self._prof is not None:
            self._prof.step()
            if step >= self._window[1]:
                self._stop_profiler()

    def _live_due(self) -> bool:
        """Whether the live view gets memory by role now: at most once a live.interval_s."""
        if not self._opts["live.on"]:
            return False
        now = time.monotonic()
        if now - self._live_at < self._opts["live.interval_s"]:
            return False
        self._live_at = now
        return True

    def _stop_profiler(self) -> None:
        if self._prof is not None:
            prof, self._prof = self._prof, None
            prof.stop()

    def _on_finish(self) -> None:
        """Called by Session.finish() before the report is built."""
        self._stop_profiler()
        if self._done is not None and not self._reported:
            self._report_operators()
        if self._summary is not None:
            self._summary.close()
        if self._activations is not None:
            self._activations.close()
        if self._roles is not None:
            self._roles.close()
        if self._snapshot is not None:
            self._snapshot.close()

    def __repr__(self) -> str:
        return f"trainprof.torch.TorchProfiler(run_dir={self._session.run_dir!r})"


def attach(session: Session, model: Optional[torch.nn.Module] = None,
           optimizer: Optimizers = None) -> TorchProfiler:
    """Adds PyTorch's operators, memory, model summary and allocator snapshot to ``session``'s
    report, as its ``memory.*``, ``model_summary.*`` and ``snapshot.*`` keys say. Call it
    before the training loop, with the model (needed for the model summary and the activation
    memory per module) and the optimizer (an Optimizer, a list of them, or a function giving
    them when the recorded steps begin): with both, ``memory.enabled`` also measures memory by
    role (parameters, gradients, optimizer state, activations, input) exactly. Raises :class:`TypeError` when ``session`` is not a Session or ``model``
    not a Module, and :class:`trainprof.TrainprofError` when the session has finished or has
    been attached already."""
    return TorchProfiler(session, model, optimizer)


def _shapes_text(shapes: Any) -> str:
    if not shapes:
        return ""
    return "[" + ", ".join("[" + ", ".join(str(d) for d in s) + "]" for s in shapes) + "]"


def _op_tuples(events: Any) -> List[Tuple[str, str, int, int, int, int, int]]:
    """torch.profiler's FunctionEvents as the C++ core's operator calls (which nest by time)."""
    return [(
        str(e.name),
        _shapes_text(getattr(e, "input_shapes", None)),
        int(e.time_range.start * 1000),
        int(e.time_range.end * 1000),
        int(e.thread),
        int(getattr(e, "cpu_memory_usage", 0) or 0),
        int(getattr(e, "cuda_memory_usage", getattr(e, "device_memory_usage", 0)) or 0),
    ) for e in events]
