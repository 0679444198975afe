"""examples/python/fashion_mnist.py end to end on CPU with Debian's torch: the run folder, the
time report's exact call counts, the speed and system sections, and the run history."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT, calls, load_report, python_env, section, table

pytest.importorskip("torch", reason="torch not installed (Debian: python3-torch)")
pytest.importorskip("numpy", reason="numpy not installed (Debian: python3-numpy)")
DATA = "/usr/share/datasets/fashion-mnist"


def run_example(*args: str) -> subprocess.CompletedProcess:
    if not os.path.isdir(DATA):
        pytest.fail(f"{DATA} is missing: apt-get install dataset-fashion-mnist")
    return subprocess.run(
        [PYTHON, str(ROOT / "examples/python/fashion_mnist.py"), "--threads", "1", *args],
        capture_output=True, text=True, env=python_env(), timeout=600)


def test_example_end_to_end(tmp_path: Path) -> None:
    done = run_example("--epochs", "2", "--limit-train-batches", "12", "--limit-val-batches",
                       "2", "--set", "time.verbose=true", "--set", "system.enabled=true",
                       "--set", "system.interval_s=0.1")
    assert done.returncode == 0, done.stderr
    assert "Time report" in done.stdout and "Speed report" in done.stdout
    [run_dir] = list((tmp_path / "runs").glob("*-fashion-mnist-py"))
    for f in ("report.json", "report.html", "trace.json", "summary.txt", "time_report.csv",
              "speed_report.csv", "training_rate.csv", "system_report.csv"):
        assert (run_dir / f).is_file(), f
    report = load_report(str(run_dir))
    assert calls(report) == {
        "run_training_epoch": 2,
        "run_training_batch": 24,
        "[_TrainingEpochLoop].train_dataloader_next": 24,
        "training_step": 24,
        "[Model].forward": 28,
        "optimizer_zero_grad": 24,
        "backward": 24,
        "optimizer_step": 24,
        "run_validation": 2,
        "validation_step": 4,
        "[_EvaluationLoop].val_next": 4,
    }
    speed = {r["stage"]: r for r in table(report, "speed", "speed_report")["rows"]}
    assert speed["training"]["steps"] == 24 and speed["validation"]["steps"] == 4
    assert speed["training"]["samples_per_s"] > 0
    assert speed["training data loader"]["steps"] == 24
    assert section(report, "system")["tables"]
    assert report["meta"]["device"] == "cpu"
    assert f"in {tmp_path / 'history.db'}" in done.stderr


def test_example_bad_config_is_one_line(tmp_path: Path) -> None:
    done = run_example("--epochs", "1", "--set", "time.verbos=true")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "fashion_mnist.py: --set time.verbos=true: unknown key 'time.verbos'; "
        "did you mean 'time.verbose'?"]
    assert not (tmp_path / "runs").exists()
