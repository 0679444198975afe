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
reads like Lightning's SimpleProfiler. A callback that the profiler adds to the trainer tells the
Session where stages, epochs and steps begin and how many samples each batch holds, which gives
the speed report (training, validation and data-loader throughput per batch and per sample, rate
curves) without a progress-bar subclass.

Only this module needs Lightning (``lightning``, or ``pytorch_lightning`` alone);
``import trainprof`` does not.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import time
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import trainprof
from trainprof import _core, _trackers

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
_OWN_CALLBACK_PREFIX = "[Callback]_TrainprofStepCallback"
_SKIP = None


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

    When the program already has a Session open (``with trainprof.Session(): trainer.fit(...)``),
    the profiler records into that one and leaves finishing it to the program. In a multi-rank
    run every rank records and rank 0 writes the merged report; nothing special is needed.

    Lightning's sanity check (``num_sanity_val_steps``) is not recorded: its fetches would count
    as training data-loading time, and its batches are not validation steps. The report says how
    many batches it ran. Stages: training batches are ``"train"`` steps; validation batches, and
    the test batches of ``trainer.test``, are ``"validation"`` steps. A step ends at
    ``on_*_batch_end``, so it includes the wait for its batch.

    With ``log_to_loggers`` (the default), a finished run's headline figures and its
    ``training_rate`` / ``validation_rate`` curves go to every logger of the Trainer
    (``log_metrics``), and its report files to an ``MLFlowLogger``'s run as artifacts or into a
    ``TensorBoardLogger``'s log_dir (with the text report as a text summary).

    Raises :class:`trainprof.ConfigError` (from setup, so from ``trainer.fit``) for a bad config
    file, key or value, and :class:`trainprof.TrainprofError` when the run folder cannot be
    created or written.
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
        self._callback = _TrainprofStepCallback(self)
        # Per action name: its kind, or _SKIP for the callback's own hooks; one dict lookup a
        # start() (Lightning profiles ~25 actions a batch).
        self._plan: Dict[str, Optional[str]] = {}
        self._in_sanity_check = False  # set by the callback's sanity-check hooks
        self._reports: Dict[str, trainprof.Report] = {}  # the last finished run per stage
        self._fn = ""  # the stage being recorded: fit, validate or test
        self._log_dir: Optional[str] = None  # the Trainer's log_dir, from setup()
        self._handoff: Optional[str] = None  # ddp_spawn: where rank 0 leaves its report
        # Actions Lightning ran before setup() (configure_callbacks): name -> [start, seconds].
        self._early: Dict[str, List[float]] = {}

    @property
    def session(self) -> Optional[trainprof.Session]:
        """The Session being recorded into, or None outside fit / validate / test."""
        return self._session

    @property
    def report(self) -> Optional[trainprof.Report]:
        """The Report of the last run whose Session this profiler opened and finished, else None.
        ``trainer.predict`` keeps it (predict is not profiled). Under ``ddp_spawn`` the run is
        recorded in the spawned processes; rank 0 hands its report back to this one."""
        if self._report is None:
            self._take_handoff()
        return self._report

    @property
    def reports(self) -> Dict[str, trainprof.Report]:
        """The last finished Report of each stage: ``{"fit": ..., "validate": ..., "test": ...}``."""
        if self._report is None:
            self._take_handoff()
        return dict(self._reports)

    # ---- Lightning's Profiler interface ---------------------------------------------------------

    def setup(
        self, stage: str, local_rank: Optional[int] = None, log_dir: Optional[str] = None
    ) -> None:
        """Called by the Trainer before a run: opens the Session (for fit, validate and test) and
        adds the callback that marks stages and steps to the trainer."""
        super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)
        self._finish_session()  # one an earlier run left open
        fn = str(getattr(stage, "value", stage))
        if fn not in _PROFILED_FNS:
            return  # predict: the last report stays
        self._report = None
        self._fn = fn
        self._log_dir = log_dir
        trainer = self._find_trainer()
        self._open_session(fn, trainer)
        # The callback's setup() hook, which the Trainer calls next, gives it the trainer
        # (_trainer_ref): LightningModule.trainer is a weakref.proxy with torch < 2.0.
        if trainer is not None and self._callback not in trainer.callbacks:
            trainer.callbacks.append(self._callback)

    def start(self, action_name: str) -> None:
        """Begins a scope named ``action_name``, of the kind its name says."""
        if self._session is None:
            # Before setup() opens the Session, Lightning has already run configure_callbacks:
            # timed here, and named in the report's notes (setup) instead of lost.
            now = time.perf_counter()
            self._early.setdefault(action_name, [now, 0.0])[0] = now
            return
        if self._in_sanity_check:
            return
        try:
            kind = self._plan[action_name]
        except KeyError:
            kind = self._plan[action_name] = (
                _SKIP if action_name.startswith(_OWN_CALLBACK_PREFIX) else _action_kind(action_name)
            )
        if kind is _SKIP:
            return
        if kind == "loop":
            self._keep_callback()  # a Tuner swaps trainer.callbacks for its own
        block = _Scope(action_name, kind)
        block.__enter__()
        self._open.append((action_name, block))

    def stop(self, action_name: str) -> None:
        """Ends the innermost open scope named ``action_name``. An action that is not open (one
        started during the sanity check, or never started) is ignored, where SimpleProfiler
        raises ValueError: an error here would replace the exception that unwinds the loop."""
        opened = self._open
        if self._session is None:
            early = self._early.get(action_name)
            if early is not None:
                early[1] += time.perf_counter() - early[0]
            return
        if opened and opened[-1][0] == action_name:  # nearly always: actions nest
            opened.pop()[1].__exit__(None, None, None)
            return
        if self._plan.get(action_name, "") is _SKIP:
            return
        for i in range(len(opened) - 2, -1, -1):
            if opened[i][0] == action_name:
                opened.pop(i)[1].__exit__(None, None, None)
                return

    def summary(self) -> str:
        """Finishes the Session this profiler opened and returns the report text (what
        ``output.print`` prints, also in summary.txt); "" when there is no report."""
        self._finish_session()
        return self._report.summary if self._report is not None else ""

    def describe(self) -> None:
        """Called by the Trainer at the end of a run: finishes the Session, which prints the
        reports and writes the run folder. With ``filename`` the report text is written to
        ``<dirpath>/<stage>-<filename>.txt`` instead. Raises :class:`trainprof.TrainprofError`
        naming a file that could not be written."""
        text = self.summary()
        if self.filename and text:
            self._prepare_streams()
            if self._write_stream is not None:
                self._write_stream(text)
            if self._output_file is not None:
                self._output_file.flush()
        self.teardown(stage=self._stage)

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
        if self._handoff is None:
            fd, self._handoff = tempfile.mkstemp(prefix="trainprof-handoff-", suffix=".json")
            os.close(fd)
            os.unlink(self._handoff)
        state = self.__dict__.copy()
        state.update(_session=None, _owns_session=False, _open=[], _trainer_ref=None)
        state.pop("_lightning_module", None)
        return state

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
        if session is None or not self._owns_session:
            return
        self._close_open_scopes()
        self._report = session.finish()
        self._reports[self._fn] = self._report
        self._give_handoff()
        self._log_to_loggers()

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

    def _log_to_loggers(self) -> None:
        """The report's figures and files in the Trainer's loggers (trainprof._trackers)."""
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        loggers = list(getattr(trainer, "loggers", None) or []) if self._log_to_trackers else []
        if not loggers or self._report is None or getattr(trainer, "global_rank", 0) != 0:
            return
        step = int(getattr(trainer, "global_step", 0) or 0)
        for line in _trackers.log_to_loggers(loggers, self._report.run_dir, step):
            print(f"trainprof: {line}")

    def _abort(self, exception: BaseException) -> None:
        """The run stopped on an exception (Lightning then calls no describe()): finishes the
        Session with a note saying why; a file that cannot be written is printed, not raised."""
        session, self._session = self._session, None
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

    def _keep_callback(self) -> None:
        """Puts the step callback back when the Trainer's callbacks were replaced (the Tuner's
        lr_find and scale_batch_size run fit with callbacks of their own): without it no step
        would be counted."""
        trainer = self._trainer_ref() if self._trainer_ref is not None else self._find_trainer()
        if trainer is None or self._callback in trainer.callbacks:
            return
        trainer.callbacks.append(self._callback)
        self._callback.setup(trainer, trainer.lightning_module, "fit")
        if self._session is not None:
            self._session.stage("train")

    def _detach_callback(self) -> None:
        trainer = self._trainer_ref() if self._trainer_ref is not None else None
        if trainer is not None and self._callback in trainer.callbacks:
            trainer.callbacks.remove(self._callback)


class _TrainprofStepCallback(Callback):
    """Tells the profiler's Session where stages, epochs and steps begin, from Lightning's hooks.

    A step ends at ``on_train_batch_end`` / ``on_validation_batch_end`` and the next begins there,
    so a step holds the fetch of its batch (Lightning fetches before ``on_*_batch_start``). The
    train stage begins at ``on_train_epoch_start`` and again at ``on_validation_end`` (validation
    may run inside a training epoch); the validation stage at ``on_validation_epoch_start``.
    """

    def __init__(self, profiler: TrainprofProfiler) -> None:
        super().__init__()
        self._profiler = profiler
        self._sanity_batches = 0

    def _session(self, trainer: Trainer) -> Optional[trainprof.Session]:
        return None if trainer.sanity_checking else self._profiler.session

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._profiler._trainer_ref = weakref.ref(trainer)

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        session = self._session(trainer)
        if session is not None:
            _set_workers(session, trainer.train_dataloader)

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        session = self._session(trainer)
        if session is not None:
            session.epoch = trainer.current_epoch
            session.stage("train")

    def on_train_batch_end(
        self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        _end_step(self._session(trainer), batch)

    def on_validation_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._begin_evaluation(trainer, trainer.val_dataloaders)

    def on_validation_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        if trainer.sanity_checking:
            self._sanity_batches += 1
        _end_step(self._session(trainer), batch)

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        session = self._session(trainer)
        if session is not None and _fitting(trainer):
            session.stage("train")

    def on_test_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._begin_evaluation(trainer, trainer.test_dataloaders)

    def on_test_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        _end_step(self._session(trainer), batch)

    def on_sanity_check_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._sanity_batches = 0
        self._profiler._in_sanity_check = True

    def on_sanity_check_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._profiler._in_sanity_check = False
        session = self._profiler.session
        if session is not None and self._sanity_batches > 0:
            session.add_note(
                f"Lightning's sanity check ({self._sanity_batches} validation batches before "
                "training, num_sanity_val_steps) is not in this report"
            )

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        self._profiler._abort(exception)

    def _begin_evaluation(self, trainer: Trainer, loaders: Any) -> None:
        session = self._session(trainer)
        if session is None:
            return
        if not _fitting(trainer):
            session.epoch = trainer.current_epoch
            _set_workers(session, loaders)
        session.stage("validation")


def _fitting(trainer: Trainer) -> bool:
    return trainer.state.fn == "fit"


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
