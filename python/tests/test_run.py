"""A real Python training script (Debian's torch) under `trainprof run`: the command's process
tree is sampled, and the Session the script opens writes into the run's folder, whose report
then holds both."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT, calls, cli, load_report, python_env, table

pytest.importorskip("torch", reason="torch not installed (Debian: python3-torch)")


def test_example_under_trainprof_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [cli(), "run", "-o", "runs", "--set", "system.interval_s=0.1", "--",
         PYTHON, str(ROOT / "examples/python/fashion_mnist.py"), "--epochs", "1",
         "--limit-train-batches", "15", "--limit-val-batches", "2", "--workers", "1"],
        capture_output=True, text=True, env=python_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    [run_dir] = list((tmp_path / "runs").glob("*-python3*"))
    report = load_report(str(run_dir))
    assert report["kind"] == "run"
    # The script's own Session: its report in session/, its time and speed sections in the run's.
    assert (run_dir / "session" / "report.json").is_file()
    assert calls(report)["run_training_batch"] == 15
    assert [s["id"] for s in report["sections"]][:4] == ["run", "time", "speed", "system"]
    # The tree: the script and its DataLoader worker (num_workers=1).
    rows = table(report, "system", "processes")["rows"]
    assert len(rows) >= 2
    assert all(r["command"] for r in rows)
    assert max(r["peak_rss_bytes"] for r in rows) > 50 << 20  # torch is loaded
    # One history row: the run, not the Session inside it.
    listed = subprocess.run([cli(), "runs", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    assert listed.count('"kind": "run"') == 1 and '"kind": "profile"' not in listed, listed


PROFILING_CYCLES = """
import sys, torch
from torch.profiler import profile, schedule, tensorboard_trace_handler
m, x = torch.nn.Linear(64, 64), torch.randn(32, 64)
with profile(schedule=schedule(wait=0, warmup=0, active=2, repeat=3),
             on_trace_ready=tensorboard_trace_handler(sys.argv[1]), record_shapes=True) as p:
    for _ in range(6):
        m(x).sum().backward()
        p.step()
"""


def test_profiling_cycles_of_one_process_are_one_rank(tmp_path: Path) -> None:
    """tensorboard_trace_handler writes a file per profiling cycle: three files, one rank."""
    script = tmp_path / "cycles.py"
    script.write_text(PROFILING_CYCLES)
    done = subprocess.run(
        [cli(), "run", "-o", "runs", "--traces", "tb", "--", PYTHON, str(script), "tb"],
        capture_output=True, text=True, env=python_env(), timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "tb").glob("*.pt.trace.json"))) == 3
    [run_dir] = list((tmp_path / "runs").glob("*-python3*"))
    report = load_report(str(run_dir))
    steps = table(report, "overview", "step_breakdown")["rows"]
    assert len({r["rank"] for r in steps}) == 1, steps
    assert len(steps) == 6  # two steps per cycle, in one rank
    names = [d["message"] for d in report["diagnostics"]]
    assert any("3 files of process" in n for n in names), names
    assert not any("also comes from" in n for n in names), names
