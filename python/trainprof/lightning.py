"""trainprof as a Lightning profiler: ``Trainer(profiler=TrainprofProfiler())``.

    import lightning as L
    from trainprof.lightning import TrainprofProfiler

    trainer = L.Trainer(max_epochs=2, profiler=TrainprofProfiler(name="my-model"))
    trainer.fit(model, train_loader, val_loader)
    # the reports are printed; trainer.profiler.report.run_dir holds report.html, report.json, ...

Lightning times its own actions through the profiler it is given: ``run_training_epoch``,
``run_training_batch``, ``[_TrainingEpochLoop].train_dataloader_next``,
``[_EvaluationLoop].val_next``, ``[Strategy]SingleDeviceStrategy.training_step``, and every hook
as ``[Callback]<name>.<hook>``, ``[LightningModule]<class>.<hook>`` or
``[Strategy]<class>.<hook>``. Each becomes a trainprof scope of that name, so the time report
reads like Lightning's SimpleProfiler. The LightningModule's own hooks among those actions
(``on_train_epoch_start``, ``on_train_batch_end``, ...; Lightning calls them whether or not the
module overrides them) tell the Session where stages, epochs and steps begin, and the batch
Lightning is working on gives how many samples each holds: that is the speed report (training,
validation and data-loader throughput per batch and per sample, rate curves), without a callback
in the loop and without a progress-bar subclass.

Only this module needs Lightning (``lightning``, or ``pytorch_lightning`` alone);
``import trainprof`` does not.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import functools
import json
import os
import re
import sys
import tempfile
import threading
import time
import traceback
import weakref
from typing import (Any, Callable, ContextManager, Dict, Iterable, List, Mapping, Optional, Set,
                    Tuple, Union)

import trainprof
from trainprof import Kind, _core, _trackers
from trainprof import _session as _session_module

try:
    import lightning as _lightning_package
    from lightning.pytorch import LightningModule, Trainer
    from lightning.pytorch.callbacks import Callback
    from lightning.pytorch.profilers import Profiler
except ImportError as _lightning_error:
    try:
        import pytorch_lightning as _lightning_package  # type: ignore[no-redef]
        from pytorch_lightning import LightningModule, Trainer  # type: ignore[no-redef]
        from pytorch_lightning.callbacks import Callback  # type: ignore[no-redef]
        from pytorch_lightning.profilers import Profiler  # type: ignore[no-redef]
    except ImportError:
        _missing = getattr(_lightning_error, "name", None)
        if _missing in ("lightning", "pytorch_lightning"):
            raise ImportError(
                "trainprof.lightning needs lightning (pip install lightning) or "
                "pytorch_lightning (pip install pytorch-lightning): neither is installed"
            ) from _lightning_error
        import torch as _torch

        raise ImportError(
            f"trainprof.lightning: lightning is installed but does not import with this torch "
            f"({_torch.__version__}): {_lightning_error}. Lightning 2.3 and newer need torch "
            "2.x; with torch 1.13 use lightning 2.2.5 or older"
        ) from _lightning_error

import torch
from torch.utils.data import DataLoader

__all__ = ["TrainprofProfiler"]

_Scope = _core.Scope

PathLike = Union[str, "os.PathLike[str]"]
Overrides = Union[Mapping[str, Any], Iterable[str], None]

# Trainer functions that get a Session (Profiler.setup's `stage`, Lightning's TrainerFn).
_PROFILED_FNS = ("fit", "validate", "test")

# Lightning 2.x action names -> trainprof kinds; the first full match wins, anything else is
# "other" (hooks, callbacks, setup_train_dataloader, batch_to_device, save_checkpoint, ...).
# Where Lightning names them (src/lightning/pytorch/):
#   loops/fit_loop.py              run_training_epoch, setup_train_dataloader
#   loops/training_epoch_loop.py   run_training_batch, [_TrainingEpochLoop].train_dataloader_next
#   loops/evaluation_loop.py       [_EvaluationLoop].val_next (also in the sanity check), .test_next
#   loops/prediction_loop.py       [_PredictionLoop].predict_next
#   loops/optimization/manual.py   optimizer_step (manual optimization)
#   trainer/call.py                [Strategy]<class>.<hook> (training_step, validation_step,
#                                  backward, ...), [LightningModule]<class>.<hook> (optimizer_step,
#                                  optimizer_zero_grad, ...), [Callback]<state_key>.<hook>,
#                                  [LightningDataModule]<class>.<hook>
# run_validation is not a Lightning 2.x action; trainprof's own loops use the name.
_ACTION_KINDS: Tuple[Tuple["re.Pattern[str]", str], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"run_training_epoch|run_training_batch|run_validation", "loop"),
        (r"\[_\w+Loop\]\.\w+_next", "dataloader"),
        (r"\[Strategy\]\w+\.(training|validation|test|predict)_step", "step"),
        (r"\[Strategy\]\w+\.backward", "backward"),
        (r"(\[LightningModule\]\w+\.)?optimizer_(step|zero_grad)", "optimizer"),
    )
)


# The callback's own hooks, which Lightning profiles as "[Callback]<state_key>.<hook>": not
# recorded (they are trainprof's bookkeeping, not the user's time).
_OWN_CALLBACK_PREFIX = "[Callback]_TrainprofExceptionCallback"
# Lightning calls a hook on every callback first, then on the LightningModule as
# "[LightningModule]<class>.<hook>", always (LightningModule defines them all): the module's hook
# actions mark stages and steps in every run, whatever the callbacks (the Tuner replaces them).
_MODULE_HOOK_PREFIX = "[LightningModule]"


@functools.lru_cache(maxsize=4096)
def _action_kind(action_name: str) -> str:
    """The trainprof kind ("loop", "dataloader", ...) of a Lightning action name."""
    for pattern, kind in _ACTION_KINDS:
        if pattern.fullmatch(action_name):
            return kind
    return "other"


class TrainprofProfiler(Profiler):
    """A Lightning profiler that records into a :class:`trainprof.Session`.

    ``config``, ``name``, ``output_dir`` and ``overrides`` are passed to :class:`trainprof.Session`
    (``output_dir`` defaults to ``dirpath`` when that is given). Each ``trainer.fit``,
    ``trainer.validate`` or ``trainer.test`` that uses this profiler is one Session and one run
    folder: created in :meth:`setup`, finished (reports printed per ``output.print``, run folder
    written) when Lightning calls :meth:`describe` at the end, or when the run stops on an
    exception or Ctrl-C (the report then says why). ``trainer.predict`` gets no Session.
    ``dirpath`` and ``filename`` mean what they mean for Lightning's SimpleProfiler: with
    ``filename`` the report text goes to ``<dirpath>/<stage>-<filename>.txt`` (``dirpath``
    defaults to the trainer's log_dir) instead of the terminal.

    At the end of a run that did not stop on an exception, the reports are printed and the run
    folder written on a thread of its own, so that ``trainer.fit`` returns without waiting for
    them. Reading :attr:`report` or :attr:`reports`, calling :meth:`summary`, the next ``fit``,
    ``validate``, ``test`` or ``predict`` with this profiler, and the interpreter's exit wait for
    that thread; an error it met (a file that could not be written) is raised by the read, else
    printed on stderr. The run folder is written before ``fit`` returns, as it was, with
    ``filename``, with the ``memory.*``, ``model_summary.*`` or ``snapshot.*`` keys (their
    PyTorch hooks come off in the training thread), in a multi-rank run and under ``ddp_spawn``.

    When the program already has a Session open (``with trainprof.Session(): trainer.fit(...)``),
    the profiler records into that one and leaves finishing it to the program. In a multi-rank
    run every rank records and rank 0 writes the merged report; nothing special is needed.

    Lightning's sanity check (``num_sanity_val_steps``) is not recorded: its fetches would count
    as training data-loading time, and its batches are not validation steps. The report says how
    many batches it ran. Stages: training batches are ``"train"`` steps; validation batches, and
    the test batches of ``trainer.test``, are ``"validation"`` steps. A step ends where Lightning
    calls the LightningModule's ``on_*_batch_end`` (after the callbacks' ``on_*_batch_end``), so
    it includes the wait for its batch.

    With ``log_to_loggers`` (the default), a finished run's headline figures and its
    ``training_rate`` / ``validation_rate`` curves go to every logger of the Trainer
    (``log_metrics``), and its report files to an ``MLFlowLogger``'s run as artifacts or into a
    ``TensorBoardLogger``'s log_dir (with the text report as a text summary).

    Raises :class:`trainprof.ConfigError` (from setup, so from ``trainer.fit``) for a bad config
    file, key or value, and :class:`trainprof.TrainprofError` when the run folder cannot be
    created or written (from reading :attr:`report` when it was written in the background).
    """

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        name: Optional[str] = None,
        output_dir: Optional[PathLike] = None,
        overrides: Overrides = None,
        dirpath: Optional[PathLike] = None,
        filename: Optional[str] = None,
        log_to_loggers: bool = True,
    ) -> None:
        super().__init__(dirpath=dirpath, filename=filename)
        self._log_to_trackers = log_to_loggers
        self._config = config
        self._name = name
        self._output_dir = output_dir if output_dir is not None else dirpath
        self._overrides = overrides
        self._session: Optional[trainprof.Session] = None
        self._owns_session = False
        self._report: Optional[trainprof.Report] = None
        # Open scopes, innermost last: Lightning starts and stops actions in nested order.
        self._open: List[Tuple[str, Any]] = []
        self._trainer_ref: Optional["weakref.ReferenceType[Trainer]"] = None
        # Only told of exceptions: steps and stages come from the actions (_EVENTS).
        self._callback = _TrainprofExceptionCallback(self)
        # Per action name: (its trainprof.Kind as an int, or None for the callback's own hooks;
        # its _EVENTS entry or None). One dict lookup an action: ~18 a batch.
        self._plan: Dict[str, Tuple[Optional[int], Optional[_Event]]] = {}
        # start() takes its slow path (_gate) while this is set: no Session yet, or Lightning's
        # sanity check may be running (_watch: the trainer to ask).
        self._gated = True
        self._watch: Optional[Trainer] = None
        self._sanity_batches = 0
        # Lightning's result collection of the running loop: its `batch` is the current batch.
        self._results: Any = None
        self._train_results: Any = None
        self._reports: Dict[str, trainprof.Report] = {}  # the last finished run per stage
        self._fn = ""  # the stage being recorded: fit, validate or test
        self._log_dir: Optional[str] = None  # the Trainer's log_dir, from setup()
        self._handoff: Optional[str] = None  # ddp_spawn: where rank 0 leaves its report
        # Actions Lightning ran before setup() (configure_callbacks): name -> [start, seconds].
        self._early: Dict[str, List[float]] = {}
        # The last run's Session finishing on its own thread, until _wait() takes its Report.
        self._pending: Optional[_Finishing] = None

    # Finish a run's Session on a thread of its own where it can be (_finishes_in_background);
    # the tests turn it off to compare with the run folder written before fit returns.
    _finish_in_background = True

    @property
    def session(self) -> Optional[trainprof.Session]:
        """The Session being recorded into, or None outside fit / validate / test."""
        return self._session

    @property
    def report(self) -> Optional[trainprof.Report]:
        """The Report of the last run whose Session this profiler opened and finished, else None.
        ``trainer.predict`` keeps it (predict is not profiled). Under ``ddp_spawn`` the run is
        recorded in the spawned processes; rank 0 hands its report back to this one. Waits for
        the run folder being written in the background, raising the error that stopped it."""
        if self._pending is not None:
            self._wait(raise_error=True)
        if self._report is None:
            self._take_handoff()
        return self._report

    @property
    def reports(self) -> Dict[str, trainprof.Report]:
        """The last finished Report of each stage: ``{"fit": ..., "validate": ..., "test": ...}``.
        Waits for the run folder being written in the background, as :attr:`report` does."""
        if self._pending is not None:
            self._wait(raise_error=True)
        if self._report is None:
            self._take_handoff()
        return dict(self._reports)

    # ---- Lightning's Profiler interface ---------------------------------------------------------

    def setup(
        self, stage: str, local_rank: Optional[int] = None, log_dir: Optional[str] = None
    ) -> None:
        """Called by the Trainer before a run: opens the Session (for fit, validate and test) and
        adds the callback that tells of exceptions to the trainer."""
        super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)
        self._finish_session()  # one an earlier run left open
        self._wait(raise_error=False)  # the last run's folder, being written in the background
        fn = str(getattr(stage, "value", stage))
        if fn not in _PROFILED_FNS:
            return  # predict: the last report stays
        self._report = None
        self._fn = fn
        self._log_dir = log_dir
        self._results = self._train_results = None
        trainer = self._find_trainer()
        self._open_session(fn, trainer)
        self._regate()
        # The callback's setup() hook, which the Trainer calls next, gives it the trainer
        # (_trainer_ref): LightningModule.trainer is a weakref.proxy with torch < 2.0.
        if trainer is not None and self._callback not in trainer.callbacks:
            trainer.callbacks.append(self._callback)

    def profile(self, action_name: str) -> ContextManager[Any]:  # type: ignore[override]
        """The timed block Lightning wraps each hook in (``with profiler.profile(name):``): the
        action's trainprof scope itself, a C object, where Profiler.profile is a generator
        around start() and stop() that costs ~1 µs an action. ``with ... as block`` gives the
        scope, whose ``name`` is ``action_name``."""
        if self._gated:
            return super().profile(action_name)  # start() and stop() know what to do
        kind = self._planned(action_name)
        return _NOT_RECORDED if kind is None else _Scope(action_name, kind)

    def _planned(self, action_name: str) -> Any:
        """The scope kind of ``action_name`` (None: not recorded), its plan looked up once and
        kept, after running the event the plan attaches to it (a step's end, a stage's start)."""
        try:
            kind, event = self._plan[action_name]
        except KeyError:
            kind, event = self._plan[action_name] = _plan_entry(action_name)
        if event is not None:
            event(self)
        return kind

    def start(self, action_name: str) -> None:
        """Begins a scope named ``action_name``, of the kind its name says. Lightning calls it
        for the data loaders' ``*_next`` and manual optimization's ``optimizer_step``; every
        other action goes through :meth:`profile`."""
        if self._gated and self._gate(action_name):
            return
        kind = self._planned(action_name)
        if kind is None:
            return
        scope = _Scope(action_name, kind)
        scope.__enter__()
        self._open.append((action_name, scope))

    def stop(self, action_name: str) -> None:
        """Ends the innermost open scope named ``action_name``. An action that is not open (one
        started during the sanity check, or never started) is ignored, where SimpleProfiler
        raises ValueError: an error here would replace the exception that unwinds the loop."""
        opened = self._open
        if opened and opened[-1][0] == action_name:  # nearly always: actions nest
            opened.pop()[1].__exit__(None, None, None)
            return
        if self._session is None:
            early = self._early.get(action_name)
            if early is not None:
                early[1] += time.perf_counter() - early[0]
            return
        for i in range(len(opened) - 2, -1, -1):
            if opened[i][0] == action_name:
                opened.pop(i)[1].__exit__(None, None, None)
                return

    def summary(self) -> str:
        """Finishes the Session this profiler opened, waits for its run folder, and returns the
        report text (what ``output.print`` prints, also in summary.txt); "" when there is no
        report."""
        self._finish_session()
        self._wait(raise_error=True)
        return self._report.summary if self._report is not None else ""

    def describe(self) -> None:
        """Called by the Trainer at the end of a run: finishes the Session, which prints the
        reports and writes the run folder, on a thread of its own where it can (see the class).
        With ``filename`` the report text is written to ``<dirpath>/<stage>-<filename>.txt``
        instead, before this returns. Raises :class:`trainprof.TrainprofError` naming a file that
        could not be written (from the background: when the report is read)."""
        if self.filename:
            self._write_summary(self.summary())
        self.teardown(stage=self._stage)

    def _write_summary(self, text: str) -> None:
        """The report text into Lightning's ``<dirpath>/<stage>-<filename>.txt``."""
        if not text:
            return
        self._prepare_streams()
        if self._write_stream is not None:
            self._write_stream(text)
        if self._output_file is not None:
            self._output_file.flush()

    def teardown(self, stage: Optional[str]) -> None:
        """Finishes the Session if it is still open, takes the callback off the trainer and closes
        the ``filename`` file."""
        try:
            self._finish_session()
        finally:
            self._early = {}  # predict's actions, which no Session recorded
            self._detach_callback()
            super().teardown(stage)

    def __getstate__(self) -> Dict[str, Any]:
        # ddp_spawn pickles the trainer: leave out this process's Session, scopes and references.
        # The spawned rank 0 writes where its report is into the handoff file this process reads.
        self._wait(raise_error=False)
        if self._handoff is None:
            fd, self._handoff = tempfile.mkstemp(prefix="trainprof-handoff-", suffix=".json")
            os.close(fd)
            os.unlink(self._handoff)
        state = self.__dict__.copy()
        state.update(_session=None, _owns_session=False, _open=[], _trainer_ref=None, _plan={},
                     _gated=True, _watch=None, _results=None, _train_results=None, _pending=None)
        state.pop("_lightning_module", None)
        return state

    # ---- stages and steps, from the LightningModule's hook actions (_EVENTS) -------------------

    def _gate(self, action_name: str) -> bool:
        """start()'s slow path; True: the action is not recorded. Before setup() opens the
        Session, Lightning has already run configure_callbacks: timed here, and named in the
        report's notes (setup) instead of lost. From on_fit_start until the first action that
        is not the sanity check (which follows on_fit_start), the trainer says whether it is."""
        if self._session is None:
            now = time.perf_counter()
            self._early.setdefault(action_name, [now, 0.0])[0] = now
            return True
        watch = self._watch
        if watch is not None and watch.sanity_checking:
            if action_name.startswith(_MODULE_HOOK_PREFIX) and action_name.endswith(
                    ".on_validation_batch_end"):
                self._sanity_batches += 1
            return True
        self._watch = None
        self._regate()
        if self._sanity_batches:
            self._session.add_note(
                f"Lightning's sanity check ({self._sanity_batches} validation batches before "
                "training, num_sanity_val_steps) is not in this report"
            )
            self._sanity_batches = 0
        return False

    def _regate(self) -> None:
        self._gated = self._session is None or self._watch is not None

    def _on_fit_start(self) -> None:
        self._watch = self._trainer()
        self._sanity_batches = 0
        self._regate()

    def _on_train_start(self) -> None:
        trainer = self._trainer()
        if trainer is not None:
            _set_workers(self._session, trainer.train_dataloader)

    def _on_train_epoch_start(self) -> None:
        trainer = self._trainer()
        if trainer is not None:
            self._keep_callback(trainer)
            self._session.epoch = trainer.current_epoch
            self._results = self._train_results = _results_of(trainer)
        self._session.stage("train")

    def _on_evaluation_epoch_start(self) -> None:
        """on_validation_epoch_start and on_test_epoch_start."""
        trainer = self._trainer()
        if trainer is not None:
            if self._fn != "fit":
                self._session.epoch = trainer.current_epoch
                testing = self._fn == "test"
                _set_workers(self._session,
                             trainer.test_dataloaders if testing else trainer.val_dataloaders)
            self._results = _results_of(trainer)
        self._session.stage("validation")

    def _on_validation_end(self) -> None:
        # Validation may run inside a training epoch: its next batches are training again.
        if self._fn == "fit":
            self._session.stage("train")
            self._results = self._train_results

    def _on_batch_end(self) -> None:
        """on_train_batch_end, on_validation_batch_end, on_test_batch_end: the step ends."""
        _end_step(self._session, getattr(self._results, "batch", None))

    def _trainer(self) -> Optional[Trainer]:
        if self._trainer_ref is not None:
            trainer = self._trainer_ref()
            if trainer is not None:
                return trainer
        return self._find_trainer()

    # ---- internals ------------------------------------------------------------------------------

    def _find_trainer(self) -> Optional[Trainer]:
        # The Trainer sets _lightning_module (a weak proxy) just before it calls setup().
        module = getattr(self, "_lightning_module", None)
        if module is None:
            return None
        try:
            return module.trainer
        except (RuntimeError, ReferenceError):  # not attached to a Trainer / already collected
            return None

    def _open_session(self, fn: str, trainer: Optional[Trainer]) -> None:
        active = trainprof.active_session()
        if active is not None:
            self._session, self._owns_session = active, False
            return
        overrides = _print_off(self._overrides) if self.filename else self._overrides
        session = trainprof.Session(
            self._config, name=self._name, output_dir=self._run_parent(), overrides=overrides
        )
        self._session, self._owns_session = session, True
        package = _lightning_package
        session.set_meta("lightning", f"{package.__name__} {package.__version__}")
        if trainer is not None and trainer.lightning_module is not None:
            session.set_meta("model", type(trainer.lightning_module).__name__)
        _attach_torch(session, trainer)
        if fn == "test":
            session.add_note(
                "trainer.test(): the test batches are reported as the validation stage"
            )
        early, self._early = self._early, {}
        if early:
            done = ", ".join(f"{name} ({1e3 * t:.2f} ms)" for name, (_, t) in early.items())
            session.add_note(
                f"Lightning ran before the profiler was set up, so outside the time table: {done}"
            )

    def _finish_session(self) -> None:
        session, self._session = self._session, None
        self._watch = None
        self._regate()
        if session is None or not self._owns_session:
            return
        self._close_open_scopes()
        loggers, step = self._loggers()
        if self._finishes_in_background(session):
            self._pending = _Finishing(session, self._fn, loggers, step)
            return
        self._report = session.finish()
        self._reports[self._fn] = self._report
        self._give_handoff()
        _log_to_loggers(self._report, loggers, step)

    def _finishes_in_background(self, session: trainprof.Session) -> bool:
        """Whether the Session can finish on a thread of its own: not with ``filename`` (describe
        writes the text), trainprof.torch's hooks (they come off in this thread), other ranks
        (their exchange stays in order with the training's collectives), ddp_spawn's handoff
        (the spawned process exits at once) or the interpreter's exit (no thread then)."""
        return (self._finish_in_background and not self.filename and self._handoff is None
                and session._ranks is None and not session._listeners
                and not sys.is_finalizing())

    def _wait(self, raise_error: bool) -> None:
        """Waits for the last run's Session finishing in the background, if any, and takes its
        Report; the error that stopped it is raised (``raise_error``) or printed, once."""
        finishing, self._pending = self._pending, None
        if finishing is None:
            return
        error = finishing.join()
        if finishing.report is not None:
            self._report = finishing.report
            self._reports[finishing.fn] = finishing.report
        if error is not None and raise_error:
            raise error
        _print_error(error)

    def _give_handoff(self) -> None:
        """In a process ddp_spawn started: rank 0 writes its report for the parent."""
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        if self._handoff is None or self._report is None or getattr(trainer, "global_rank", 0):
            return
        with open(self._handoff + ".part", "w", encoding="utf-8") as f:
            json.dump({"fn": self._fn, "run_dir": self._report.run_dir,
                       "summary": self._report.summary, "run_id": self._report.run_id}, f)
        os.replace(self._handoff + ".part", self._handoff)

    def _take_handoff(self) -> None:
        """In the process that started ddp_spawn: the report rank 0 handed back, if any."""
        if self._handoff is None or not os.path.exists(self._handoff):
            return
        with open(self._handoff, encoding="utf-8") as f:
            got = json.load(f)
        os.unlink(self._handoff)
        self._report = trainprof.Report(got["run_dir"], got["summary"], got.get("run_id"))
        self._reports[got["fn"]] = self._report

    def _loggers(self) -> Tuple[List[Any], int]:
        """The Trainer's loggers that get the report (none unless ``log_to_loggers`` and rank 0)
        and the step it is logged at, read before the Session finishes."""
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        loggers = list(getattr(trainer, "loggers", None) or []) if self._log_to_trackers else []
        if not loggers or getattr(trainer, "global_rank", 0) != 0:
            return [], 0
        return loggers, int(getattr(trainer, "global_step", 0) or 0)

    def _abort(self, exception: BaseException) -> None:
        """The run stopped on an exception (Lightning then calls no describe()): finishes the
        Session with a note saying why; a file that cannot be written is printed, not raised."""
        session, self._session = self._session, None
        self._watch = None
        self._regate()
        if session is None or not self._owns_session:
            return
        self._close_open_scopes()
        session.__exit__(type(exception), exception, exception.__traceback__)
        self._report = session.report

    def _close_open_scopes(self) -> None:
        while self._open:
            _, block = self._open.pop()
            block.__exit__(None, None, None)

    def _run_parent(self) -> Optional[str]:
        """Where run folders go: ``output_dir`` (or ``dirpath``) when given; else, unless the
        config or overrides name an output folder, ``<Lightning's log_dir>/trainprof``, an
        absolute path, beside the logger's own files."""
        if self._output_dir is not None:
            return os.fspath(self._output_dir)
        keys = self._overrides.keys() if isinstance(self._overrides, Mapping) else [
            str(o).split("=", 1)[0] for o in (self._overrides or [])]
        if self._config is not None or any(k in ("output.dir", "output.run_dir") for k in keys):
            return None
        if not self._log_dir:
            return None
        return os.path.join(os.path.abspath(self._log_dir), "trainprof")

    def _keep_callback(self, trainer: Trainer) -> None:
        """Puts the callback back when the Trainer's callbacks were replaced (the Tuner's lr_find
        and scale_batch_size run fit with callbacks of their own): without it an exception there
        would leave the Session open until exit, without saying why."""
        if self._callback not in trainer.callbacks:
            trainer.callbacks.append(self._callback)

    def _detach_callback(self) -> None:
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        if trainer is not None and self._callback in trainer.callbacks:
            trainer.callbacks.remove(self._callback)


_Event = Callable[[TrainprofProfiler], None]


class _Finishing:
    """A run's Session finishing on a thread of its own, once trainer.fit's describe() has
    handed it over: the reports printed, the run folder written (the C++ part, without the GIL),
    the run recorded in the history and logged to the Trainer's loggers. A low-level thread:
    threading.Thread.start() would wait the ~2-4 ms a new thread takes to start in a process
    that loaded torch; _join_at_exit waits for it before the interpreter exits."""

    def __init__(self, session: trainprof.Session, fn: str, loggers: List[Any], step: int) -> None:
        self.fn = fn
        self.report: Optional[trainprof.Report] = None
        self._error: Optional[BaseException] = None
        self._done = threading.Event()
        _unjoined.add(self)
        _session_module._finishing.add(self)  # a new Session waits for this one
        _thread.start_new_thread(self._run, (session, loggers, step))

    def _run(self, session: trainprof.Session, loggers: List[Any], step: int) -> None:
        try:
            self.report = session.finish()
            _log_to_loggers(self.report, loggers, step)
        except BaseException as e:  # noqa: BLE001 - kept for join(), which raises or prints it
            self._error = e
        finally:
            self._done.set()
            _session_module._finishing.discard(self)

    def wait(self) -> None:
        """Waits for the thread; its error stays for join()."""
        self._done.wait()

    def join(self) -> Optional[BaseException]:
        """Waits for the thread; returns the error that stopped it, once (None after)."""
        self._done.wait()
        _unjoined.discard(self)
        error, self._error = self._error, None
        return error


# Sessions finishing in the background that no profiler has waited for yet.
_unjoined: Set[_Finishing] = set()


@atexit.register
def _join_at_exit() -> None:
    """At exit, before trainprof._session's _finish_at_exit (registered earlier): waits for every
    Session still finishing, and prints each error no profiler surfaced."""
    for finishing in list(_unjoined):
        _print_error(finishing.join())


def _forget_in_child() -> None:
    """A forked child has no copy of the finishing threads (their parent writes the folders):
    nothing of theirs to wait for, at its exit or when it reads a report."""
    for finishing in _unjoined:
        finishing._done = threading.Event()
        finishing._done.set()
    _unjoined.clear()
    _session_module._finishing.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _print_error(error: Optional[BaseException]) -> None:
    """A background finish's error on stderr: a TrainprofError (a file not written) in one line,
    any other with its traceback."""
    if error is None:
        return
    if isinstance(error, _core.TrainprofError):
        print(f"trainprof: {error}", file=sys.stderr)
        return
    print("trainprof: finishing the run's reports failed:", file=sys.stderr)
    traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


def _log_to_loggers(report: Optional[trainprof.Report], loggers: List[Any], step: int) -> None:
    """The report's figures and files in the Trainer's loggers (trainprof._trackers)."""
    if report is None or not loggers:
        return
    for line in _trackers.log_to_loggers(loggers, report.run_dir, step):
        print(f"trainprof: {line}")


# The LightningModule hooks whose actions move the Session on, each run as the action starts:
# after every callback's hook of that name, as the step callback of earlier versions did, which
# Lightning added last. A step ends at on_*_batch_end, so it holds the fetch of its batch
# (Lightning fetches before on_*_batch_start); the train stage begins at on_train_epoch_start and
# again at on_validation_end, the validation stage at on_validation_epoch_start.
_EVENTS: Dict[str, _Event] = {
    "on_fit_start": TrainprofProfiler._on_fit_start,
    "on_train_start": TrainprofProfiler._on_train_start,
    "on_train_epoch_start": TrainprofProfiler._on_train_epoch_start,
    "on_train_batch_end": TrainprofProfiler._on_batch_end,
    "on_validation_epoch_start": TrainprofProfiler._on_evaluation_epoch_start,
    "on_validation_batch_end": TrainprofProfiler._on_batch_end,
    "on_validation_end": TrainprofProfiler._on_validation_end,
    "on_test_epoch_start": TrainprofProfiler._on_evaluation_epoch_start,
    "on_test_batch_end": TrainprofProfiler._on_batch_end,
}


def _plan_entry(action_name: str) -> Tuple[Optional[int], Optional[_Event]]:
    """The plan for an action: its kind as an int, the form _core.Scope takes fastest (None:
    not recorded), and its event."""
    if action_name.startswith(_OWN_CALLBACK_PREFIX):
        return None, None
    event = None
    if action_name.startswith(_MODULE_HOOK_PREFIX):
        event = _EVENTS.get(action_name.rpartition(".")[2])
    return int(Kind[_action_kind(action_name).upper()]), event


# What profile() gives for an action that is not recorded (reusable, as a scope is not).
_NOT_RECORDED = contextlib.nullcontext()


class _TrainprofExceptionCallback(Callback):
    """Finishes the profiler's Session when the run stops on an exception or Ctrl-C: Lightning
    then calls only the callbacks' on_exception, no profiler method. Its setup() hook gives the
    profiler the Trainer itself (LightningModule.trainer is a weakref.proxy with torch < 2.0).

    Lightning calls, and profiles, every callable hook of every callback, 6 a training batch
    (trainer/call.py, _call_callback_hooks: ``if callable(fn)``): the hooks this callback does not
    need are None below, so that Lightning passes them over.
    """

    def __init__(self, profiler: TrainprofProfiler) -> None:
        super().__init__()
        self._profiler = profiler

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._profiler._trainer_ref = weakref.ref(trainer)

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        self._profiler._abort(exception)


# on_save_checkpoint and on_load_checkpoint stay: Lightning calls them without asking callable().
for _hook in [h for h in vars(Callback) if h.startswith("on_") or h == "teardown"]:
    if _hook not in ("on_exception", "on_save_checkpoint", "on_load_checkpoint"):
        setattr(_TrainprofExceptionCallback, _hook, None)
del _hook


def _attach_torch(session: trainprof.Session, trainer: Optional[Trainer]) -> None:
    """The memory.*, model_summary.* and snapshot.* keys: trainprof.torch on the LightningModule,
    as they would be in a plain PyTorch loop."""
    from trainprof import _core

    opts = _core.torch_options(session._core)
    if not any(opts[k] for k in ("memory.enabled", "model_summary.enabled", "snapshot.enabled")):
        return
    import trainprof.torch

    model = trainer.lightning_module if trainer is not None else None
    optimizers = (lambda: trainer.optimizers) if trainer is not None else None
    trainprof.torch.attach(session, model, optimizer=optimizers)


def _results_of(trainer: Trainer) -> Any:
    """Lightning's result collection of the running loop, whose ``batch`` is the batch being
    worked on (set before on_*_batch_start, cleared after on_*_batch_end); None where this
    Lightning has none (the batch size is then unknown, the steps are still counted)."""
    try:
        return trainer._results
    except (AttributeError, RuntimeError):
        return None


def _end_step(session: Optional[trainprof.Session], batch: Any) -> None:
    if session is None:
        return
    size = _batch_size(batch)
    if size and size != session.batch_size:  # an empty batch (0) keeps the last size
        session.batch_size = size
    session.step()


def _batch_size(batch: Any, depth: int = 0) -> Optional[int]:
    """Samples in a batch: the length of its first tensor, looked for in tuples, lists and dicts as
    Lightning's extract_batch_size does (without its warning about ambiguous batches); None when
    the batch holds no tensor."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.ndim > 0 else 1
    if isinstance(batch, Mapping):
        items: Iterable[Any] = batch.values()
    elif isinstance(batch, (list, tuple)):
        items = batch
    else:
        return None
    if depth < 8:
        for item in items:
            size = _batch_size(item, depth + 1)
            if size is not None:
                return size
    return None


def _set_workers(session: trainprof.Session, loaders: Any) -> None:
    """dataloader_workers from the first DataLoader in Trainer.train_dataloader (or
    val_dataloaders, test_dataloaders): a DataLoader, or a list, tuple or dict of them."""
    if isinstance(loaders, Mapping):
        loaders = list(loaders.values())
    candidates = loaders if isinstance(loaders, (list, tuple)) else [loaders]
    for loader in candidates:
        if isinstance(loader, DataLoader):
            session.dataloader_workers = loader.num_workers
            return


def _print_off(overrides: Overrides) -> Overrides:
    """``overrides`` with output.print false (the report text goes to the ``filename`` file)."""
    if overrides is None:
        return {"output.print": False}
    if isinstance(overrides, Mapping):
        return {**overrides, "output.print": False}
    if isinstance(overrides, str):
        return overrides  # not a valid form: trainprof.Session says so
    return [*overrides, "output.print=false"]
