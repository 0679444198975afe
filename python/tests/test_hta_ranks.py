"""trainprof.hta's ranks and its `analyzer.t` as HTA 0.6.1 gives them (issue 69).

HTA's ranks are integers: a trace_files dict's keys, else the first `"rank": N` in each file's
text (0 when none), one file per rank. Before, files that claimed the same rank came back as
text labels ('0 (rank0.json)') and their launches were counted together. Built on the
project's small trace (tests/data/traces/small_gpu, figures known by hand; see test_hta.py),
copied or rewritten in the test.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import ROOT
from trainprof.hta import TraceAnalysis

SMALL = ROOT / "tests/data/traces/small_gpu/rank0.json"


def small() -> Dict[str, Any]:
    return json.loads(SMALL.read_text())


def write(path: Path, trace: Dict[str, Any]) -> str:
    path.write_text(json.dumps(trace, indent=1))  # one key a line, as Kineto writes
    return str(path)


@pytest.fixture
def same_rank_twice(tmp_path: Path) -> TraceAnalysis:
    """Two files that both say rank 0, given to HTA as ranks 0 and 1."""
    a = write(tmp_path / "rank0.json", small())
    b = write(tmp_path / "copy.json", small())
    return TraceAnalysis(trace_files={0: a, 1: b})


def test_ranks_are_htas_integers(same_rank_twice: TraceAnalysis) -> None:
    t = same_rank_twice.get_temporal_breakdown(visualize=False)
    assert t["rank"].tolist() == [0, 1] and t["rank"].dtype == "int64"
    assert [int(r) for r in t["rank"]] == [0, 1]  # what HTA's tests and users do
    # Each rank is its own file: the same figures as the one file alone (test_hta.py).
    assert t["idle_time(us)"].tolist() == [50.0, 50.0]
    overlap = same_rank_twice.get_comm_comp_overlap(visualize=False)
    assert overlap.values.tolist() == [[0, 50.0], [1, 50.0]]
    kt, kernels = same_rank_twice.get_gpu_kernel_breakdown(visualize=False)
    assert dict(zip(kt["kernel_type"], kt["sum"]))["COMPUTATION"] == 80  # 40 µs a rank
    assert sorted(kernels["rank"].unique().tolist()) == [0, 1]
    files = same_rank_twice.t.trace_files
    assert [os.path.basename(files[r]) for r in (0, 1)] == ["rank0.json", "copy.json"]


def test_each_ranks_launches_counted_once(same_rank_twice: TraceAnalysis) -> None:
    stats = same_rank_twice.get_cuda_kernel_launch_stats(ranks=[0, 1], visualize=False)
    # Six launches in the analysed steps of each file, not twelve on rank 0.
    assert {r: len(df) for r, df in stats.items()} == {0: 6, 1: 6}
    q = same_rank_twice.get_queue_length_summary(ranks=[0, 1])
    # Two rows a launch: stream 7 has four launches, stream 20 two, on each rank.
    assert q[("queue_length", "count")].to_dict() == {(0, 7): 8.0, (0, 20): 4.0,
                                                      (1, 7): 8.0, (1, 20): 4.0}


def test_idle_interval_stats_one_row_per_rank_stream_category(
        same_rank_twice: TraceAnalysis) -> None:
    idle, intervals = same_rank_twice.get_idle_time_breakdown(
        ranks=[0], visualize=False, show_idle_interval_stats=True)
    # Rank 0 alone: stream 7's three categories and stream 20's two, not twice that.
    assert len(idle) == 5 and len(intervals) == 5
    assert set(idle["rank"]) == {0} and set(intervals["rank"]) == {0}


def test_a_folder_keeps_one_file_per_rank_the_last_listed(tmp_path: Path) -> None:
    write(tmp_path / "a.json", small())
    write(tmp_path / "b.json", small())
    with pytest.warns(UserWarning, match="both rank 0"):
        a = TraceAnalysis(trace_dir=str(tmp_path))
    last = [n for n in os.listdir(tmp_path) if n.endswith(".json")][-1]
    assert a.t.trace_files == {0: os.path.join(str(tmp_path), last)}
    assert a.get_temporal_breakdown(visualize=False)["rank"].tolist() == [0]
    assert len(a.get_cuda_kernel_launch_stats(visualize=False)[0]) == 6


def test_a_file_without_a_rank_is_rank_0(tmp_path: Path) -> None:
    # HTA reads the rank from the file's text only: "rank3.json" without one is rank 0.
    trace = small()
    del trace["distributedInfo"]
    write(tmp_path / "rank3.json", trace)
    a = TraceAnalysis(trace_dir=str(tmp_path))
    assert a.get_temporal_breakdown(visualize=False)["rank"].tolist() == [0]
    assert list(a.get_cuda_kernel_launch_stats(visualize=False)) == [0]
    with pytest.raises(ValueError, match="rank 3 is not in the traces"):
        a.get_cuda_kernel_launch_stats(ranks=[3], visualize=False)


def test_trace_files_relative_to_trace_dir(tmp_path: Path) -> None:
    write(tmp_path / "r.json", small())
    a = TraceAnalysis(trace_files={4: "r.json"}, trace_dir=str(tmp_path))
    assert a.t.trace_files == {4: os.path.join(str(tmp_path), "r.json")}
    assert a.get_comm_comp_overlap(visualize=False).values.tolist() == [[4, 50.0]]


def test_get_trace_is_htas_event_table() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL.parent))
    df = a.t.get_trace(0)
    for col in ["index", "cat", "name", "pid", "tid", "ts", "dur", "stream", "correlation",
                "external_id", "end", "index_correlation", "iteration"]:
        assert col in df.columns
    raw = small()["traceEvents"]
    names = a.t.symbol_table.sym_table
    # The index is the event's place in traceEvents, name and cat its symbol ids.
    for i, row in zip(df.index, df.itertuples()):
        assert i == row.index
        assert names[row.name] == raw[i]["name"] and names[row.cat] == raw[i]["cat"]
    # HTA leaves out the last step (ProfilerStep#3 at 1200 µs and what it launched) ...
    assert "ProfilerStep#3" not in {names[n] for n in df["name"]}
    assert sorted(a.t.get_iterations(0)) == [1, 2]
    # ... and counts ts from the earliest event (ProfilerStep#1, at 1000 µs).
    assert a.t.min_ts == 1000 and df["ts"].min() == 0
    # A kernel and its launch point at each other; the kernel takes its launch's step.
    kernel = df[df["correlation"] == 104].set_index("stream")
    assert kernel.loc[7, "index_correlation"] == kernel.loc[-1, "index"]
    assert kernel.loc[7, "iteration"] == 2
    every = TraceAnalysis(trace_dir=str(SMALL.parent), include_last_profiler_step=True)
    assert len(every.t.get_trace(0)) > len(df)
    with pytest.raises(ValueError):
        a.t.get_trace(1)


def test_get_trace_as_htas_tests_read_it() -> None:
    # HTA's test_cpu_user_annotation_breakdown: the breakdown's sums from get_trace(0).
    a = TraceAnalysis(trace_dir=str(SMALL.parent))
    got = a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)
    idx = a.t.symbol_table.sym_index["user_annotation"]
    df = a.t.get_trace(0).copy()
    a.t.symbol_table.add_symbols_to_trace_df(df, "name")  # ids -> text, in place
    want = df[df.cat == idx].groupby("name")["dur"].sum()
    assert dict(zip(got["name"], got["sum (us)"])) == want.to_dict()


def test_critical_path_nodes_are_a_list() -> None:
    a = TraceAnalysis(trace_dir=str(SMALL.parent))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cp, ok = a.critical_path_analysis(rank=0, annotation="", instance_id=0)
    assert ok and len(cp.critical_path_nodes) > 0  # HTA's tests take its len()
    assert all(isinstance(n, int) for n in cp.critical_path_nodes)
