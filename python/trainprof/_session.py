"""trainprof.Session: one profiled run of a training loop, written to one run folder."""

from __future__ import annotations

import atexit
import json
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Union

from trainprof import _core, _distributed

PathLike = Union[str, "os.PathLike[str]"]
Overrides = Union[Mapping[str, Any], Iterable[str], None]

_active: Optional["Session"] = None


class Report:
    """A finished run: its folder, its report.html, the printed text, and report.json."""

    def __init__(self, run_dir: str, summary: str, run_id: Optional[str] = None) -> None:
        #: The run folder (report.json, report.html, summary.txt, *.csv, trace.json).
        self.run_dir: str = run_dir
        #: The text printed at the end of the run (also in summary.txt).
        self.summary: str = summary
        #: The run's id in the run history (``trainprof runs show ID``), or None when the
        #: history is off or this rank does not record.
        self.run_id: Optional[str] = run_id

    @property
    def html_path(self) -> str:
        """report.html: the whole report as one self-contained page."""
        return os.path.join(self.run_dir, "report.html")

    @property
    def json_path(self) -> str:
        return os.path.join(self.run_dir, "report.json")

    def to_dict(self) -> Dict[str, Any]:
        """report.json as a dict: meta, config, and every section with its metrics, tables,
        series, findings and notes (``schema_version`` says which layout)."""
        with open(self.json_path, encoding="utf-8") as f:
            return json.load(f)

    def __str__(self) -> str:
        return self.summary

    def __repr__(self) -> str:
        return f"trainprof.Report(run_dir={self.run_dir!r})"


# Sessions finishing on another thread (trainprof.lightning writes a fit's run folder after fit
# returns): objects with wait(), each removed once its Session has finished. A new Session and
# active_session() wait for them, so a program sees one Session at a time as before.
_finishing: Set[Any] = set()


def _wait_for_finishing() -> None:
    for f in list(_finishing):
        f.wait()


def active_session() -> Optional["Session"]:
    """The Session that is open in this process, or None (after waiting for one that is being
    finished on another thread)."""
    _wait_for_finishing()
    return _active


def _override_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _override_list(overrides: Overrides) -> List[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{k}={_override_text(v)}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        raise TypeError('overrides: a dict {"key": value} or a list of "key=value" strings')
    return [str(o) for o in overrides]


class Session:
    """One profiled run: follows the training loop (stage, epoch, step, batch size), drives the
    profiling schedule, and on :meth:`finish` prints the reports and writes the run folder.

    ``config`` is a YAML file of the profiler keys that ``trainprof profile`` takes (time, speed,
    system, schedule, output; docs/config.md). ``overrides`` sets keys on top of it, as
    ``--set`` does: ``{"system.enabled": True, "speed.warmup_batches": 2}``. ``name`` and
    ``output_dir`` are ``output.name`` and ``output.dir``; the run folder is
    ``<output_dir>/<UTC time>-<name>``, or exactly ``run_dir``; under ``trainprof run``
    (``$TRAINPROF_RUN_DIR`` set) it is that run's ``session/`` folder, and the run, not the
    Session, is recorded in the history and printed. ``db`` is the run history
    (default ``$TRAINPROF_DB``, else ``runs/trainprof.db``; ``"off"`` for none).

    Use it as a context manager: leaving the block finishes the session, also when an
    exception or Ctrl-C ends the loop (the reports then cover the completed steps and say why
    the run stopped), and the exception propagates.

    When ``torch.distributed`` is initialised with several ranks (torchrun, Slurm), every rank
    writes ``<run folder>/rank<N>/`` and rank 0 writes the merged report (per-rank table, the
    slowest rank) into the run folder; every rank must then call :meth:`finish`.

    Raises :class:`trainprof.ConfigError` for a bad file, key or value (with the nearest valid
    key), :class:`trainprof.TrainprofError` when the run folder cannot be created or another
    Session is open.
    """

    def __init__(
        self,
        config: Optional[PathLike] = None,
        *,
        name: Optional[str] = None,
        output_dir: Optional[PathLike] = None,
        overrides: Overrides = None,
        run_dir: Optional[PathLike] = None,
        db: Optional[PathLike] = None,
    ) -> None:
        global _active
        sets: List[str] = []
        under_run = os.environ.get("TRAINPROF_RUN_DIR")
        if under_run and run_dir is None and output_dir is None:
            # Under `trainprof run`: into its run folder, which it reports and records.
            sets.append(f"output.run_dir={os.path.join(under_run, 'session')}")
            sets.append("output.print=false")  # run prints the report that holds this one
            if os.environ.get("TRAINPROF_RUN_LIVE_S"):  # run's live view shows this one's steps
                sets += ["live.mode=file", f"live.interval_s={os.environ['TRAINPROF_RUN_LIVE_S']}"]
            if db is None:
                db = "off"
        if name is not None:
            sets.append(f"output.name={name}")
        if output_dir is not None:
            sets.append(f"output.dir={os.fspath(output_dir)}")
        if run_dir is not None:
            sets.append(f"output.run_dir={os.fspath(run_dir)}")
        sets += _override_list(overrides)
        config_path = os.fspath(config) if config is not None else None
        if config_path is not None and not os.path.isfile(config_path):
            raise _core.ConfigError(f"{config_path}: no such config file")
        _wait_for_finishing()
        if _active is not None and not _active.finished:
            raise _core.TrainprofError(
                "another trainprof.Session is open in this process "
                f"(run folder {_active.run_dir}); finish() it first"
            )
        self._db = os.fspath(db) if db is not None else ""
        self._ranks = _distributed.join(config_path, sets)
        if self._ranks is not None:
            sets.append(f"output.run_dir={self._ranks.rank_dir}")
            sets += [f"{k}=" for k in _core.exporter_keys()]  # the merged run exports
        self._core = _core.Session(config_path, sets)
        self._stop_live: Optional[Callable[[], None]] = None
        if self._ranks is not None and self._ranks.live:
            self._stop_live = self._ranks.start_live(self._ranks.live_interval_s)
        self._report: Optional[Report] = None
        self._batch_size = 0
        self._workers = -1
        self._listeners: List[Any] = []  # trainprof.torch collectors: _on_step, _on_finish
        _active = self

    # ---- the training loop -------------------------------------------------------------------

    def stage(self, stage: str) -> None:
        """Starts a stage, ``"train"`` or ``"validation"``: its first step begins now."""
        self._core.set_stage(stage)

    def step(self) -> None:
        """Ends the current step of the current stage and begins the next; advances the
        profiling schedule. Call it once per batch, after the optimizer step. Raises
        :class:`trainprof.TrainprofError` after :meth:`finish` (the step would be lost)."""
        if self._report is not None:
            raise _core.TrainprofError(
                "Session.step() after finish(): the session has ended, its report is written; "
                "start a new Session for more steps"
            )
        self._core.step()
        for listener in self._listeners:
            listener._on_step(int(self._core.profiler_step))

    @property
    def epoch(self) -> int:
        """The current epoch (set it at the start of each epoch)."""
        return int(self._core.epoch)

    @epoch.setter
    def epoch(self, epoch: int) -> None:
        self._core.set_epoch(int(epoch))

    @property
    def batch_size(self) -> int:
        """Samples per step, for the samples/s figures (set it when it changes)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, batch_size: int) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"trainprof: batch_size must be a positive number of samples, got "
                             f"{batch_size}")
        self._batch_size = int(batch_size)
        self._core.set_batch_size(self._batch_size)

    @property
    def dataloader_workers(self) -> int:
        """The data loader's num_workers; the data-wait finding says how many would hide a wait."""
        return self._workers

    @dataloader_workers.setter
    def dataloader_workers(self, workers: int) -> None:
        self._workers = int(workers)
        self._core.set_dataloader_workers(self._workers)

    def set_meta(self, key: str, value: Any) -> None:
        """Adds ``key: value`` to the report's header (model, dataset, device, ...)."""
        self._core.set_meta(str(key), str(value))

    def add_config(self, key: str, value: Any) -> None:
        """Adds a setting of the program (``"training.lr"``) to report.json's config."""
        self._core.add_config(str(key), value)

    def add_note(self, note: str) -> None:
        """Adds a line shown under the report's title."""
        self._core.add_note(str(note))

    def _add_listener(self, listener: Any) -> None:
        if self.finished:
            raise _core.TrainprofError("the session has finished: attach before finish()")
        self._listeners.append(listener)

    # ---- state -------------------------------------------------------------------------------

    @property
    def run_dir(self) -> str:
        """This process's run folder (``rank<N>/`` of the run folder in a multi-rank run)."""
        return str(self._core.run_dir)

    @property
    def global_step(self) -> int:
        """Training steps done so far."""
        return int(self._core.global_step)

    @property
    def profiler_step(self) -> int:
        """step() calls so far, all stages: the schedule's step."""
        return int(self._core.profiler_step)

    @property
    def finished(self) -> bool:
        return self._report is not None

    @property
    def report(self) -> Optional[Report]:
        """The Report once finished, else None."""
        return self._report

    # ---- the end -----------------------------------------------------------------------------

    def finish(self) -> Report:
        """Stops recording, prints the reports (``output.print``), writes the run folder and
        adds the run to the run history. Calling it again returns the same Report. Raises
        :class:`trainprof.TrainprofError` naming a file that could not be written (the other
        files are still written)."""
        global _active
        if self._report is not None:
            return self._report
        try:
            for listener in self._listeners:
                listener._on_finish()
            summary = self._core.finish()
        except _core.TrainprofError as e:
            if self._ranks is not None:  # the other ranks wait for this one's report: send it
                self._ranks.finish(self._core, "", self._db, f"its reports were not all written: {e}")
            raise
        finally:
            if _active is self:
                _active = None
            if self._stop_live is not None:  # after the view's last snapshot
                self._stop_live()
                self._stop_live = None
        if self._ranks is not None:
            self._report = self._ranks.finish(self._core, summary, self._db)
            return self._report
        run_dir = self.run_dir
        if self._core.print:
            sys.stdout.write(summary)
            sys.stdout.write(
                f"\nReports written to {run_dir}/ "
                "(report.html, summary.txt, report.json, *.csv, trace.json)\n"
            )
            sys.stdout.flush()
        self._report = Report(run_dir, summary, _record(run_dir, self._db, self._core.print))
        return self._report

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self._report is not None:
            return False
        if exc_type is not None:
            self.add_note(_stop_note(exc_type, exc, self.global_step))
            # Trackers mark the run FAILED, as MLflow's own client does for an exception.
            self.set_meta("stopped_by", exc_type.__name__)
            if self._ranks is not None:
                # The other ranks are likely still in their collectives: exchanging reports now
                # could hang them all. This rank writes its own folder; there is no merged report.
                print(f"trainprof: rank {self._ranks.rank} stopped by {exc_type.__name__}; its "
                      f"reports are in {self.run_dir} (no merged report)", file=sys.stderr)
                self._ranks = None
        try:
            self.finish()
        except _core.TrainprofError as e:
            if exc_type is None:
                raise
            print(f"trainprof: {e}", file=sys.stderr)
        return False

    def __repr__(self) -> str:
        state = "finished" if self.finished else f"step {self.profiler_step}"
        return f"trainprof.Session(run_dir={self.run_dir!r}, {state})"


def _stop_note(exc_type: Any, exc: Any, steps: int) -> str:
    if issubclass(exc_type, KeyboardInterrupt):
        why = "Ctrl-C (KeyboardInterrupt)"
    else:
        text = str(exc).splitlines()[0] if str(exc) else ""
        why = f"{exc_type.__name__}: {text}" if text else exc_type.__name__
    return f"stopped by {why} after {steps} training steps; the reports cover the completed steps"


def _record(run_dir: str, db: str, verbose: bool) -> Optional[str]:
    """Adds the run folder to the run history; a failure is printed, not raised."""
    try:
        run_id, path = _core.record_run(run_dir, db)
    except _core.TrainprofError as e:
        print(f"trainprof: the run was not recorded in the run history: {e}", file=sys.stderr)
        return None
    if run_id and verbose:
        print(f"Recorded as run {run_id} in {path}", file=sys.stderr)
    return run_id or None


def _forget_in_child() -> None:
    # A forked child (a DataLoader worker, os.fork) must not finish its parent's session.
    global _active
    _active = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _finish_at_exit() -> None:
    # A session the program never finished: write its reports rather than lose them.
    if _active is not None and not _active.finished:
        _active.add_note("the program ended without calling finish(); finished at exit")
        try:
            _active.finish()
        except Exception as e:  # noqa: BLE001 - the interpreter is exiting: report, never raise
            print(f"trainprof: {e}", file=sys.stderr)
