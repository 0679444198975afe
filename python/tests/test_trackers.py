"""The Lightning loggers' side of a finished run (trainprof._trackers), with logger objects that
record their calls: Lightning's public logger API, without Lightning installed."""

import json
import os

import pytest

from trainprof import _trackers


def _run_folder(tmp_path):
    report = {
        "kind": "profile",
        "sections": [
            {"id": "speed", "metrics": {
                "training_avg_throughput_per_sample": {"value": 9016.5, "unit": "per_second"},
                "note": {"value": "text", "unit": "text"}},
             "tables": [{"id": "training_rate", "rows": [
                 {"step": 0, "samples_per_s": 100.0}, {"step": 1, "samples_per_s": 120.0}]},
                 {"id": "validation_rate", "rows": [{"step": 0, "samples_per_s": 300.0}]}]},
            {"id": "time", "metrics": {"wall_time_s": {"value": 4.5, "unit": "seconds"}}},
        ],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.json").write_text(json.dumps(report))
    (tmp_path / "run" / "summary.txt").write_text("Time report\n  Wall time 4.50 s\n")
    (tmp_path / "run" / "speed_report.csv").write_text("stage\ntraining\n")
    (tmp_path / "run" / "rank0").mkdir()  # sub-folders are not handed over
    return str(tmp_path / "run")


class RecordingLogger:
    def __init__(self):
        self.calls = []
        self.saved = 0

    def log_metrics(self, metrics, step=None):
        self.calls.append((dict(metrics), step))

    def save(self):
        self.saved += 1


class FakeMlflowClient:
    def __init__(self):
        self.artifacts = []

    def log_artifacts(self, run_id, local_dir, artifact_path=None):
        self.artifacts.append((run_id, sorted(os.listdir(local_dir)), artifact_path))


class MLFlowLoggerLike(RecordingLogger):
    def __init__(self):
        super().__init__()
        self.run_id = "0123abcd"
        self.experiment = FakeMlflowClient()


class FakeWriter:
    def __init__(self):
        self.texts = []

    def add_text(self, tag, text):
        self.texts.append((tag, text))


class TensorBoardLoggerLike(RecordingLogger):
    def __init__(self, log_dir):
        super().__init__()
        self.log_dir = log_dir
        self.experiment = FakeWriter()


def test_metrics_and_rate_curves_reach_every_logger(tmp_path):
    run = _run_folder(tmp_path)
    plain = RecordingLogger()
    lines = _trackers.log_to_loggers([plain], run, last_step=600)
    assert lines == []  # nothing to hand files to
    assert ({"trainprof/training_rate": 100.0}, 0) in plain.calls
    assert ({"trainprof/training_rate": 120.0}, 1) in plain.calls
    assert ({"trainprof/validation_rate": 300.0}, 0) in plain.calls
    final = [c for c in plain.calls if c[1] == 600]
    assert final == [({"trainprof/speed.training_avg_throughput_per_sample": 9016.5,
                       "trainprof/time.wall_time_s": 4.5}, 600)]
    assert plain.saved == 1


def test_mlflow_logger_gets_the_report_files_as_artifacts(tmp_path):
    run = _run_folder(tmp_path)
    logger = MLFlowLoggerLike()
    lines = _trackers.log_to_loggers([logger], run, last_step=3)
    assert lines == ["MLflow run 0123abcd: artifacts under trainprof/"]
    (run_id, files, path), = logger.experiment.artifacts
    assert (run_id, path) == ("0123abcd", "trainprof")
    assert "report.json" in files and "summary.txt" in files


def test_tensorboard_logger_gets_the_text_report_and_the_files(tmp_path):
    run = _run_folder(tmp_path)
    logger = TensorBoardLoggerLike(str(tmp_path / "tb"))
    lines = _trackers.log_to_loggers([logger], run, last_step=3)
    assert lines == [f"TensorBoard {tmp_path / 'tb'}: text summary, reports in trainprof/"]
    (tag, text), = logger.experiment.texts
    assert tag == "trainprof/summary" and "Wall time 4.50 s" in text
    copied = sorted(os.listdir(tmp_path / "tb" / "trainprof"))
    assert copied == ["report.json", "speed_report.csv", "summary.txt"]


def test_a_failing_logger_is_a_warning_not_a_lost_run(tmp_path):
    run = _run_folder(tmp_path)

    class Broken(RecordingLogger):
        def log_metrics(self, metrics, step=None):
            raise ConnectionError("tracking server down")

    ok = RecordingLogger()
    lines = _trackers.log_to_loggers([Broken(), ok], run, last_step=1)
    assert lines == ["warning: Broken did not take the report: tracking server down"]
    assert ok.calls  # the next logger still gets the run


def test_missing_report_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        _trackers.log_to_loggers([RecordingLogger()], str(tmp_path), last_step=0)


def test_a_session_exports_to_mlflow_and_tensorboard_through_output_keys(tmp_path):
    import trainprof

    store, tb = tmp_path / "mlruns", tmp_path / "tb"
    with trainprof.Session(name="exported", overrides={
            "output.print": False, "output.mlflow": str(store),
            "output.tensorboard": str(tb)}) as session:
        session.batch_size = 8
        session.stage("train")
        for _ in range(3):
            with trainprof.scope("run_training_batch", kind="loop"):
                pass
            session.step()
    experiments = [p for p in store.iterdir() if p.is_dir() and p.name not in (".trash", "0")]
    assert len(experiments) == 1
    assert "name: 'exported'" in (experiments[0] / "meta.yaml").read_text()
    runs = [p for p in experiments[0].iterdir() if p.is_dir()]
    assert len(runs) == 1
    assert (runs[0] / "artifacts" / "report.json").is_file()
    lines = (runs[0] / "metrics" / "training_rate").read_text().split("\n")
    assert len([line for line in lines if line]) == 3  # one per step: "timestamp value step"
    assert [p.name for p in tb.iterdir()][0].startswith("events.out.tfevents.")


@pytest.mark.parametrize("fails", [False, True])
def test_the_mlflow_run_grows_while_it_trains_then_finishes_or_fails(tmp_path, fails):
    # output.mlflow: RUNNING in the store while the loop trains, training_rate growing a line a
    # snapshot; FINISHED at the end, or FAILED when an exception left the session, as MLflow's
    # own client marks it; one run either way.
    import time

    import trainprof

    store = tmp_path / "mlruns"

    def run_folder():
        metas = list(store.glob("[1-9]*/*/meta.yaml"))
        assert len(metas) == 1, metas
        return metas[0].parent

    def status():
        text = (run_folder() / "meta.yaml").read_text().splitlines()
        return [line for line in text if line.startswith("status:")][0]

    seen = []
    with pytest.raises(RuntimeError) if fails else open(os.devnull) as _:
        with trainprof.Session(name="live-mlflow", overrides={
                "output.print": False, "output.mlflow": str(store),
                "live.interval_s": 0.1}) as session:
            session.batch_size = 8
            for _ in range(40):
                time.sleep(0.01)
                session.step()
            seen.append(status())
            seen.append(len((run_folder() / "metrics" / "training_rate").read_text().split()))
            if fails:
                raise RuntimeError("boom")
    assert seen[0] == "status: 1"
    assert seen[1] >= 3  # at least one "timestamp value step" line
    assert status() == ("status: 4" if fails else "status: 3")
    assert not (run_folder() / "tags" / "trainprof.live").exists()
    assert (run_folder() / "artifacts" / "report.json").is_file()
