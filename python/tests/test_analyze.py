"""trainprof.analyze(): the CLI's analysis in-process, its tables as DataFrames.

The project's own trace (tests/data/traces/small_gpu/rank0.json) has three 100 µs ProfilerSteps,
each with an sgemm kernel (stream 7, 30 µs), an NCCL all-reduce (stream 20, 20 µs, 10 µs of it
under the sgemm) and a 10 µs HtoD copy (stream 7), so its figures are known by hand; the rest is
held against the report.json that the trainprof command writes for the same trace.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict

import pytest

import trainprof
from conftest import PYTHON, ROOT, cli, python_env

SMALL = ROOT / "tests/data/traces/small_gpu"


def cli_report(path: Path, *args: str) -> Dict[str, Any]:
    out = subprocess.run([cli(), "analyze", str(path), "--db", "off", "-o", "cli-runs",
                          "--format", "json", *args],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def cli_error(path: Path) -> str:
    out = subprocess.run([cli(), "analyze", str(path), "--db", "off", "-o", "cli-runs"],
                         capture_output=True, text=True)
    assert out.returncode != 0
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("trainprof: ")
    return line[len("trainprof: "):]


def test_the_report_is_the_clis(tmp_path: Path) -> None:
    a = trainprof.analyze(SMALL, hta_compat=True)
    ours = a.to_dict()
    theirs = cli_report(SMALL, "--hta-compat")
    assert ours["kind"] == theirs["kind"] == "analyze"
    assert ours["config"] == theirs["config"]
    assert ours["sections"] == theirs["sections"]
    assert ours["diagnostics"] == theirs["diagnostics"]
    assert a.sections == [s["id"] for s in theirs["sections"]]
    assert ours["meta"]["trainprof_version"] == trainprof.__version__


def _rank_copies(runs: Path, n: int, name: str) -> Path:
    """`n` copies of the small trace in `runs`, as ranks 0..n-1 of one job, named name.format(k)."""
    trace = json.loads((SMALL / "rank0.json").read_text())
    runs.mkdir()
    for k in range(n):
        trace["distributedInfo"].update({"rank": k, "world_size": n})
        (runs / name.format(k)).write_text(json.dumps(trace))
    return runs


def _inputs(tmp_path: Path, kind: str) -> Path:
    """One input of each shape a user gives: a folder, a file, a trace under another name
    (told by its bytes), gzip'd and renamed, and a folder of several ranks with a stray."""
    if kind == "folder":
        return SMALL
    if kind == "file":
        return SMALL / "rank0.json"
    if kind == "renamed":
        out = tmp_path / "trace_saved_as.txt"
        out.write_bytes((SMALL / "rank0.json").read_bytes())
        return out
    if kind == "gzip_renamed":
        import gzip
        out = tmp_path / "rank0.trace.bin"
        out.write_bytes(gzip.compress((SMALL / "rank0.json").read_bytes()))
        return out
    if kind == "nsys":
        return _nsys_export(tmp_path / "profile.sqlite")
    if kind == "capture":  # vLLM's layout: the run's trace beside capture_traces/, its data
        run = tmp_path / "vllm"
        (run / "capture_traces").mkdir(parents=True)
        (run / "decode.json").write_bytes((SMALL / "rank0.json").read_bytes())
        (run / "capture_traces" / "capture.json").write_bytes((SMALL / "rank0.json").read_bytes())
        return run
    if kind == "snapshot_folder":  # a folder whose one input is a memory snapshot
        folder = tmp_path / "snapshots" / "step_10"
        folder.mkdir(parents=True)
        (folder / "memory.pickle").write_bytes(
            (ROOT / "tests/data/snapshots/torch2.11_h200_transformer.pickle").read_bytes())
        return folder.parent
    if kind == "cycles":  # tensorboard_trace_handler: one file per profiling cycle of a process
        cycles = tmp_path / "cycles"
        cycles.mkdir()
        for k in range(2):  # the same process, so one rank of two files
            (cycles / f"host_7.17000000000{k}.pt.trace.json").write_bytes(
                (SMALL / "rank0.json").read_bytes())
        return cycles
    runs = _rank_copies(tmp_path / "ranks", 3, "worker{}.trace")
    (runs / "config.json").write_text('{"lr": 0.1}')  # a stray: skipped, and said
    return runs


def _nsys_export(path: Path) -> Path:
    """An Nsight Systems SQLite export of two processes (pid 144 on GPU 1, 145 on GPU 0), each
    launching one 3 us kernel from inside an emit_nvtx "aten::mm" range: the tables and columns
    of export schema 3.x that trainprof reads."""
    import sqlite3
    db = sqlite3.connect(path)
    db.executescript("""
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'gemm_kernel');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
  shortName INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,
  globalTid INTEGER, textId INTEGER, domainId INTEGER);
""")
    for pid, gpu in ((144, 1), (145, 0)):
        tid = (pid << 24) + pid
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1100, 1200, 0, ?, 7, 1)", (tid,))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 5000, ?, 7, 7, ?, 2, 2)",
                   (gpu, pid << 24))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (1000, 1250, 59, "
                   "'aten::mm, seq = 3, op_id = 11', ?, NULL, 0)", (tid,))
    db.commit()
    db.close()
    return path


def test_an_nsight_systems_export_is_a_run_of_its_processes(tmp_path: Path) -> None:
    a = trainprof.analyze(_nsys_export(tmp_path / "profile.sqlite"))
    assert a.ranks == [0, 1]
    assert a.files == [f"{tmp_path}/profile.sqlite#pid=145", f"{tmp_path}/profile.sqlite#pid=144"]
    ops = a.table("operator_view/operator_view")
    assert list(ops["name"]) == ["aten::mm", "aten::mm"]
    assert list(ops["device_self_s"]) == [3e-6, 3e-6]
    # What to record is said in nsys's words, not torch.profiler's.
    notes = {s["id"]: " ".join(s.get("notes", [])) for s in a.to_dict()["sections"]}
    assert "emit_nvtx(record_shapes=True)" in notes["operator_view"]
    assert "profile_memory=True" not in notes["operator_view"]
    assert "no PyTorch allocator events" in notes["memory"]
    with pytest.raises(ValueError, match="only nsys reads; export it to SQLite first"):
        rep = tmp_path / "profile.nsys-rep"
        rep.write_bytes(b"\x00binary")
        trainprof.analyze(rep)


@pytest.mark.parametrize("kind", ["folder", "file", "renamed", "gzip_renamed", "ranks", "nsys",
                                  "capture", "cycles", "snapshot_folder"])
def test_the_cli_and_python_give_one_report(tmp_path: Path, kind: str) -> None:
    # Both go through the one driver: the same report.json but for the meta of the writing
    # (time, run folder).
    path = _inputs(tmp_path, kind)
    ours = trainprof.analyze(path).to_dict()
    theirs = cli_report(path)
    for key in ("config", "sections", "diagnostics", "title", "kind"):
        assert ours[key] == theirs[key], key
    drop = {"created_utc", "run_dir"}
    assert {k: v for k, v in ours["meta"].items() if k not in drop} == \
        {k: v for k, v in theirs["meta"].items() if k not in drop}
    if kind == "ranks":
        again = trainprof.analyze(path)
        assert again.ranks == [0, 1, 2]
        assert any("config.json" in d["message"] for d in again.diagnostics)


def test_a_memory_snapshot_is_analysed_as_the_cli_does(tmp_path: Path) -> None:
    # Told by its bytes: a torch.cuda.memory._snapshot() pickle under any name is read through
    # the same driver, and gives the CLI's report.
    snap = tmp_path / "memory.bin"
    snap.write_bytes((ROOT / "tests/data/snapshots/torch2.11_h200_transformer.pickle").read_bytes())
    a = trainprof.analyze(snap)
    ours = a.to_dict()
    theirs = cli_report(snap)
    assert ours["kind"] == theirs["kind"] == "snapshot"
    assert ours["sections"] == theirs["sections"]
    assert a.ranks == [] and a.files == [str(snap)]
    assert len(a.tables) > 0 and len(a.table(a.tables[0][1])) > 0


def test_a_folder_of_several_snapshots_names_them(tmp_path: Path) -> None:
    # The CLI writes a report for each; one Analysis holds one run, so Python says which.
    for name in ("a", "b"):
        (tmp_path / f"{name}.pickle").write_bytes(
            (ROOT / "tests/data/snapshots/torch2.11_h200_transformer.pickle").read_bytes())
    with pytest.raises(ValueError, match=r"holds 2 memory snapshots \(.*a\.pickle, .*b\.pickle\)"):
        trainprof.analyze(tmp_path)


def test_a_snapshots_window_is_the_clis_from_and_to(tmp_path: Path) -> None:
    # Issue 70: --from/--to reach Python, as from_s/to_s (`from` is Python's own word).
    snap = ROOT / "tests/data/snapshots/torch2.11_h200_transformer.pickle"
    whole = trainprof.analyze(snap).to_dict()
    part = trainprof.analyze(snap, from_s=0, to_s=0.001).to_dict()
    assert part["sections"] == cli_report(snap, "--from", "0", "--to", "0.001")["sections"]
    assert part["sections"] != whole["sections"]
    with pytest.raises(ValueError, match="seconds >= 0"):
        trainprof.analyze(snap, from_s=-1)
    assert "from_s" in trainprof.analyze_options() and "to_s" in trainprof.analyze_options()


def test_tables_are_typed_frames_in_seconds() -> None:
    a = trainprof.analyze(SMALL, hta_compat=True)
    report = a.to_dict()
    checked = 0
    for section in report["sections"]:
        for t in section["tables"]:
            df = a.table(f"{section['id']}/{t['id']}")
            assert list(df.columns) == [c["key"] for c in t["columns"]]
            assert len(df) == len(t["rows"])
            for c in t["columns"]:
                col = df[c["key"]]
                if c["unit"] == "seconds":
                    assert col.dtype == "float64"
                if c["unit"] == "text":
                    assert col.dtype == object
                if c["unit"] == "count" and all(isinstance(r[c["key"]], int) for r in t["rows"]):
                    assert col.dtype == "int64"
                for i, row in enumerate(t["rows"]):
                    want, got = row[c["key"]], col.iloc[i]
                    if isinstance(want, float):
                        assert got == pytest.approx(want, rel=1e-12, abs=0)
                    elif want is None:
                        assert got is None or (isinstance(got, float) and math.isnan(got))
                    else:
                        assert got == want
            assert df.attrs["section"] == section["id"]
            checked += 1
    assert checked >= 10


def test_known_figures_of_the_small_trace() -> None:
    a = trainprof.analyze(SMALL, hta_compat=True)
    t = a.table("temporal_breakdown").iloc[0]
    # HTA's selection: steps 1 and 2 (the last is left out), GPU busy from 1020 to 1170 µs.
    assert t["rank"] == "0"
    assert t["kernel_span_s"] == pytest.approx(150e-6)
    assert t["idle_s"] == pytest.approx(50e-6)      # 1070-1120 and... the gaps between steps
    assert t["compute_s"] == pytest.approx(60e-6)   # two sgemms
    assert t["non_compute_s"] == pytest.approx(40e-6)
    overlap = a.table("comm_comp_overlap")
    assert overlap["overlap_pct"].tolist() == pytest.approx([50.0])
    launches = a.table("kernel_launch_stats").iloc[0]
    assert launches["launches"] == 6
    # The default selection keeps all three steps.
    d = trainprof.analyze(SMALL)
    assert d.metrics["overview"]["steps"] == 3
    assert d.table("step_breakdown")["kernel_s"].tolist() == pytest.approx([30e-6] * 3)


def test_options_are_the_clis() -> None:
    base = trainprof.analyze(SMALL, hta_compat=True)
    one = trainprof.analyze(SMALL, hta_compat=True, top_kernels=1, kernel_wait_us=5)
    assert one.to_dict()["config"]["analyze"]["top_kernels"] == 1
    assert one.to_dict()["config"] == cli_report(SMALL, "--hta-compat", "--top-kernels", "1",
                                                 "--kernel-wait-us", "5")["config"]
    idle = base.table("idle_time_breakdown").set_index("stream")
    idle5 = one.table("idle_time_breakdown").set_index("stream")
    # The 20 µs between the sgemm and the copy on stream 7 is kernel wait under 30 µs only.
    assert idle.loc[7, "kernel_wait_s"] == pytest.approx(20e-6)
    assert idle5.loc[7, "kernel_wait_s"] == 0
    cp = trainprof.analyze(SMALL, critical_path=True)
    assert "critical_path" in cp.sections
    assert "critical_path" not in base.sections


def test_an_unknown_keyword_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="'hta_compatible'.*did you mean 'hta_compat'"):
        trainprof.analyze(SMALL, hta_compatible=True)
    with pytest.raises(ValueError, match="steps='some'"):
        trainprof.analyze(SMALL, steps="some")
    with pytest.raises(ValueError, match="top_kernels=0"):
        trainprof.analyze(SMALL, top_kernels=0)
    with pytest.raises(ValueError, match="capture_trace=.*does not exist"):
        trainprof.analyze(SMALL, capture_trace="no/such/capture_traces")
    # A capture trace without graphs changes nothing: the same report as without one.
    same = trainprof.analyze(SMALL, capture_trace=SMALL / "rank0.json")
    assert same.to_dict()["sections"] == trainprof.analyze(SMALL).to_dict()["sections"]
    assert set(trainprof.analyze_options()) >= {"hta_compat", "critical_path", "peak_tflops"}


def bad_inputs(tmp_path: Path) -> Dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    cut = tmp_path / "cut.json"
    cut.write_bytes((SMALL / "rank0.json").read_bytes()[:2500])
    text = tmp_path / "notes.json"
    text.write_text("these are my notes\n")
    return {"empty": empty, "cut": cut, "not a trace": text}


@pytest.mark.parametrize("kind", ["empty", "cut", "not a trace"])
def test_bad_input_raises_the_clis_line(tmp_path: Path, kind: str) -> None:
    path = bad_inputs(tmp_path)[kind]
    with pytest.raises(trainprof.TraceError) as e:
        trainprof.analyze(path)
    assert isinstance(e.value, ValueError)
    assert str(e.value) == cli_error(path)
    assert str(path) in str(e.value)
    if kind != "empty":
        assert "byte" in str(e.value)


def test_a_folder_of_several_runs_names_them(tmp_path: Path) -> None:
    for run in ("a", "b"):
        (tmp_path / "logs" / run).mkdir(parents=True)
        (tmp_path / "logs" / run / "rank0.json").write_bytes((SMALL / "rank0.json").read_bytes())
    with pytest.raises(trainprof.TraceError, match="holds the traces of 2 runs") as e:
        trainprof.analyze(tmp_path / "logs")
    assert str(tmp_path / "logs" / "a") in str(e.value)
    # Either run alone, or both files as the ranks of one run, is analysed.
    assert trainprof.analyze(tmp_path / "logs" / "b").ranks == [0]
    both = trainprof.analyze([tmp_path / "logs" / "a", tmp_path / "logs" / "b"])
    assert len(both.files) == 2
    assert [d["name"] for d in both.diagnostics].count("duplicate_rank") == 2
    # Two files of one name: each rank's label names its folder too.
    assert set(both.table("overview/step_breakdown")["rank"]) == {"0 (a/rank0.json)",
                                                                  "0 (b/rank0.json)"}


def test_a_cut_trace_can_be_kept(tmp_path: Path) -> None:
    a = trainprof.analyze(bad_inputs(tmp_path)["cut"], allow_data_errors=True)
    names = [d["name"] for d in a.diagnostics]
    assert "truncated" in names
    assert any(d["severity"] == "error" for d in a.diagnostics)


def test_write_is_the_clis_run_folder(tmp_path: Path) -> None:
    a = trainprof.analyze(SMALL, hta_compat=True, critical_path=True)
    out = a.write(tmp_path / "run")
    assert out == str(tmp_path / "run")
    written = json.loads((tmp_path / "run/report.json").read_text())
    assert written["sections"] == a.to_dict()["sections"]
    assert written["meta"]["run_dir"] == out
    names = set(os.listdir(out))
    assert {"report.json", "report.html", "summary.txt", "temporal_breakdown.csv",
            "critical_path.trace.json"} <= names
    assert [p for p in os.listdir(tmp_path) if "partial" in p] == []
    # A folder that holds a run is refused, and left as it was; overwrite replaces it.
    with pytest.raises(trainprof.TrainprofError, match="holds an earlier run"):
        a.write(tmp_path / "run")
    assert set(os.listdir(out)) == names
    (tmp_path / "run" / "mine.txt").write_text("x")
    a.write(tmp_path / "run", overwrite=True)
    assert not (tmp_path / "run" / "mine.txt").exists()


def test_many_ranks_tables_come_from_the_summaries(tmp_path: Path) -> None:
    # Ten ranks: above eight the per-rank tables are in their CSV only (report.json names the
    # file), and table() makes their rows from the summaries when asked: the same rows, rank
    # by rank, as the CSV the CLI and write() stream.
    runs = _rank_copies(tmp_path / "ranks", 10, "rank{}.json")
    a = trainprof.analyze(runs)
    assert a.ranks == list(range(10))
    theirs = cli_report(runs)
    assert a.to_dict()["sections"] == theirs["sections"]
    heads = {t["id"]: t for s in theirs["sections"] for t in s.get("tables", [])}
    assert heads["operator_view"]["rows_in"] == "operator_view.csv"
    df = a.table("operator_view")
    assert len(df) > 0
    assert sorted(set(df["rank"].astype(int))) == list(range(10))
    a.write(tmp_path / "run")
    with open(tmp_path / "run" / "operator_view.csv") as f:
        assert sum(1 for _ in f) == len(df) + 1  # the header, then one line a row
    again = a.table("operator_view")  # made again, the same
    assert again.equals(df)


def test_write_leaves_nothing_when_it_fails(tmp_path: Path) -> None:
    a = trainprof.analyze(SMALL)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(trainprof.TrainprofError):
        a.write(blocker)
    with pytest.raises(trainprof.TrainprofError):
        a.write(blocker / "run")  # its parent is a file: nothing can be created
    assert sorted(os.listdir(tmp_path)) == ["file"]
    assert blocker.read_text() == "not a folder"


def test_findings_metrics_and_notebook_view() -> None:
    a = trainprof.analyze(SMALL)
    report = a.to_dict()
    findings = [f for s in report["sections"] for f in s["findings"]]
    assert [f["text"] for f in a.findings] == [f["text"] for f in findings]
    assert a.findings, "the small trace's GPU is idle a third of its span: a finding"
    for s in report["sections"]:
        for key, m in s["metrics"].items():
            assert a.metrics[s["id"]][key] == m["value"]
    page = a._repr_html_()
    assert "Findings" in page and a.findings[0]["text"][:40] in page
    assert "Step time breakdown per step" in page and "ProfilerStep#2" in page
    assert "rank" in repr(a)


def test_pandas_is_needed_only_for_tables() -> None:
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import trainprof\n"
            f"a = trainprof.analyze({str(SMALL)!r})\n"
            "assert a.sections and a.findings and a.to_dict()\n"
            "try:\n    a.table('step_breakdown')\n"
            "except ImportError as e:\n    print('ImportError:', e)\n")
    out = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True,
                         check=True)
    assert "ImportError:" in out.stdout and "pandas" in out.stdout


def test_the_gil_is_released_while_it_runs() -> None:
    # With a 10 s switch interval this thread keeps the GIL through the call unless the call
    # releases it, so the other thread can count only while the C++ analysis runs without it.
    done = threading.Event()
    ticks = [0]

    def count() -> None:
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.0001)

    t = threading.Thread(target=count)
    t.start()
    interval = sys.getswitchinterval()
    try:
        while ticks[0] == 0:
            time.sleep(0.001)
        sys.setswitchinterval(10)
        counted = 0
        # A call takes milliseconds: on a loaded machine the other thread may not be scheduled
        # within one, so up to 100 calls (none counts unless the call releases the GIL).
        for _ in range(100):
            before = ticks[0]
            trainprof.analyze(SMALL, critical_path=True)
            counted += ticks[0] - before
            if counted > 0:
                break
    finally:
        sys.setswitchinterval(interval)
        done.set()
        t.join()
    assert counted > 0


SHARED = Path(os.environ.get("TRAINPROF_SHARED_TRACES", ROOT.parent / "shared/data/traces"))


@pytest.mark.parametrize("name", ["trace_diff_control", "trace_diff_test", "trace_filter",
                                  "negative_queue_length_values_check", "nccl_parser_config",
                                  "ns_resolution_trace", "critical_path_simple_add"])
def test_hta_tables_hold_htas_answers(name: str) -> None:
    path = SHARED / "expected" / f"{name}.hta.json"
    if not path.exists():
        pytest.skip(f"the shared traces are absent ({SHARED}): HTA conformance not checked")
    want = json.loads(path.read_text())
    a = trainprof.analyze(SHARED / name, hta_compat=True)

    def close(got_s: float, want_us: float) -> bool:  # as hta_golden_test: 0.5 %, >= 1 µs
        return abs(got_s * 1e6 - want_us) <= max(abs(want_us) * 0.005, 1.0)

    temporal = a.table("temporal_breakdown")
    assert sorted(int(r) for r in temporal["rank"]) == want["ranks"]
    for row in temporal.to_dict("records"):
        w = want["temporal"][row["rank"]]
        assert close(row["idle_s"], w["idle_time(us)"])
        assert close(row["compute_s"], w["compute_time(us)"])
        assert close(row["non_compute_s"], w["non_compute_time(us)"])
        assert close(row["kernel_span_s"], w["kernel_time(us)"])
        assert abs(row["idle_pct"] - w["idle_time_pctg"]) <= 0.1
    types = a.table("kernel_type_breakdown")
    assert sorted(types["kernel_type"]) == sorted(want["kernel_types"])
    for t, s in zip(types["kernel_type"], types["time_s"]):
        assert close(s, want["kernel_types"][t]), t
    launches = a.table("kernel_launch_stats").set_index("rank")
    for rank, w in want["launch_stats"].items():
        for key in ("launches", "short_kernels", "runtime_outliers", "launch_delay_outliers"):
            assert launches.loc[rank, key] == w[key], (rank, key)



# `trainprof analyze` options that are not analysis options: output, history, terminal, MPI.
CLI_ONLY = {"format", "progress", "db", "mpi", "summary-only", "digest", "output-dir",
            "run-dir", "overwrite", "mlflow", "mlflow-experiment", "tensorboard", "help", "quiet"}
# Keywords whose flag is not their spelling: `from` is Python's own word.
FLAG_OF = {"from_s": "from", "to_s": "to"}


def test_every_analysis_option_of_the_cli_is_a_keyword() -> None:
    out = subprocess.run([cli(), "analyze", "--help"], capture_output=True, text=True,
                         check=True).stdout
    flags = set(re.findall(r"^\s+(?:-\w,\s*)?--([a-z][a-z-]*)", out, re.MULTILINE))
    assert {"hta-compat", "critical-path", "peak-tflops"} <= flags  # the help was read
    keywords = {FLAG_OF.get(k, k.replace("_", "-")) for k in trainprof.analyze_options()}
    assert flags - CLI_ONLY == keywords


def test_an_unknown_table_names_the_nearest_ones() -> None:
    a = trainprof.analyze(SMALL)
    with pytest.raises(KeyError, match=r"no table 'operator_veiw' in this analysis; did you mean "
                                       r"'operator_view'.*Analysis.tables lists the \d+ tables"):
        a.table("operator_veiw")
    with pytest.raises(KeyError, match=r"no table 'zzz' in this analysis \(Analysis.tables"):
        a.table("zzz")
