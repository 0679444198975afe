"""trainprof.hta.TraceAnalysis against HTA 0.6.1's answers.

On the shared traces (../shared/data/traces/, real GPU jobs, with what HTA answered on each in
expected/<name>.hta.json): every frame HTA users read, frame by frame (columns, ranks, streams,
values within HTA's rounding). They skip, saying so, where the shared folder is absent. The
project's own small trace (see test_analyze.py) always runs, with its figures known by hand.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import trainprof
from conftest import ROOT
from trainprof.hta import TraceAnalysis

SMALL = ROOT / "tests/data/traces/small_gpu"
SHARED = Path(os.environ.get("TRAINPROF_SHARED_TRACES", ROOT.parent / "shared/data/traces"))
WITH_ANSWERS = ["trace_diff_control", "trace_diff_test", "negative_queue_length_values_check",
                "trace_filter", "nccl_parser_config", "ns_resolution_trace",
                "critical_path_simple_add"]

TEMPORAL = ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)",
            "kernel_time(us)", "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]


def expected(name: str) -> Dict[str, Any]:
    path = SHARED / "expected" / f"{name}.hta.json"
    if not path.exists():
        pytest.skip(f"the shared traces are absent ({SHARED}): HTA conformance not checked")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def analyses() -> Dict[str, TraceAnalysis]:
    return {}


def analyzer(cache: Dict[str, TraceAnalysis], name: str) -> TraceAnalysis:
    if name not in cache:
        cache[name] = TraceAnalysis(trace_dir=str(SHARED / name))
    return cache[name]


def us_close(got: float, want: float) -> bool:
    # As hta_golden_test: within 0.5 %, and at least HTA's 1 µs resolution.
    return abs(got - want) <= max(abs(want) * 0.005, 1.0)


@pytest.mark.parametrize("name", WITH_ANSWERS)
def test_temporal_breakdown(analyses: Dict[str, TraceAnalysis], name: str) -> None:
    want = expected(name)
    df = analyzer(analyses, name).get_temporal_breakdown(visualize=False)
    assert list(df.columns) == TEMPORAL
    assert df["rank"].tolist() == want["ranks"]
    for row in df.to_dict("records"):
        w = want["temporal"][str(row["rank"])]
        for col in TEMPORAL[1:5]:
            assert us_close(row[col], w[col]), (name, col, row[col], w[col])
        for col in TEMPORAL[5:]:  # HTA's 2 decimals; 0.1 point, as hta_golden_test
            assert abs(row[col] - w[col]) <= 0.1, (name, col, row[col], w[col])


@pytest.mark.parametrize("name", WITH_ANSWERS)
def test_idle_time_breakdown(analyses: Dict[str, TraceAnalysis], name: str) -> None:
    want = expected(name)
    idle, stats = analyzer(analyses, name).get_idle_time_breakdown(
        ranks=want["ranks"], visualize=False)
    assert stats is None
    assert list(idle.columns) == ["rank", "stream", "idle_category", "idle_time",
                                  "idle_time_ratio"]
    got = {(r.rank, r.stream, r.idle_category): r.idle_time for r in idle.itertuples()}
    ref = {(w["rank"], w["stream"], w["category"]): w["idle_time"] for w in want["idle"]}
    assert sorted(got) == sorted(ref), name  # the same ranks, streams and categories
    for key, value in ref.items():
        assert us_close(got[key], value), (name, key, got[key], value)
    for (rank, stream), rows in idle.groupby(["rank", "stream"]):
        total = rows["idle_time"].sum()
        if total > 0:
            assert (rows["idle_time_ratio"] - (rows["idle_time"] / total).round(2)).abs().max() \
                < 1e-9


@pytest.mark.parametrize("name", WITH_ANSWERS)
def test_gpu_kernel_breakdown(analyses: Dict[str, TraceAnalysis], name: str) -> None:
    want = expected(name)
    kernel_type, kernels = analyzer(analyses, name).get_gpu_kernel_breakdown(visualize=False)
    assert list(kernel_type.columns) == ["kernel_type", "sum", "percentage"]
    got = dict(zip(kernel_type["kernel_type"], kernel_type["sum"]))
    assert sorted(got) == sorted(want["kernel_types"]), name
    for t, us in want["kernel_types"].items():
        assert us_close(got[t], us), (name, t, got[t], us)
    assert kernel_type["sum"].is_monotonic_decreasing
    assert kernel_type["percentage"].sum() == pytest.approx(100, abs=0.5)
    assert list(kernels.columns) == ["name", "sum (us)", "max (us)", "min (us)", "stddev",
                                     "mean (us)", "kernel_type", "rank"]
    assert sorted(kernels["rank"].unique().tolist()) == want["ranks"]
    # Per rank, the listed kernels of a type add up to that type's own time on the GPU.
    for (rank, ktype), rows in kernels.groupby(["rank", "kernel_type"]):
        assert (rows["min (us)"] <= rows["mean (us)"] + 1e-9).all()
        assert (rows["mean (us)"] <= rows["max (us)"] + 1e-9).all()
        # HTA's fold: once kernels go to "others", each row's statistics are over the per-name
        # sums it holds, so a kept kernel's max, min and mean are its sum and its stddev 0.
        kept = rows[rows["name"] != "others"]
        if len(kept) < len(rows):
            for col in ["max (us)", "min (us)", "mean (us)"]:
                assert (kept[col] - kept["sum (us)"]).abs().max() < 1e-6, (name, rank, col)
            assert (kept["stddev"] == 0).all(), (name, rank)


@pytest.mark.parametrize("name", WITH_ANSWERS)
def test_comm_comp_overlap(analyses: Dict[str, TraceAnalysis], name: str) -> None:
    want = expected(name)
    df = analyzer(analyses, name).get_comm_comp_overlap(visualize=False)
    assert list(df.columns) == ["rank", "comp_comm_overlap_pctg"]
    assert df["rank"].tolist() == want["ranks"]
    for rank, pct in zip(df["rank"], df["comp_comm_overlap_pctg"]):
        w = want["comm_comp_overlap_pctg"][str(rank)]
        if w is None:  # no communication: HTA's NaN
            assert math.isnan(pct), (name, rank, pct)
        else:
            assert abs(pct - w) <= 0.1, (name, rank, pct, w)


@pytest.mark.parametrize("name", WITH_ANSWERS)
def test_cuda_kernel_launch_stats(analyses: Dict[str, TraceAnalysis], name: str) -> None:
    want = expected(name)
    frames = analyzer(analyses, name).get_cuda_kernel_launch_stats(
        ranks=want["ranks"], visualize=False)
    assert sorted(frames) == want["ranks"]
    for rank, df in frames.items():
        assert list(df.columns) == ["correlation", "cpu_duration", "gpu_duration",
                                    "launch_delay"]
        w = want["launch_stats"][str(rank)]
        # HTA's counts, from the per-launch rows as HTA's charts count them.
        assert len(df) == w["launches"], name
        short = (df["gpu_duration"] < df["cpu_duration"]) & (df["cpu_duration"] <= 50)
        assert int(short.sum()) == w["short_kernels"], name
        assert int((df["cpu_duration"] > 50).sum()) == w["runtime_outliers"], name
        assert int((df["launch_delay"] > 100).sum()) == w["launch_delay_outliers"], name
        assert (df["launch_delay"] >= 0).all()


def test_critical_path_matches_hta() -> None:
    path = SHARED / "expected/critical_path_simple_add.critical_path.json"
    if not path.exists():
        pytest.skip(f"the shared traces are absent ({SHARED}): HTA conformance not checked")
    text = path.read_text()  # HTA's summary() printed a line before the JSON
    want = json.loads(text[text.index("{"):])
    a = TraceAnalysis(trace_dir=str(SHARED / "critical_path_simple_add"))
    cp, ok = a.critical_path_analysis(rank=want["rank"], annotation=want["annotation"],
                                      instance_id=want["instance"])
    assert ok == want["success"]
    assert len(cp.critical_path_nodes) == want["critical_path_nodes"]
    assert us_close(cp.critical_path_length_us, want["critical_path_length_us"])
    summary = cp.summary()
    assert summary.index.name == "bound_by"
    assert sorted(summary.index) == sorted(want["summary_pct"])  # HTA's rows, "" among them
    for category, pct in want["summary_pct"].items():
        assert summary[category] == pytest.approx(pct, abs=0.01), category
    edges = cp.get_critical_path_breakdown()
    assert len(edges) == want["critical_path_nodes"] - 1
    by_type = edges.groupby("type")["duration"].sum()
    for edge_type, us in want["by_edge_type_us"].items():
        assert by_type.get(edge_type, 0.0) == pytest.approx(us, abs=1.0), edge_type


# --- the project's own trace: always runs -------------------------------------------------


def _trace(tmp_path: Path, events: list) -> str:
    """A one-rank trace of these events inside ProfilerStep#1 [0, 1000), with two empty steps
    after it (HTA leaves the last one out)."""
    steps = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}",
              "pid": 1, "tid": 1, "ts": 1000 * i, "dur": 1000} for i in range(3)]
    d = tmp_path / "trace"
    d.mkdir()
    (d / "rank0.json").write_text(json.dumps({"traceEvents": steps + events}))
    return str(d)


def _launched(name: str, cat: str, ts: int, dur: int, corr: int, call: str, at: int,
              **args: Any) -> list:
    return [{"ph": "X", "cat": "cuda_runtime", "name": call, "pid": 1, "tid": 1, "ts": at,
             "dur": 2, "args": {"correlation": corr}},
            {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"correlation": corr, "stream": 7, "device": 0, **args}}]


def test_memory_bandwidth_follows_hta(tmp_path: Path) -> None:
    # Two overlapping HtoD copies (0.5 and 0.25 GB/s) and a memset (2 GB/s): the series adds
    # each at its start and takes it off at its end, per copy type.
    events = (_launched("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 20, 10, 1,
                        "cudaMemcpyAsync", 10, **{"memory bandwidth (GB/s)": 0.5})
              + _launched("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 25, 10, 2,
                          "cudaMemcpyAsync", 12, **{"memory bandwidth (GB/s)": 0.25})
              + _launched("Memset (Device)", "gpu_memset", 50, 5, 3, "cudaMemsetAsync", 40,
                          **{"memory bandwidth (GB/s)": 2.0}))
    a = TraceAnalysis(trace_dir=_trace(tmp_path, events))
    series = a.get_memory_bw_time_series()[0]
    assert list(series.columns) == ["ts", "pid", "name", "memory_bw_gbps"]
    htod = series[series.name == "Memcpy HtoD"]
    assert htod.ts.tolist() == [20, 25, 30, 35]
    assert htod.memory_bw_gbps.tolist() == [0.5, 0.75, 0.25, 0.0]
    assert series[series.name == "Memset"].memory_bw_gbps.tolist() == [2.0, 0.0]
    summary = a.get_memory_bw_summary()
    assert summary.loc[(0, "Memcpy HtoD"), ("memory_bw_gbps", "count")] == 3
    assert summary.loc[(0, "Memcpy HtoD"), ("memory_bw_gbps", "mean")] == 0.5
    assert summary.loc[(0, "Memset"), ("memory_bw_gbps", "max")] == 2.0
    a.generate_trace_with_counters()  # both series, beside the trace
    written = tmp_path / "trace" / "rank0_with_counters.json"
    counters = [e for e in json.loads(written.read_text())["traceEvents"] if e["ph"] == "C"]
    bw = [(e["ts"], e["args"]["Memcpy BW"]) for e in counters if e["name"] == "Memset"]
    assert bw == [(50, 2.0), (55, 0.0)]
    queue = [e for e in counters if e["name"] == "Queue Length"]
    assert len(queue) == 6 and {e["id"] for e in queue} == {7}  # 3 launches, 3 starts


def test_cupti_counters_come_with_their_operators(tmp_path: Path) -> None:
    # Two ranges CUPTI measured, paired by start with the two cudaLaunchKernel calls: the first
    # under aten::conv2d > aten::cudnn_convolution, the second under aten::relu.
    def op(name: str, ts: int, dur: int) -> dict:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": dur}

    def call(ts: int) -> dict:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                "tid": 1, "ts": ts, "dur": 2, "args": {"correlation": ts}}

    def measured(name: str, ts: int, fadd: int) -> dict:
        return {"ph": "X", "cat": "cuda_profiler_range", "name": name, "pid": 0, "tid": 0,
                "ts": ts, "dur": 50, "args": {
                    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": fadd,
                    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 2 * fadd}}

    events = [op("aten::conv2d", 10, 40), op("aten::cudnn_convolution", 15, 30), call(20),
              op("aten::relu", 60, 10), call(62), measured("fft2d", 500, 7),
              measured("relu_kernel", 600, 3)]
    a = TraceAnalysis(trace_dir=_trace(tmp_path, events))
    df = a.get_cupti_counter_data_with_operators()[0]
    assert df.name.tolist() == ["fft2d", "relu_kernel"]
    assert df["smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"].tolist() == [7, 3]
    assert df["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"].dtype == "int64"
    assert df.op_stack.tolist() == [["aten::conv2d", "aten::cudnn_convolution"], ["aten::relu"]]
    assert df.top_level_op.tolist() == ["aten::conv2d", "aten::relu"]
    assert df.bottom_level_op.tolist() == ["aten::cudnn_convolution", "aten::relu"]
    with pytest.warns(UserWarning, match="no cuda_profiler_range events"):
        assert TraceAnalysis(trace_dir=str(SMALL)).get_cupti_counter_data_with_operators() == []


def test_the_critical_path_overlay_marks_the_path(tmp_path: Path) -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    cp, ok = a.critical_path_analysis(rank=0, annotation="", instance_id=0)  # the whole trace
    assert ok and isinstance(cp, trainprof.hta.CPGraph)
    out = a.overlay_critical_path_analysis(0, cp, str(tmp_path), only_show_critical_events=False)
    assert Path(out).name.startswith("overlaid_critical_path_")
    with (gzip.open(out, "rt") if out.endswith(".gz") else open(out)) as f:
        events = json.load(f)["traceEvents"]
    marked = {i for i, e in enumerate(events)
              if e.get("ph") == "X" and e.get("args", {}).get("critical") == 1}
    assert marked == cp.critical_path_events_set and marked
    # Every node's event is marked: one per event, or two when both its ends are on the path.
    assert len(cp.critical_path_nodes) >= len(marked)
    flows = [e for e in events if e.get("cat") == "critical_path"]
    assert [e["ph"] for e in flows] == ["s", "f"] * (len(flows) // 2)
    drawn = {"critical_path_dependency", "critical_path_kernel_launch_delay",
             "critical_path_sync_dependency"}
    edges = cp.get_critical_path_breakdown()
    assert len(flows) == 2 * int(edges["type"].isin(drawn).sum())
    assert {e["args"]["type"] for e in flows} <= drawn
    # Only the path: what is left is the path's events and the rest that is not an X event.
    only = a.overlay_critical_path_analysis(0, cp, str(tmp_path / "only"))
    with (gzip.open(only, "rt") if only.endswith(".gz") else open(only)) as f:
        kept = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    assert all(e.get("args", {}).get("critical") == 1
               or e.get("cat") in ("user_annotation", "python_function") for e in kept)
    # HTA's instance_id=(first, last): one window from the first's start to the last's end.
    one, _ = a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    two, _ = a.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=(0, 1))
    assert (one.window, two.window) == ("ProfilerStep:0", "ProfilerStep:0-1")
    assert two.critical_path_length_us > one.critical_path_length_us
    with pytest.raises(ValueError, match="rank 0's, not rank 1's"):
        a.overlay_critical_path_analysis(1, cp, str(tmp_path))


def test_a_critical_path_of_nothing_warns() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    with pytest.warns(UserWarning, match="rank 0 has no instance 0 of a range whose name "
                                         "contains 'no_such_range'"):
        assert a.critical_path_analysis(rank=0, annotation="no_such_range", instance_id=0) is None


def test_profiler_steps_leave_out_the_last_as_hta() -> None:
    # The small trace's steps 1, 2 and 3: HTA analyses all but the last.
    assert TraceAnalysis(trace_dir=str(SMALL)).get_profiler_steps() == [1, 2]
    # HTA's include_last_profiler_step=True keeps it, in the steps and in the breakdowns.
    every = TraceAnalysis(trace_dir=str(SMALL), include_last_profiler_step=True)
    assert every.get_profiler_steps() == [1, 2, 3]
    kept = every.get_temporal_breakdown(visualize=False)["kernel_time(us)"].iloc[0]
    cut = TraceAnalysis(trace_dir=str(SMALL)).get_temporal_breakdown(visualize=False)
    assert kept > cut["kernel_time(us)"].iloc[0]


def test_small_trace_answers_as_hta() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    t = a.get_temporal_breakdown(visualize=False)
    # Steps 1 and 2 (HTA leaves out the last): GPU busy 1020-1170 µs, 100 µs of it busy.
    assert t[TEMPORAL].values.tolist() == [[0, 50.0, 60.0, 40.0, 150.0, 33.33, 40.0, 26.67]]
    idle, _ = a.get_idle_time_breakdown(visualize=False)
    # Stream 7: 20 µs sgemm-to-copy gaps (kernel wait), 50 µs between steps' kernels... and
    # stream 20 never has a gap under 30 µs, so HTA lists no kernel_wait row for it.
    assert idle[["stream", "idle_category", "idle_time"]].values.tolist() == [
        [7, "host_wait", 50.0], [7, "kernel_wait", 20.0], [7, "other", 0.0],
        [20, "host_wait", 80.0], [20, "other", 0.0]]
    assert idle["idle_time_ratio"].tolist() == [0.71, 0.29, 0.0, 1.0, 0.0]
    kt, kernels = a.get_gpu_kernel_breakdown(visualize=False)
    assert dict(zip(kt["kernel_type"], kt["sum"])) == {
        "COMPUTATION": 40, "COMMUNICATION": 20, "COMPUTATION overlapping COMMUNICATION": 20,
        "MEMORY": 20}
    assert kt["percentage"].tolist() == [40.0, 20.0, 20.0, 20.0]
    assert kernels[["name", "sum (us)", "max (us)", "mean (us)", "kernel_type"]].values.tolist() \
        == [["ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 40.0, 20.0, 20.0,
             "COMMUNICATION"],
            ["volta_sgemm_128x64_nn", 60.0, 30.0, 30.0, "COMPUTATION"],
            ["Memcpy HtoD (Pinned -> Device)", 20.0, 10.0, 10.0, "MEMORY"]]
    assert a.get_comm_comp_overlap(visualize=False).values.tolist() == [[0, 50.0]]
    launches = a.get_cuda_kernel_launch_stats(visualize=False)[0]
    assert launches.values.tolist() == [
        [101, 5.0, 30.0, 5.0], [102, 4.0, 20.0, 6.0], [103, 3.0, 10.0, 17.0],
        [104, 5.0, 30.0, 5.0], [105, 4.0, 20.0, 6.0], [106, 3.0, 10.0, 17.0]]


def test_arguments_that_change_the_answer() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    idle, _ = a.get_idle_time_breakdown(visualize=False, consecutive_kernel_delay=10)
    stream7 = idle[idle["stream"] == 7].set_index("idle_category")["idle_time"]
    assert "kernel_wait" not in stream7 or stream7["kernel_wait"] == 0
    _, kernels = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=1)
    assert len(kernels) == 3  # one kernel of each type: nothing to fold
    with pytest.raises(ValueError, match="rank 5 is not in the traces"):
        a.get_cuda_kernel_launch_stats(ranks=[5], visualize=False)


def test_visualize_without_plotly_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # plotly made unimportable whether or not it is installed (None in sys.modules: ImportError).
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.express", None)
    a = TraceAnalysis(trace_dir=str(SMALL))
    with pytest.warns(UserWarning, match="plotly, which is not installed"):
        df = a.get_temporal_breakdown()  # visualize=True is HTA's default
    assert len(df) == 1


@pytest.mark.parametrize("method,args", [
    ("get_potential_stragglers", ()),
])
def test_what_trainprof_does_not_answer_is_said(method: str, args: Any) -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    with pytest.raises(NotImplementedError, match=f"TraceAnalysis.{method}"):
        getattr(a, method)(*args, straggler_identification_impl=lambda df: df)


def test_the_overlay_shows_every_edge_of_the_graph_when_asked(tmp_path: Path) -> None:
    # Issue 69: HTA's show_all_edges draws every edge of the graph (launch edges of no weight
    # left out), of any type; with only_show_critical_events it is forced off, as in HTA.
    a = TraceAnalysis(trace_dir=str(SMALL))
    cp, _ = a.critical_path_analysis(rank=0, annotation="", instance_id=0)
    assert cp._other_edges, "the graph has edges off the path"
    assert all(not (e[0] == "critical_path_kernel_launch_delay" and e[1] == 0)
               for e in cp._other_edges)

    def flows(path: str) -> List[Dict[str, Any]]:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            return [e for e in json.load(f)["traceEvents"] if e.get("cat") == "critical_path"]

    path_only = flows(a.overlay_critical_path_analysis(0, cp, str(tmp_path / "a"), False))
    every = flows(a.overlay_critical_path_analysis(0, cp, str(tmp_path / "b"), False, True))
    assert len(every) == 2 * (len(cp._edges) + len(cp._other_edges))
    assert len(every) > len(path_only)
    assert {e["args"]["type"] for e in every} >= {"critical_path_operator"}
    forced = flows(a.overlay_critical_path_analysis(0, cp, str(tmp_path / "c"), True, True))
    assert len(forced) == len(path_only)


def test_queue_length_follows_hta_definition() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    launches = a.get_cuda_kernel_launch_stats(visualize=False)[0]
    series = a.get_queue_length_time_series()[0]
    assert list(series.columns) == ["ts", "pid", "tid", "stream", "queue_length"]
    # Each launch adds one and its GPU start takes it away: two rows a launch, ending at 0.
    assert len(series) == 2 * len(launches)
    for _, part in series.groupby("stream"):
        assert part["ts"].is_monotonic_increasing
        assert part["queue_length"].iloc[-1] == 0 and part["queue_length"].min() >= 0
    summary = a.get_queue_length_summary()
    assert summary.index.names == ["rank", "stream"]
    assert summary[("queue_length", "count")].sum() == len(series)
    blocked = a.get_time_spent_blocked_on_full_queue(a.get_queue_length_time_series(),
                                                    max_queue_length=1)
    assert list(blocked.columns) == ["rank", "stream", "duration_at_max_queue_length",
                                     "relative_duration_at_max_queue_length"]
    assert (blocked["duration_at_max_queue_length"] > 0).all()


def write_linear_steps(tmp_path: Path) -> None:
    """Three steps, each with one aten::linear launching k1, k2, k3 (10, 20, 30 µs)."""
    events, corr = [], 0
    for step in range(3):
        t0 = 1000 * step
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 1, "tid": 1, "ts": t0, "dur": 900})
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1,
                       "ts": t0 + 10, "dur": 50})
        for k, dur in enumerate([10, 20, 30]):
            corr += 1
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": t0 + 12 + 10 * k, "dur": 5,
                           "args": {"correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"k{k + 1}", "pid": 0, "tid": 7,
                           "ts": t0 + 100 + 40 * k, "dur": dur,
                           "args": {"correlation": corr, "stream": 7, "device": 0}})
    (tmp_path / "rank0.json").write_text(json.dumps({"schemaVersion": 1,
                                                     "traceEvents": events}))


def test_user_annotation_breakdown_sums_each_name(tmp_path: Path) -> None:
    # HTA leaves out the last step: ProfilerStep#0 and #1, 900 µs each; no GPU annotation.
    write_linear_steps(tmp_path)
    a = TraceAnalysis(trace_dir=str(tmp_path))
    cpu = a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)
    assert list(cpu.columns) == ["name", "sum (us)", "max (us)", "min (us)", "stddev",
                                 "mean (us)", "rank"]
    assert cpu[["name", "sum (us)", "stddev", "rank"]].values.tolist() == [
        ["ProfilerStep#0", 900.0, 0.0, 0], ["ProfilerStep#1", 900.0, 0.0, 0]]
    folded = a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False,
                                                 num_kernels=1)
    assert folded["name"].tolist() == ["ProfilerStep#0", "others"]
    with pytest.warns(UserWarning, match="no gpu_user_annotation events"):
        assert a.get_gpu_user_annotation_breakdown(visualize=False) is None


def test_kernel_breakdown_folds_at_the_duration_ratio_asked(tmp_path: Path) -> None:
    # Two steps of k3, k2, k1 (60, 40 and 20 µs in all): running sums 60, 100, 120. With two
    # names kept, HTA's 0.8 quantile of them is 112, so only k1 folds; at 0.4 it is 92, so k2
    # folds too.
    write_linear_steps(tmp_path)
    a = TraceAnalysis(trace_dir=str(tmp_path))
    for ratio, want in [(0.8, {"k3": 60.0, "k2": 40.0, "others": 20.0}),
                        (0.4, {"k3": 60.0, "others": 60.0})]:
        _, kernels = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=2,
                                                duration_ratio=ratio)
        assert dict(zip(kernels["name"], kernels["sum (us)"])) == want, ratio


def test_aten_op_kernels_and_delay_group_each_calls_launches(tmp_path: Path) -> None:
    # aten::linear starts 2 µs before its first launch, whose kernel starts 88 µs later; two
    # calls (HTA leaves out the last step), each launching k1, k2, k3.
    write_linear_steps(tmp_path)
    df = TraceAnalysis(trace_dir=str(tmp_path)).get_aten_op_kernels_and_delay()[0]
    assert df.values.tolist() == [["aten::linear", "k1 -> k2 -> k3", 2, 2.0, 88.0]]
    assert list(df.columns) == ["aten_op_name", "kernel_sequence", "occurrence_count",
                                "avg_aten_op_launch_delay", "avg_runtime_delay"]


def test_frequent_kernel_sequences_count_calls_of_the_named_operator(tmp_path: Path) -> None:
    # HTA leaves out the last step, so the pattern is counted twice, 120 µs of GPU and 2 x 50
    # µs of CPU.
    write_linear_steps(tmp_path)
    a = TraceAnalysis(trace_dir=str(tmp_path))
    with pytest.warns(UserWarning, match="writes no overlaid trace"):
        df = a.get_frequent_cuda_kernel_sequences("aten::linear", str(tmp_path), visualize=False)
    assert df.values.tolist() == [["aten::linear|k1|k2|k3", 2, 120.0, 100.0]]
    assert a.get_frequent_cuda_kernel_sequences("aten::linear", str(tmp_path), visualize=False,
                                                min_pattern_len=4).empty
    assert a.get_frequent_cuda_kernel_sequences("aten::conv", str(tmp_path),
                                                visualize=False).empty


def test_kernels_with_user_annotations_take_the_innermost(tmp_path: Path) -> None:
    from trainprof.hta import _shorten
    assert _shorten("void at::native::(anonymous namespace)::multi_tensor_apply_kernel"
                    "<at::native::TensorListMetadata<1>, float>(int, float)") \
        == "at::native::::multi_tensor_apply_kernel"
    assert _shorten("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD (Device -> Device)"
    assert _shorten("volta_sgemm_128x64_nn") == "volta_sgemm_128x64_nn"
    # k1..k3 at 100, 140, 180 µs of each step on stream 7: "outer" spans all three, "inner"
    # only k2; k3 of the last step is left out with that step, as HTA leaves it.
    write_linear_steps(tmp_path)
    trace = json.loads((tmp_path / "rank0.json").read_text())
    for step in range(2):
        for name, ts, dur in (("outer", 90, 130), ("inner", 135, 30)):
            trace["traceEvents"].append({"ph": "X", "cat": "gpu_user_annotation", "name": name,
                                         "pid": 0, "tid": 7, "ts": 1000 * step + ts,
                                         "dur": dur, "args": {"stream": 7, "device": 0}})
    (tmp_path / "rank0.json").write_text(json.dumps(trace))
    df = TraceAnalysis(trace_dir=str(tmp_path)).get_gpu_kernels_with_user_annotations(0)
    assert df[["s_name", "s_user_annotation"]].values.tolist() == [
        ["k1", "outer"], ["k2", "inner"], ["k3", "outer"]] * 2
    with pytest.warns(UserWarning, match="no GPU user annotations"):
        assert TraceAnalysis(trace_dir=str(SMALL)).get_gpu_kernels_with_user_annotations(0) \
            is None


def test_potential_stragglers_need_two_ranks() -> None:
    with pytest.raises(ValueError, match="no communication kernel ran on two ranks"):
        TraceAnalysis(trace_dir=str(SMALL)).get_potential_stragglers()


@pytest.mark.parametrize("name", ["trace_filter"])
def test_potential_stragglers_as_hta(name: str) -> None:
    # HTA 0.6.1 on trace_filter (2 ranks, one step): [1] with one candidate, [0, 1] with two
    # (scripts/hta-tests.sh compares the same calls with HTA itself).
    expected(name)
    a = analyzer({}, name)
    assert a.get_potential_stragglers(num_candidates=1) == [1]
    assert sorted(a.get_potential_stragglers(num_candidates=2)) == [0, 1]


def test_an_empty_frame_says_why(tmp_path: Path) -> None:
    # A CPU-only trace: HTA's frames are empty too, and trainprof says why.
    trace = {"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1.0,
         "dur": 2.0}]}
    (tmp_path / "rank0.json").write_text(json.dumps(trace))
    a = TraceAnalysis(trace_dir=str(tmp_path))
    with pytest.warns(UserWarning, match="rank 0 has no rows: no GPU work"):
        assert a.get_cuda_kernel_launch_stats(visualize=False)[0].empty
    with pytest.warns(UserWarning, match="rank 0 has no rows: no GPU stream"):
        assert a.get_idle_time_breakdown(visualize=False)[0].empty


def test_idle_interval_stats_describe_the_intervals() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL))
    idle, intervals = a.get_idle_time_breakdown(show_idle_interval_stats=True, visualize=False)
    assert list(intervals.columns) == ["rank", "stream", "count", "mean", "std", "min", "25%",
                                       "50%", "75%", "max"]
    assert intervals.index.name == "idle_category"
    # One row per listed category, each interval's mean times their count its idle time.
    assert intervals.index.tolist() == idle["idle_category"].tolist()
    for (_, row), (_, stat) in zip(idle.iterrows(), intervals.iterrows()):
        if stat["count"] > 0:
            assert stat["mean"] * stat["count"] == pytest.approx(row["idle_time"], abs=0.01)
            assert stat["min"] <= stat["25%"] <= stat["50%"] <= stat["75%"] <= stat["max"]
    # Stream 7's kernel waits are the two 10 µs sgemm-to-copy gaps of each of the two steps.
    wait = intervals[(intervals["stream"] == 7)].loc["kernel_wait"]
    assert wait[["count", "min", "max"]].tolist() == [2.0, 10.0, 10.0]


def test_trace_files_and_bad_input(tmp_path: Path) -> None:
    a = TraceAnalysis(trace_files={0: str(SMALL / "rank0.json")})
    assert a.get_comm_comp_overlap(visualize=False)["rank"].tolist() == [0]
    with pytest.raises(trainprof.TraceError, match="no trace files"):
        TraceAnalysis(trace_dir=str(tmp_path))
