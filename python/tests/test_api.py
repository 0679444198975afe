"""The trainprof Python API against the C++ core: scopes, the decorator, the iterator wrapper,
sessions, config errors, threads, Ctrl-C and the run history."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import List
from pathlib import Path

import pytest

import trainprof
from conftest import PYTHON, ROOT, calls, cli, load_report, python_env, section, table

QUIET = {"output.print": False, "time.verbose": True, "speed.warmup_batches": 0}


def test_version_is_the_cpp_version() -> None:
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(trainprof VERSION ([0-9.]+)", cmake).group(1)
    assert trainprof.__version__ == version
    assert trainprof._core.__version__ == version


def test_nesting_and_counts(tmp_path: Path) -> None:
    with trainprof.Session(name="nest", overrides=QUIET) as s:
        s.batch_size = 4
        s.stage("train")
        for _ in range(3):
            with trainprof.scope("run_training_batch", kind="loop"):
                for _ in range(2):
                    with trainprof.scope("[Model].forward", kind=trainprof.Kind.FORWARD):
                        time.sleep(0.001)
            s.step()
    report = load_report(s.report.run_dir)
    assert calls(report) == {"run_training_batch": 3, "[Model].forward": 6}
    rows = {r["action"]: r for r in table(report, "time", "time_report")["rows"]}
    assert rows["run_training_batch"]["total_s"] >= rows["[Model].forward"]["total_s"] >= 0.006
    # In trace.json every forward lies inside a batch on the same thread.
    events = json.loads(Path(s.report.run_dir, "trace.json").read_text())["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    batches = [e for e in spans if e["name"] == "run_training_batch"]
    forwards = [e for e in spans if e["name"] == "[Model].forward"]
    assert len(batches) == 3 and len(forwards) == 6
    for f in forwards:
        assert any(b["tid"] == f["tid"] and b["ts"] <= f["ts"] and
                   f["ts"] + f["dur"] <= b["ts"] + b["dur"] for b in batches)


def test_cuda_events_give_gpu_time_per_action(monkeypatch: pytest.MonkeyPatch) -> None:
    """time.cuda_events through the build tree's stand-in CUDA runtime, whose GPU clock advances
    1 ms per recorded event: the outer scope spans 3 marks, the nested one 1."""
    fake = Path(cli()).parents[2] / "libtrainprof_fake_cudart.so"
    if not fake.exists():
        pytest.skip(f"needs the build tree's stand-in CUDA runtime ({fake}), a test build output")
    monkeypatch.setenv("TRAINPROF_CUDART", str(fake))
    with trainprof.Session(name="gpu", overrides={**QUIET, "time.cuda_events": True}) as s:
        for _ in range(2):
            with trainprof.scope("training_step", kind="step"):
                with trainprof.scope("[Model].forward", kind="forward"):
                    pass
            s.step()
    rows = {r["action"]: r for r in table(load_report(s.report.run_dir), "gpu_time",
                                          "gpu_time")["rows"]}
    assert rows["training_step"]["calls"] == 2
    assert rows["training_step"]["gpu_mean_s"] == pytest.approx(0.003)
    assert rows["[Model].forward"]["gpu_total_s"] == pytest.approx(0.002)


def test_exception_ends_the_scope_and_propagates() -> None:
    s = trainprof.Session(name="exc", overrides=QUIET)
    with pytest.raises(ZeroDivisionError):
        with trainprof.scope("failing"):
            1 / 0
    with trainprof.scope("after"):
        pass
    s.step()
    report = s.finish()
    assert calls(report.to_dict()) == {"failing": 1, "after": 1}


def test_exception_in_session_block_finishes_with_a_note() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with trainprof.Session(name="boom", overrides=QUIET) as s:
            s.step()
            raise RuntimeError("boom")
    assert s.finished
    run = section(s.report.to_dict(), "run")
    assert any("stopped by RuntimeError: boom after 1 training steps" in n for n in run["notes"])


class Model:
    @trainprof.profiled("[Model].forward", kind="forward")
    def forward(self, x: int) -> int:
        return x + 1


@trainprof.profiled
def load_batch(i: int) -> int:
    return i * 2


def test_decorator_on_functions_and_methods() -> None:
    with trainprof.Session(name="deco", overrides=QUIET) as s:
        m = Model()
        assert [m.forward(load_batch(i)) for i in range(5)] == [1, 3, 5, 7, 9]
        s.step()
    assert calls(s.report.to_dict()) == {"[Model].forward": 5, "load_batch": 5}
    assert Model.forward.__name__ == "forward"  # functools.wraps


def test_timed_iter_records_each_batch_and_not_the_end() -> None:
    data = list(range(7))
    with trainprof.Session(name="iter", overrides=QUIET) as s:
        s.batch_size = 16
        loader = trainprof.timed_iter(data)
        assert len(loader) == 7
        for epoch in range(2):
            s.epoch = epoch
            s.stage("train")
            seen = [b for b in loader]
            assert seen == data
            for _ in seen:
                s.step()
        s.stage("validation")
        for _ in trainprof.timed_iter(iter(data[:3]), action="[_EvaluationLoop].val_next"):
            s.step()
    report = s.report.to_dict()
    assert calls(report) == {"[_TrainingEpochLoop].train_dataloader_next": 14,
                             "[_EvaluationLoop].val_next": 3}
    speed = {r["stage"]: r for r in table(report, "speed", "speed_report")["rows"]}
    assert speed["training"]["steps"] == 14
    assert speed["validation"]["steps"] == 3
    assert speed["training data loader"]["steps"] == 14


def test_config_errors_name_the_key_and_the_nearest() -> None:
    with pytest.raises(trainprof.ConfigError, match="did you mean 'speed.warmup_batches'"):
        trainprof.Session(overrides={"speed.warmup_batch": 2})
    with pytest.raises(trainprof.ConfigError, match="out of range"):
        trainprof.Session(overrides={"system.interval_s": 0})
    with pytest.raises(trainprof.ConfigError, match="no such config file"):
        trainprof.Session("missing.yaml")
    Path("bad.yaml").write_text("time:\n  enabled: true\n  verbos: true\n")
    with pytest.raises(trainprof.ConfigError,
                       match=r"bad.yaml:3:\d+: unknown key 'time.verbos'; did you mean"):
        trainprof.Session("bad.yaml")
    assert issubclass(trainprof.ConfigError, ValueError)
    with pytest.raises(ValueError, match="kind must be one of"):
        trainprof.scope("x", kind="fwd")
    with pytest.raises(TypeError):
        trainprof.scope(42)
    assert trainprof.active_session() is None  # nothing half-open after the errors


def test_config_file_and_overrides(tmp_path: Path) -> None:
    Path("p.yaml").write_text("speed:\n  warmup_batches: 3\noutput:\n  print: false\n")
    with trainprof.Session("p.yaml", overrides=["time.verbose=true"], output_dir="out") as s:
        s.step()
    config = s.report.to_dict()["config"]
    assert config["speed"]["warmup_batches"] == 3
    assert config["time"]["verbose"] is True
    assert Path(s.report.run_dir).resolve().parent == tmp_path / "out"


def test_finish_twice_and_one_session_at_a_time() -> None:
    s = trainprof.Session(name="first", overrides=QUIET)
    assert trainprof.active_session() is s
    with pytest.raises(trainprof.TrainprofError, match="another trainprof.Session is open"):
        trainprof.Session(name="second", overrides=QUIET)
    first = s.finish()
    assert s.finish() is first
    assert trainprof.active_session() is None
    with trainprof.Session(name="second", overrides=QUIET) as t:
        t.step()
    assert t.report.run_dir != first.run_dir
    assert os.path.isfile(first.html_path) and os.path.isfile(t.report.html_path)


def test_scopes_of_threads_are_recorded_on_their_thread() -> None:
    def work() -> None:
        for _ in range(4):
            with trainprof.scope("worker_task"):
                time.sleep(0.0005)

    with trainprof.Session(name="threads", overrides=QUIET) as s:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        with trainprof.scope("main_task"):
            for t in threads:
                t.join()
        s.step()
    assert calls(s.report.to_dict()) == {"worker_task": 12, "main_task": 1}
    events = json.loads(Path(s.report.run_dir, "trace.json").read_text())["traceEvents"]
    tids = {e["tid"] for e in events if e.get("name") == "worker_task"}
    main_tid = {e["tid"] for e in events if e.get("name") == "main_task"}
    assert len(tids) == 3 and not tids & main_tid


def test_schedule_records_only_active_steps() -> None:
    overrides = dict(QUIET, **{"schedule.wait": 1, "schedule.active": 2, "schedule.repeat": 1})
    with trainprof.Session(name="sched", overrides=overrides) as s:
        for _ in range(6):
            with trainprof.scope("work"):
                pass
            s.step()
    assert calls(s.report.to_dict()) == {"work": 2}


def test_outputs_and_the_run_history(capsys: pytest.CaptureFixture[str]) -> None:
    with trainprof.Session(name="hist", overrides={"system.enabled": True,
                                                   "system.interval_s": 0.05}) as s:
        s.batch_size = 2
        for _ in range(5):
            with trainprof.scope("run_training_batch", kind="loop"):
                time.sleep(0.02)
            s.step()
    out = capsys.readouterr()
    assert "Time report" in out.out and "Speed report" in out.out and "System report" in out.out
    assert f"Recorded as run {s.report.run_id}" in out.err
    for f in ("report.json", "report.html", "summary.txt", "trace.json", "time_report.csv",
              "speed_report.csv", "system_timeseries.csv"):
        assert os.path.isfile(os.path.join(s.report.run_dir, f)), f
    assert section(s.report.to_dict(), "system")["metrics"]
    listed = subprocess.run([cli(), "runs", "list", "--format", "json"],
                            capture_output=True, text=True, check=True).stdout
    assert s.report.run_id in listed


# The child dumps every thread's Python stack and exits 30 s after "ready" if it is still
# there (faulthandler), so a hang at Ctrl-C fails with where it hung.
LOOP = """
import faulthandler, sys, time, trainprof
with trainprof.Session(name="sigint", overrides={"output.print": False}) as s:
    s.batch_size = 8
    i = 0
    while True:
        with trainprof.scope("run_training_batch", kind="loop"):
            time.sleep(0.002)
        s.step()
        i += 1
        if i == 20:
            faulthandler.dump_traceback_later(30, exit=True)
            print("ready", flush=True)
"""


def test_ctrl_c_writes_the_reports_of_the_completed_steps(tmp_path: Path) -> None:
    # A program started in the background by a non-interactive shell (`cmd &`, as CI scripts
    # and nohup do) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt: the
    # child starts with Ctrl-C's default, as in a terminal.
    child = subprocess.Popen([PYTHON, "-c", LOOP], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=python_env(),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert "Timeout (0:00:30)!" not in err, f"the child hung after Ctrl-C:\n{err}"
    assert child.returncode != 0  # KeyboardInterrupt still ends the program
    assert "KeyboardInterrupt" in err
    [run_dir] = list((tmp_path / "runs").glob("*-sigint"))
    report = load_report(str(run_dir))
    assert calls(report)["run_training_batch"] >= 20
    notes = section(report, "run")["notes"]
    assert any(n.startswith("stopped by Ctrl-C (KeyboardInterrupt) after") for n in notes)
    assert (run_dir / "report.html").is_file()


def test_unfinished_session_is_finished_at_exit(tmp_path: Path) -> None:
    code = ("import trainprof\ns = trainprof.Session(name='atexit', "
            "overrides={'output.print': False})\ns.step()\n")
    subprocess.run([PYTHON, "-c", code], check=True, env=python_env())
    [run_dir] = list((tmp_path / "runs").glob("*-atexit"))
    notes = section(load_report(str(run_dir)), "run")["notes"]
    assert any("without calling finish()" in n for n in notes)


def test_scope_outside_a_session_records_nothing() -> None:
    with trainprof.scope("orphan"):
        pass
    with trainprof.Session(name="after", overrides=QUIET) as s:
        with trainprof.scope("inside"):
            pass
        s.step()
    assert calls(s.report.to_dict()) == {"inside": 1}


def test_a_scope_object_serves_one_block_at_a_time() -> None:
    with trainprof.Session(name="reenter", overrides=QUIET) as s:
        block = trainprof.scope("outer")
        with block:
            with pytest.raises(RuntimeError, match="already open"):
                with block:
                    pass
        with block:  # once closed, it can be used again
            pass
        s.step()
    assert calls(s.report.to_dict()) == {"outer": 2}


def test_timed_iter_survives_a_loader_error_the_loop_handles() -> None:
    class Flaky:
        def __init__(self) -> None:
            self.i = 0

        def __iter__(self) -> "Flaky":
            return self

        def __next__(self) -> int:
            self.i += 1
            if self.i == 2:
                raise IOError("a corrupt sample")
            if self.i > 4:
                raise StopIteration
            return self.i

    with trainprof.Session(name="flaky", overrides=QUIET) as s:
        it = iter(trainprof.timed_iter(Flaky()))
        got = []
        while True:
            try:
                got.append(next(it))
            except IOError:
                continue
            except StopIteration:
                break
        s.step()
    assert got == [1, 3, 4]
    assert calls(s.report.to_dict()) == {"[_TrainingEpochLoop].train_dataloader_next": 3}


def test_misuse_is_a_clear_error_not_a_silent_loss() -> None:
    """A negative batch size, a step after finish(), attach() without a Session and a second
    attach() each raise at once, naming what was wrong (they printed negative samples/s, lost
    the step, raised AttributeError, or crashed the loop later)."""
    import torch

    import trainprof.torch

    s = trainprof.Session(name="misuse", overrides=QUIET)
    with pytest.raises(ValueError, match="batch_size must be a positive number of samples, got -5"):
        s.batch_size = -5
    s.stage("train")
    s.step()
    model = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="session must be a trainprof.Session, got NoneType"):
        trainprof.torch.attach(None, model)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got str"):
        trainprof.torch.attach(s, "model")  # type: ignore[arg-type]
    trainprof.torch.attach(s, model)
    with pytest.raises(trainprof.TrainprofError, match="attached already"):
        trainprof.torch.attach(s, model)
    s.finish()
    with pytest.raises(trainprof.TrainprofError, match=r"step\(\) after finish\(\)"):
        s.step()
    with trainprof.Session(name="misuse2", overrides=QUIET) as s2:
        with pytest.raises(ValueError, match="stage must be 'train' or 'validation', got 'eval'"):
            s2.stage("eval")


def test_the_live_view_is_watched_from_another_process(tmp_path: Path) -> None:
    # A Python loop with live.mode lines: its stderr has a line a tick, and `trainprof watch`
    # (another process, read-only) prints the run's snapshot until the run finishes.
    code = ("import time, trainprof\n"
            "with trainprof.Session(name='live', overrides={'output.print': False, "
            "'live.mode': 'lines', 'live.interval_s': 0.1}) as s:\n"
            "    s.batch_size = 16\n"
            "    for _ in range(40):\n"
            "        time.sleep(0.01)\n"
            "        s.step()\n")
    child = subprocess.Popen([PYTHON, "-c", code], stderr=subprocess.PIPE, text=True,
                             env=python_env())
    run_dir = None
    for _ in range(100):  # the run folder, as soon as the session made it
        found = list((tmp_path / "runs").glob("*-live"))
        if found:
            run_dir = found[0]
            break
        time.sleep(0.05)
    assert run_dir is not None
    watched = subprocess.run([cli(), "watch", str(run_dir), "--interval", "0.05"],
                             capture_output=True, text=True, timeout=60)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert watched.returncode == 0, watched.stderr
    lines = watched.stdout.strip().splitlines()
    assert lines[-1].startswith("trainprof live: step 40 (finished) |"), lines
    assert "samples/s" in lines[-1] and "n/a samples/s" not in lines[-1]
    assert "trainprof live: step" in err
    once = subprocess.run([cli(), "watch", str(run_dir), "--once"], capture_output=True,
                          text=True)
    assert once.returncode == 0 and once.stdout.startswith("trainprof live: step 40 (finished)")


def test_watch_says_what_is_missing(tmp_path: Path) -> None:
    r = subprocess.run([cli(), "watch", str(tmp_path), "--once"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith(f"trainprof: {tmp_path} has no live.json")
    assert "live.mode=lines" in r.stderr
    (tmp_path / "live.json").write_text("{\"steps\": 3}")
    r = subprocess.run([cli(), "watch", str(tmp_path), "--once"], capture_output=True, text=True)
    assert r.returncode == 2 and "not a trainprof live.json" in r.stderr


def _tmux_screens(tmp_path: Path, script: Path) -> List[str]:
    # Runs the script in a real terminal (tmux, 160 x 30) and captures the screen every 0.1 s
    # until it has ended.
    import shutil
    if shutil.which("tmux") is None:
        pytest.skip("needs tmux (apt-get install tmux)")
    env = python_env()
    session = f"trainprof-test-{os.getpid()}"
    command = (f"cd {tmp_path} && PYTHONPATH={env['PYTHONPATH']} TRAINPROF_DB={tmp_path}/h.db "
               f"{PYTHON} {script}; echo exit=$?; sleep 30")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "30",
                    command], check=True)
    screens: List[str] = []
    try:
        for _ in range(300):
            screens.append(subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                          capture_output=True, text=True, check=True).stdout)
            if "exit=" in screens[-1]:
                break
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    return screens


def test_the_live_view_owns_the_bottom_rows_of_a_terminal(tmp_path: Path) -> None:
    # live.mode view in a real terminal: the view (header, sparkline, split, host, device,
    # verdict) is redrawn in the bottom rows while the script's own prints scroll above it,
    # neither garbling the other; at the end the rows are given back and the last view stands,
    # finished, above the script's last print.
    script = tmp_path / "loop.py"
    script.write_text(
        "import time, trainprof\n"
        "with trainprof.Session(name='view', overrides={'output.print': False, "
        "'live.mode': 'view', 'live.interval_s': 0.1}) as s:\n"
        "    s.batch_size = 4\n"
        "    for i in range(80):\n"
        "        with trainprof.scope('next', kind='dataloader'):\n"
        "            time.sleep(0.006)\n"
        "        with trainprof.scope('forward', kind='forward'):\n"
        "            time.sleep(0.002)\n"
        "        with trainprof.scope('backward', kind='backward'):\n"
        "            time.sleep(0.002)\n"
        "        if i % 10 == 0:\n"
        "            print(f'loss at step {i}: {1.0 / (i + 1):.4f}', flush=True)\n"
        "        s.step()\n"
        "print('done training', flush=True)\n")
    screens = _tmux_screens(tmp_path, script)
    # While it trains: a screen taken after finish() (the rows given back, "finished") but
    # before the shell printed exit= is not one.
    during = [sc for sc in screens
              if "trainprof live | step" in sc and "exit=" not in sc and "(finished)" not in sc]
    assert during, screens[-1]
    rows = during[-1].rstrip("\n").splitlines()
    assert rows[-6].startswith("trainprof live | step"), during[-1]  # the view: the bottom rows
    assert rows[-1].startswith("verdict    "), during[-1]
    lines = [line for line in screens[-1].splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("loss at step")] == [
        f"loss at step {i}: {1.0 / (i + 1):.4f}" for i in range(0, 80, 10)], screens[-1]
    headers = [line for line in lines if line.startswith("trainprof live |")]
    assert len(headers) == 1 and "step 80 (finished)" in headers[0], screens[-1]
    at = lines.index(headers[0])
    assert lines[at + 2].startswith("split      [DDDD"), screens[-1]
    assert lines[at + 5].startswith("verdict    INPUT-BOUND: the loop waits for data"), screens[-1]
    assert lines[at + 6:] == ["done training", "exit=0"], screens[-1]


def test_ctrl_c_gives_the_terminal_back_with_the_view_left_standing(tmp_path: Path) -> None:
    # Ctrl-C (SIGINT: KeyboardInterrupt in the loop) in a real terminal: the view's rows are
    # given back before the report is written, the last view stands once, and what the shell
    # prints after the script scrolls as usual below it.
    script = tmp_path / "loop.py"
    script.write_text(
        "import os, signal, time, trainprof\n"
        "with trainprof.Session(name='view', overrides={'output.print': False, "
        "'live.mode': 'view', 'live.interval_s': 0.1}) as s:\n"
        "    for i in range(1000):\n"
        "        with trainprof.scope('forward', kind='forward'):\n"
        "            time.sleep(0.005)\n"
        "        if i == 40:\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        s.step()\n")
    screens = _tmux_screens(tmp_path, script)
    lines = [line for line in screens[-1].splitlines() if line.strip()]
    headers = [line for line in lines if line.startswith("trainprof live |")]
    assert len(headers) == 1 and "(finished)" in headers[0], screens[-1]
    assert any(line.startswith("KeyboardInterrupt") for line in lines), screens[-1]
    assert lines[-1] == "exit=130", screens[-1]  # Python exits 130 on KeyboardInterrupt
    assert lines.index(headers[0]) < lines.index("exit=130")


def test_run_shows_the_steps_of_a_session_inside_it_live(tmp_path: Path) -> None:
    # trainprof run's live view: the steps and split of the trainprof Session inside the
    # command (which writes session/live.json because run asked for it), the command's whole
    # process tree for CPU and RSS, the page on --live-port, and live.json in run's folder.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import time, trainprof\n"
            "with trainprof.Session(name='inner') as s:\n"
            "    s.batch_size = 4\n"
            "    for _ in range(60):\n"
            "        with trainprof.scope('forward', kind='forward'):\n"
            "            time.sleep(0.01)\n"
            "        s.step()\n")
    r = subprocess.run([cli(), "run", "-o", str(tmp_path / "runs"), "--db", "off",
                        "--live-port", str(port), "--set", "live.mode=lines", "--set",
                        "live.interval_s=0.1", "--", PYTHON, "-c", code],
                       env=python_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"trainprof run: live page at http://127.0.0.1:{port}/" in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("trainprof live:")]
    assert any("samples/s" in line and "n/a samples/s" not in line and "| split " in line
               for line in lines), r.stderr
    assert lines[-1].startswith("trainprof live: step 60 (finished)"), lines[-1]
    [run_dir] = list((tmp_path / "runs").iterdir())
    live = json.loads((run_dir / "live.json").read_text())
    assert live["finished"] and live["step"] == 60 and live["rss_bytes"] > 0
    assert (run_dir / "session" / "live.json").is_file()


def test_the_exporters_keys_are_config_keys_and_reach_python():
    # run_writers.cc declares each exporter's keys once; the config schema must know them, and
    # check_config (what a multi-rank run reads them with) returns them.
    keys = trainprof._core.exporter_keys()
    assert keys == ["output.mlflow", "output.mlflow_experiment", "output.tensorboard"]
    out = trainprof._core.check_config(None, ["output.mlflow=mlruns", "output.tensorboard=tb"])
    assert {k: out[k] for k in keys} == {"output.mlflow": "mlruns",
                                         "output.mlflow_experiment": "",
                                         "output.tensorboard": "tb"}
