"""trainprof.lightning.TrainprofProfiler in real Lightning runs on the CPU: Lightning's action
names in the time report, train / validation steps in the speed report, one run folder per run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

lightning = pytest.importorskip("lightning", reason="lightning not installed")

import torch  # noqa: E402  (lightning depends on torch)
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import trainprof  # noqa: E402
from conftest import calls, load_report, python_env, section, table  # noqa: E402
from trainprof.lightning import TrainprofProfiler, _action_kind, _unjoined  # noqa: E402

TRAIN_FETCH = "[_TrainingEpochLoop].train_dataloader_next"
VAL_FETCH = "[_EvaluationLoop].val_next"

# 64 samples in batches of 8: 8 batches, more than limit_train_batches=5 and limit_val_batches=2.
#
# Fetch counts: Lightning's _PrefetchDataFetcher fetches one batch ahead only for a loader without
# a length. This loader has one, and the CombinedLoader around it reports min(8, limit), so every
# next() fetches exactly one batch, the training epoch loop stops after 5 batches without another
# fetch, and the evaluation loop's third next() raises StopIteration without fetching
# (lightning/pytorch/loops/fetchers.py, training_epoch_loop.py, evaluation_loop.py). Two epochs:
# 10 training fetches and batches, 2 validations of 2 batches each: 4 validation fetches.
EPOCHS, TRAIN_BATCHES, VAL_BATCHES = 2, 5, 2


class TinyModule(lightning.LightningModule):
    """A Linear layer on random data; ``fail_at`` makes training_step raise at that batch."""

    def __init__(self, fail_at: int = -1) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.fail_at = fail_at

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        if batch_idx == self.fail_at:
            raise RuntimeError("boom")
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def test_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.validation_step(batch, batch_idx)

    def predict_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return self.layer(batch[0])

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def _register_sharded_tensor_state_dict_hooks_if_available(self) -> None:
        # Lightning registers ShardedTensor hooks from torch.distributed._shard, which in torch
        # 1.13 (Debian's) does not import under Python 3.11 (a dataclass with a mutable
        # default). The module has no sharded tensors, so there is nothing to hook.
        pass


@pytest.fixture(autouse=True)
def _run_folders_written() -> Iterator[None]:
    """No run folder is left being written in the background past its test (whose TRAINPROF_DB
    and folder go with it)."""
    yield
    for finishing in list(_unjoined):
        finishing.join()


def _loader(seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    data = TensorDataset(torch.randn(64, 4, generator=g), torch.randn(64, 1, generator=g))
    return DataLoader(data, batch_size=8)


def _trainer(tmp_path: Path, profiler: TrainprofProfiler, **kwargs: Any) -> Any:
    settings: Dict[str, Any] = dict(
        max_epochs=EPOCHS,
        limit_train_batches=TRAIN_BATCHES,
        limit_val_batches=VAL_BATCHES,
        num_sanity_val_steps=0,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
        enable_checkpointing=False,
        accelerator="cpu",
        devices=1,
        default_root_dir=tmp_path,
        profiler=profiler,
    )
    settings.update(kwargs)
    return lightning.Trainer(**settings)


def _profiler(tmp_path: Path, verbose: bool = False) -> TrainprofProfiler:
    # One warm-up batch per stage, so that 10 training steps leave measured ones whatever the
    # default of speed.warmup_batches is. verbose: every action in the time table, not only the
    # concise set.
    overrides = {"output.print": False, "speed.warmup_batches": 1, "time.verbose": verbose}
    return TrainprofProfiler(output_dir=tmp_path, overrides=overrides)


def _report_json(profiler: TrainprofProfiler) -> Dict[str, Any]:
    """report.json of the run the profiler finished last (TRAINPROF_DB: conftest's _isolated)."""
    assert profiler.report is not None, "the profiler finished no Session"
    return load_report(profiler.report.run_dir)


def _speed(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Speed report: stage ("training", "validation", "training data loader", ...) -> its row."""
    return {row["stage"]: row for row in table(report, "speed", "speed_report")["rows"]}


def _speed_steps(report: Dict[str, Any]) -> Dict[str, int]:
    """Speed report: stage -> steps (fetches for a data loader)."""
    return {stage: row["steps"] for stage, row in _speed(report).items()}


def _notes(report: Dict[str, Any]) -> List[str]:
    sections = {s["id"]: s for s in report["sections"]}
    return list(sections["run"]["notes"]) if "run" in sections else []


def _has_step_callback(trainer: Any) -> bool:
    return any(type(cb).__module__ == "trainprof.lightning" for cb in trainer.callbacks)


def test_fit_writes_lightning_actions_and_speed_report(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler)
    trainer.fit(TinyModule(), _loader(0), _loader(1))

    report = _report_json(profiler)
    action_calls = calls(report)
    assert action_calls.get("run_training_epoch") == EPOCHS
    assert action_calls.get("run_training_batch") == EPOCHS * TRAIN_BATCHES
    assert action_calls.get(TRAIN_FETCH) == EPOCHS * TRAIN_BATCHES
    assert action_calls.get(VAL_FETCH) == EPOCHS * VAL_BATCHES

    # Steps come from the profiler's callback; the fetches count as data loading only because
    # their kind is "dataloader", and as training or validation by the step they fall in.
    assert _speed_steps(report) == {
        "training": EPOCHS * TRAIN_BATCHES,
        "validation": EPOCHS * VAL_BATCHES,
        "training data loader": EPOCHS * TRAIN_BATCHES,
        "validation data loader": EPOCHS * VAL_BATCHES,
    }
    # Every batch holds 8 samples: the batch size the callback found makes samples/s 8 x batches/s.
    for stage in ("training", "validation", "training data loader", "validation data loader"):
        row = _speed(report)[stage]
        assert row["batches_per_s"] > 0, stage
        assert row["samples_per_s"] == pytest.approx(8 * row["batches_per_s"]), stage
    metrics = section(report, "speed")["metrics"]
    assert metrics["training_avg_throughput_per_sample"]["value"] is not None
    assert report["meta"]["model"] == "TinyModule"

    assert Path(profiler.report.html_path).is_file()
    assert Path(profiler.report.run_dir).resolve().parent == tmp_path.resolve()
    assert profiler.summary() == profiler.report.summary != ""
    assert trainprof.active_session() is None
    assert not _has_step_callback(trainer)


def test_sanity_check_is_left_out(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, num_sanity_val_steps=2)
    trainer.fit(TinyModule(), _loader(0), _loader(1))

    report = _report_json(profiler)
    # The sanity check's two validation batches are neither validation steps nor, through the
    # first training step, training data-loader fetches.
    assert calls(report).get(VAL_FETCH) == EPOCHS * VAL_BATCHES
    steps = _speed_steps(report)
    assert steps["validation"] == EPOCHS * VAL_BATCHES
    assert steps["training data loader"] == EPOCHS * TRAIN_BATCHES
    assert steps["validation data loader"] == EPOCHS * VAL_BATCHES
    assert any("sanity check (2 validation batches" in note for note in _notes(report))


def test_validation_inside_an_epoch_returns_to_training(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    # 4 training batches per epoch, validation after batches 2 and 4 (val_check_batch = 2).
    trainer = _trainer(tmp_path, profiler, limit_train_batches=4, val_check_interval=0.5)
    trainer.fit(TinyModule(), _loader(0), _loader(1))

    report = _report_json(profiler)
    validations = EPOCHS * 2
    assert calls(report).get(VAL_FETCH) == validations * VAL_BATCHES
    # Batches 3 and 4 of each epoch follow a validation and must count as training again.
    assert _speed_steps(report) == {
        "training": EPOCHS * 4,
        "validation": validations * VAL_BATCHES,
        "training data loader": EPOCHS * 4,
        "validation data loader": validations * VAL_BATCHES,
    }


def test_validate_only(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler)
    trainer.validate(TinyModule(), dataloaders=_loader(1))

    report = _report_json(profiler)
    assert calls(report).get(VAL_FETCH) == VAL_BATCHES
    assert _speed_steps(report) == {
        "validation": VAL_BATCHES,
        "validation data loader": VAL_BATCHES,
    }


def test_test_batches_count_as_validation(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, limit_test_batches=VAL_BATCHES)
    trainer.test(TinyModule(), dataloaders=_loader(1))

    report = _report_json(profiler)
    assert calls(report).get("[_EvaluationLoop].test_next") == VAL_BATCHES
    assert _speed_steps(report) == {
        "validation": VAL_BATCHES,
        "validation data loader": VAL_BATCHES,
    }
    assert any("trainer.test()" in note for note in _notes(report))


def test_predict_opens_no_session(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, limit_predict_batches=2)
    predictions = trainer.predict(TinyModule(), dataloaders=_loader(1))
    assert len(predictions) == 2
    assert profiler.report is None and profiler.session is None
    assert not list(tmp_path.glob("*/report.json"))


def test_records_into_the_programs_session(tmp_path: Path) -> None:
    profiler = TrainprofProfiler()
    with trainprof.Session(output_dir=tmp_path, overrides={"output.print": False}) as session:
        trainer = _trainer(tmp_path, profiler)
        trainer.fit(TinyModule(), _loader(0), _loader(1))
        # The program's Session is left for the program to finish.
        assert not session.finished
        assert profiler.report is None
    assert session.report is not None
    report = load_report(session.report.run_dir)
    assert calls(report).get("run_training_batch") == EPOCHS * TRAIN_BATCHES
    assert _speed_steps(report)["training"] == EPOCHS * TRAIN_BATCHES


def test_each_fit_is_a_new_session(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    run_dirs = []
    for _ in range(2):
        trainer = _trainer(tmp_path, profiler)
        trainer.fit(TinyModule(), _loader(0), _loader(1))
        assert calls(_report_json(profiler)).get("run_training_batch") == EPOCHS * TRAIN_BATCHES
        assert not _has_step_callback(trainer)
        run_dirs.append(profiler.report.run_dir)
    assert run_dirs[0] != run_dirs[1]


def test_exception_finishes_the_session(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler)
    with pytest.raises(RuntimeError, match="boom"):
        trainer.fit(TinyModule(fail_at=2), _loader(0), _loader(1))

    assert trainprof.active_session() is None
    report = _report_json(profiler)
    # Batches 0 and 1 completed; batch 2 raised inside run_training_batch, whose scope Lightning
    # closed on the way out.
    assert calls(report).get("run_training_batch") == 3
    assert _speed_steps(report)["training"] == 2
    assert any("stopped by RuntimeError: boom" in note for note in _notes(report))


def test_filename_writes_the_report_text_instead_of_printing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profiler = TrainprofProfiler(dirpath=tmp_path, filename="prof")
    trainer = _trainer(tmp_path, profiler)
    trainer.fit(TinyModule(), _loader(0), _loader(1))

    assert profiler.report is not None
    # dirpath is also the run folder's parent when output_dir is not given.
    assert Path(profiler.report.run_dir).resolve().parent == tmp_path.resolve()
    # Lightning's file name: <stage>-<filename>.txt (Profiler._prepare_filename).
    assert (tmp_path / "fit-prof.txt").read_text(encoding="utf-8") == profiler.report.summary
    assert profiler.report.summary not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("run_training_epoch", "loop"),
        ("run_training_batch", "loop"),
        (TRAIN_FETCH, "dataloader"),
        (VAL_FETCH, "dataloader"),
        ("[_EvaluationLoop].test_next", "dataloader"),
        ("[_PredictionLoop].predict_next", "dataloader"),
        ("[Strategy]SingleDeviceStrategy.training_step", "step"),
        ("[Strategy]DDPStrategy.validation_step", "step"),
        ("[Strategy]SingleDeviceStrategy.backward", "backward"),
        ("[LightningModule]TinyModule.optimizer_step", "optimizer"),
        ("[LightningModule]TinyModule.optimizer_zero_grad", "optimizer"),
        ("optimizer_step", "optimizer"),
        ("[LightningModule]TinyModule.on_train_batch_start", "other"),
        ("[LightningModule]TinyModule.on_before_backward", "other"),
        ("[Callback]ModelCheckpoint{'monitor': None}.on_validation_end", "other"),
        ("[Strategy]SingleDeviceStrategy.batch_to_device", "other"),
        ("setup_train_dataloader", "other"),
    ],
)
def test_action_kind(action: str, kind: str) -> None:
    assert _action_kind(action) == kind


class RecordingProfiler(TrainprofProfiler):
    """Keeps every action name Lightning hands the profiler, through profile() or start()."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.actions: List[str] = []

    def profile(self, action_name: str) -> Any:
        self.actions.append(action_name)
        return super().profile(action_name)

    def start(self, action_name: str) -> None:
        self.actions.append(action_name)
        super().start(action_name)


def test_no_callback_hook_of_the_profiler_runs_in_the_loop(tmp_path: Path) -> None:
    """Lightning calls (and profiles) every callable hook of every callback, 6 a batch; the
    profiler's callback is dispatched only for setup(), and the steps are still all counted."""
    profiler = RecordingProfiler(output_dir=tmp_path, overrides={"output.print": False})
    trainer = _trainer(tmp_path, profiler)
    trainer.fit(TinyModule(), _loader(0), _loader(1))

    own = {a for a in profiler.actions if a.startswith("[Callback]_Trainprof")}
    assert own == {"[Callback]_TrainprofExceptionCallback.setup"}
    assert _speed_steps(_report_json(profiler))["training"] == EPOCHS * TRAIN_BATCHES


class UnevenModule(TinyModule):
    """Overrides the hooks whose actions end steps and begin stages: Lightning still calls them
    through the profiler, so the steps are counted as with the inherited ones."""

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        with self.trainer.profiler.profile("user_block") as block:
            assert block.name == "user_block"

    def on_validation_epoch_start(self) -> None:
        pass


def test_each_step_gets_the_size_of_its_own_batch(tmp_path: Path) -> None:
    """60 samples in batches of 8: the last batch of each epoch holds 4. The batch size comes
    from the batch Lightning is working on at on_train_batch_end, step by step."""
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(60, 4, generator=g), torch.randn(60, 1, generator=g))
    profiler = _profiler(tmp_path, verbose=True)
    trainer = _trainer(tmp_path, profiler, limit_train_batches=None)
    trainer.fit(UnevenModule(), DataLoader(data, batch_size=8), _loader(1))

    report = _report_json(profiler)
    rows = table(report, "speed", "training_rate")["rows"]
    sizes = [round(row["samples_per_s"] / row["batches_per_s"]) for row in rows]
    assert sizes == ([8] * 7 + [4]) * EPOCHS
    assert calls(report).get("user_block") == 8 * EPOCHS
    assert _speed_steps(report)["validation"] == EPOCHS * VAL_BATCHES


class ModuleLoaders(TinyModule):
    """The loaders come from the LightningModule: Lightning then runs its val_dataloader hook
    inside the sanity check."""

    def train_dataloader(self) -> DataLoader:
        return _loader(0)

    def val_dataloader(self) -> DataLoader:
        return _loader(1)


def test_sanity_check_with_the_modules_loaders_is_left_out(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path, verbose=True)
    trainer = _trainer(tmp_path, profiler, num_sanity_val_steps=2)
    trainer.fit(ModuleLoaders())

    report = _report_json(profiler)
    assert calls(report).get(VAL_FETCH) == EPOCHS * VAL_BATCHES
    assert calls(report).get("[LightningModule]ModuleLoaders.on_validation_start") == EPOCHS
    assert _speed_steps(report)["validation"] == EPOCHS * VAL_BATCHES
    assert any("sanity check (2 validation batches" in note for note in _notes(report))


def test_own_callback_is_not_in_the_report_and_predict_keeps_the_reports(tmp_path: Path) -> None:
    """The profiler's callback's hooks are trainprof's bookkeeping, not the user's time; predict()
    leaves the last report of each stage in place."""
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, limit_predict_batches=2)
    trainer.fit(TinyModule(), _loader(0), _loader(1))
    fitted = profiler.report
    assert fitted is not None
    assert not [a for a in calls(_report_json(profiler)) if "_Trainprof" in a]
    trainer.validate(TinyModule(), _loader(1))
    trainer.predict(TinyModule(), dataloaders=_loader(1))
    assert set(profiler.reports) == {"fit", "validate"}
    assert profiler.reports["fit"].run_dir == fitted.run_dir
    assert profiler.report is profiler.reports["validate"]  # not erased by predict


def test_run_folder_defaults_to_lightnings_log_dir(tmp_path: Path) -> None:
    profiler = TrainprofProfiler(overrides={"output.print": False})
    trainer = _trainer(tmp_path / "logs", profiler)
    trainer.fit(TinyModule(), _loader(0))
    assert profiler.report is not None
    run_dir = Path(profiler.report.run_dir)
    assert run_dir.is_absolute()
    assert run_dir.parent == (tmp_path / "logs" / "trainprof").resolve()


class LrModule(TinyModule):
    def __init__(self) -> None:
        super().__init__()
        self.lr = 0.01

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def test_the_tuner_swapping_callbacks_keeps_the_steps(tmp_path: Path) -> None:
    """Tuner.lr_find runs fit with its own callbacks in place of the trainer's; the steps come
    from the LightningModule's hook actions, so they and samples/s are still counted."""
    from lightning.pytorch.tuner import Tuner

    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, max_epochs=1, limit_train_batches=8)
    # No early stop: a diverging loss would end lr_find after a random number of batches.
    Tuner(trainer).lr_find(LrModule(), train_dataloaders=_loader(0), num_training=6,
                           early_stop_threshold=None, update_attr=False)
    report = _report_json(profiler)
    assert calls(report).get("run_training_batch") == 6
    assert _speed_steps(report)["training"] == 6
    assert _speed(report)["training"]["samples_per_s"] == pytest.approx(
        8 * _speed(report)["training"]["batches_per_s"])
    assert not _has_step_callback(trainer)


def test_ddp_spawn_hands_the_report_to_the_parent(tmp_path: Path) -> None:
    """Under ddp_spawn the ranks run in spawned processes; rank 0's merged report comes back to
    the profiler of the process that called fit."""
    profiler = _profiler(tmp_path)
    trainer = _trainer(tmp_path, profiler, strategy="ddp_spawn", devices=2, max_epochs=1)
    trainer.fit(TinyModule(), _loader(0))
    assert profiler.report is not None
    report = load_report(profiler.report.run_dir)
    assert section(report, "ranks")["metrics"]["world_size"]["value"] == 2
    assert set(profiler.reports) == {"fit"}


class CallbacksModule(TinyModule):
    def configure_callbacks(self) -> List[Any]:
        return []


def test_configure_callbacks_before_setup_is_named(tmp_path: Path) -> None:
    """Lightning calls configure_callbacks before the profiler's setup(): its time is named in
    the report's notes instead of lost."""
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(CallbacksModule(), _loader(0))
    notes = _notes(_report_json(profiler))
    early = [n for n in notes if n.startswith("Lightning ran before the profiler was set up")]
    assert len(early) == 1, notes
    assert "[LightningModule]CallbacksModule.configure_callbacks (" in early[0]


def test_memory_keys_attach_pytorchs_operators_to_the_fit(tmp_path: Path) -> None:
    """memory.enabled in a Lightning run gives the operator table, as in a plain loop."""
    profiler = TrainprofProfiler(output_dir=str(tmp_path), overrides={
        "output.print": False, "memory.enabled": True, "memory.warmup": 1, "memory.steps": 2})
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    report = _report_json(profiler)
    ops = {r["name"] for r in table(report, "operators", "operators")["rows"]}
    assert "aten::linear" in ops or "aten::addmm" in ops, ops
    assert "report_not_available" not in {d["name"] for d in report["diagnostics"]}
    # Memory by role, with the trainer's optimizer found when the recorded steps begin; its step
    # (with Lightning's closure inside) is a phase. training_step calls the layer, not the
    # module's forward, so there is no "end of forward" sample.
    samples = table(report, "memory_by_role", "role_samples")["rows"]
    assert {r["at"] for r in samples} == {"start of optimizer.step", "end of optimizer.step",
                                          "end of step"}
    assert all(r["parameter_bytes"] == (4 + 1) * 4 for r in samples)
    assert "roles_without_optimizer" not in {d["name"] for d in report["diagnostics"]}


# ---- the run folder written in the background, after fit returns (issue 73) ---------------------

# A run folder's files with the default outputs (bench/lightning_overhead.py checks the same).
RUN_FILES = {"report.html", "report.json", "summary.txt", "trace.json", "time_report.csv",
             "speed_report.csv", "training_rate.csv"}


def _outline(run_dir: str) -> Dict[str, Any]:
    """What a run folder holds, without its timings: its files, report.json's sections and
    tables, the time report's calls and the speed report's steps."""
    report = load_report(run_dir)
    return {
        "files": sorted(p.name for p in Path(run_dir).iterdir() if p.is_file()),
        "sections": [(s["id"], [t["id"] for t in s.get("tables", [])])
                     for s in report["sections"]],
        "calls": calls(report),
        "steps": _speed_steps(report),
    }


def _fit_outline(
    tmp_path: Path, background: bool, monkeypatch: pytest.MonkeyPatch
) -> Dict[str, Any]:
    monkeypatch.setattr(TrainprofProfiler, "_finish_in_background", background)
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    # Handed to a thread (or not) when fit returns, whether or not that thread is done yet.
    assert (profiler._pending is not None) == background
    report = profiler.report  # waits for the thread
    assert report is not None and report.run_id is not None  # recorded in the run history
    assert profiler._pending is None and trainprof.active_session() is None
    assert not _unjoined  # its thread is done
    assert RUN_FILES <= set(os.listdir(report.run_dir))
    return _outline(report.run_dir)


def test_the_background_run_folder_is_the_one_written_before_fit_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _fit_outline(tmp_path / "before", False, monkeypatch)
    after = _fit_outline(tmp_path / "after", True, monkeypatch)
    assert after == before
    assert after["calls"]["run_training_batch"] == EPOCHS * TRAIN_BATCHES


def test_the_background_thread_prints_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profiler = TrainprofProfiler(output_dir=tmp_path)
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    assert profiler.report is not None
    out = capsys.readouterr().out
    assert profiler.report.summary in out
    assert f"Reports written to {profiler.report.run_dir}/" in out


def test_two_fits_in_a_row_each_write_their_run_folder(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    trainer = _trainer(tmp_path, profiler)  # the first folder is not read in between
    trainer.fit(TinyModule(), _loader(0), _loader(1))
    assert profiler.report is not None
    run_dirs = sorted(str(p.parent) for p in tmp_path.glob("*/report.json"))
    assert len(run_dirs) == 2 and profiler.report.run_dir in run_dirs
    for run_dir in run_dirs:
        assert RUN_FILES <= set(os.listdir(run_dir))
        assert calls(load_report(run_dir))["run_training_batch"] == EPOCHS * TRAIN_BATCHES
    validated = trainer.validate(TinyModule(), _loader(1))  # and a validate after them
    assert validated and set(profiler.reports) == {"fit", "validate"}


class RecordingLogger(lightning.pytorch.loggers.Logger):
    """Keeps the metrics it is given to log, and their steps."""

    def __init__(self) -> None:
        super().__init__()
        self.logged: List[Dict[str, float]] = []
        self.steps: List[int] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def log_metrics(self, metrics: Dict[str, float], step: Any = None) -> None:
        self.logged.append(dict(metrics))
        self.steps.append(step)


def test_the_background_thread_logs_to_the_trainers_loggers(tmp_path: Path) -> None:
    logger = RecordingLogger()
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler, logger=logger).fit(TinyModule(), _loader(0), _loader(1))
    assert profiler.report is not None  # waits, loggers included
    headline = [m for m in logger.logged if any(k.startswith("trainprof/speed.") for k in m)]
    assert len(headline) == 1
    # At the step the trainer had reached, read when fit ended.
    assert logger.steps[logger.logged.index(headline[0])] == EPOCHS * TRAIN_BATCHES
    assert any("trainprof/training_rate" in m for m in logger.logged)


class UnwritableModule(TinyModule):
    """Puts a folder where the run folder's summary.txt goes, before the profiler finishes."""

    def on_fit_end(self) -> None:
        os.mkdir(os.path.join(self.trainer.profiler.session.run_dir, "summary.txt"))


def test_an_error_in_the_background_is_raised_by_reading_the_report(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(UnwritableModule(), _loader(0), _loader(1))
    with pytest.raises(trainprof.TrainprofError, match="summary.txt"):
        profiler.report  # noqa: B018 - the read waits and raises
    # Raised once; the run has no Report, as when fit raised it.
    assert profiler.report is None
    run_dirs = list(tmp_path.glob("*/report.json"))  # the other files are still written
    assert len(run_dirs) == 1 and calls(load_report(str(run_dirs[0].parent)))


def test_an_error_in_the_background_is_printed_by_the_next_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(UnwritableModule(), _loader(0), _loader(1))
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    err = capsys.readouterr().err
    assert "trainprof: " in err and "summary.txt" in err
    assert profiler.report is not None and "summary.txt" in os.listdir(profiler.report.run_dir)


def test_summary_waits_for_the_background_thread(tmp_path: Path) -> None:
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    text = profiler.summary()
    assert text and profiler._pending is None
    assert Path(profiler.reports["fit"].run_dir, "summary.txt").read_text(encoding="utf-8") == text


_EXIT_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[2])
import test_lightning as t
from pathlib import Path
profiler = t._profiler(Path(sys.argv[1]))
t._trainer(Path(sys.argv[1]), profiler).fit({module}(), t._loader(0), t._loader(1))
{then}
"""

# Forks at once; the child reads the report and exits through atexit, the parent waits for it.
_FORK = """
import os
child = os.fork()
if child == 0:
    assert profiler.report is None or profiler.report.run_dir
    sys.exit(0)
assert os.waitpid(child, 0)[1] == 0
"""


def _fit_and_exit(tmp_path: Path, module: str, then: str = "") -> subprocess.CompletedProcess[str]:
    """A program that fits and exits at once, without reading the report."""
    script = _EXIT_SCRIPT.format(module=module, then=then)
    return subprocess.run([sys.executable, "-c", script, str(tmp_path), str(Path(__file__).parent)],
                          env=python_env(), capture_output=True, text=True, timeout=120)


def test_the_interpreter_waits_for_the_run_folder_at_exit(tmp_path: Path) -> None:
    done = _fit_and_exit(tmp_path, "t.TinyModule")
    assert done.returncode == 0, done.stderr
    run_dirs = [p.parent for p in tmp_path.glob("*/report.json")]
    assert len(run_dirs) == 1 and RUN_FILES <= set(os.listdir(run_dirs[0]))
    assert calls(load_report(str(run_dirs[0])))["run_training_batch"] == EPOCHS * TRAIN_BATCHES


def test_an_error_in_the_background_is_printed_at_exit(tmp_path: Path) -> None:
    done = _fit_and_exit(tmp_path, "t.UnwritableModule")
    assert done.returncode == 0, done.stderr
    assert "trainprof: " in done.stderr and "summary.txt" in done.stderr


def test_a_forked_child_does_not_wait_for_its_parents_thread(tmp_path: Path) -> None:
    done = _fit_and_exit(tmp_path, "t.TinyModule", then=_FORK)
    assert done.returncode == 0, done.stderr
    run_dirs = [p.parent for p in tmp_path.glob("*/report.json")]
    assert len(run_dirs) == 1 and RUN_FILES <= set(os.listdir(run_dirs[0]))


def test_a_new_session_right_after_fit_waits_for_the_background_one(tmp_path: Path) -> None:
    """A program that opens its own Session as soon as fit returns gets it (it raised "another
    trainprof.Session is open" while the fit's folder was still being written)."""
    profiler = _profiler(tmp_path)
    _trainer(tmp_path, profiler).fit(TinyModule(), _loader(0), _loader(1))
    assert profiler._pending is not None  # the fit's Session finishes on its thread
    with trainprof.Session(run_dir=str(tmp_path / "mine"), db="off",
                           overrides={"output.print": False}) as mine:
        mine.step()
    assert RUN_FILES <= set(os.listdir(profiler.report.run_dir))
    assert (tmp_path / "mine" / "report.json").is_file()
