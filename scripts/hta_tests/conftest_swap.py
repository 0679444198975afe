"""pytest plugin: run HTA's own TraceAnalysis tests against trainprof.hta.TraceAnalysis (issue 55).

Loaded by scripts/hta-tests.sh with `-p conftest_swap` (this folder on PYTHONPATH). With
HTA_TESTS_REAL=1 it swaps nothing and skips nothing, so the same tests measure real HTA.
Otherwise it replaces hta.trace_analysis.TraceAnalysis, and the CPGraph its
critical_path_analysis returns, (before the test modules import them, and each collected
module's globals after) with trainprof's, as a user's two import lines would, and skips the
tests listed in INTERNALS, which read HTA's internals rather than TraceAnalysis' answers.

Each test's result goes to the TSV named by HTA_TESTS_TSV (id, outcome, one-line reason); a
failing test that uses a trace folder this copy of HTA lacks (too large for the stored copy)
says so in its reason.
"""

import os

import pytest

REAL = os.environ.get("HTA_TESTS_REAL") == "1"

import hta.analyzers.critical_path_analysis
import hta.trace_analysis

HTA_TRACE_ANALYSIS = hta.trace_analysis.TraceAnalysis  # HTA's own, for test_on_present_traces
SWAPS = {}  # a module global's name -> trainprof's class

if not REAL:
    import trainprof.hta

    SWAPS = {"TraceAnalysis": trainprof.hta.TraceAnalysis, "CPGraph": trainprof.hta.CPGraph}
    hta.trace_analysis.TraceAnalysis = trainprof.hta.TraceAnalysis
    hta.analyzers.critical_path_analysis.CPGraph = trainprof.hta.CPGraph

_TA = "tests/test_trace_analysis.py::TraceAnalysisTestCase::"
_CP = "tests/test_critical_path_analysis.py::CriticalPathAnalysisTestCase::"
_R = "reads HTA's internals: "

INTERNALS = {
    _CP + "test_critical_path_basic_add":
        _R + "TraceAnalysis.t.get_trace(0) event indices; CPGraph nodes, edges, "
        "edge_to_event_map, critical_path_nodes",
    _CP + "test_critical_path_overlaid_trace":
        _R + "CPGraph.edges, critical_path_events_set, critical_path_edges_set, "
        "CriticalPathAnalysis._is_zero_weight_launch_edge",
    _CP + "test_critical_path_inter_stream_sync":
        _R + "CPGraph.edges (SYNC_DEPENDENCY edges and weights), critical_path_nodes",
    _CP + "test_critical_path_analysis_event_sync":
        _R + "CPGraph.edges(data=True) (SYNC_DEPENDENCY edges)",
    _CP + "test_critical_path_analysis_event_sync_multistream":
        _R + "CPGraph._get_cuda_event_record_df(), CPGraph.edges",
    _CP + "test_create_event_nodes_structure":
        _R + "CPGraph.node_list, event_to_end_node_map",
    _CP + "test_cuda_event_record_df_columns": _R + "CPGraph._get_cuda_event_record_df()",
    _CP + "test_cuda_stream_wait_event_df_columns":
        _R + "CPGraph._get_cuda_stream_wait_event_df()",
    _CP + "test_attribute_edge_with_optional_src_parent":
        _R + "CPGraph.edges, node_list, _attribute_edge(), edge_to_event_map",
    _CP + "test_attribute_edge_skips_non_operator_types":
        _R + "CPGraph.edges, _attribute_edge(), edge_to_event_map",
    _CP + "test_get_nodes_for_event_returns_none_for_missing":
        _R + "CPGraph.get_nodes_for_event()",
    _CP + "test_add_gpu_cpu_sync_edge_none_guard":
        _R + "CPGraph.node_list, _add_gpu_cpu_sync_edge(), number_of_edges()",
    _CP + "test_add_kernel_launch_delay_edge_missing_runtime":
        _R + "CPGraph.node_list, _add_kernel_launch_delay_edge()",
    _CP + "test_kernel_graph_none_node_guards": _R + "CPGraph.nodes, node_list (CPNode)",
    _CP + "test_kernel_sync_dict_allows_optional_values":
        _R + "CPGraph.edges (SYNC_DEPENDENCY edges)",
    _CP + "test_validate_graph_and_critical_path_networkx":
        _R + "CPGraph._validate_graph(), critical_path(), critical_path_nodes",
    _CP + "test_save_restore_networkx_serialization":
        _R + "CPGraph.save(), nodes, edges; restore_cpgraph(t_full=TraceAnalysis.t)",
    _CP + "test_pandas_drop_without_axis_param":
        _R + "CPGraph.node_list, _get_cuda_event_record_df()",
    _CP + "test_fillna_with_bracket_indexing":
        _R + "CPGraph._get_cuda_event_record_df(), _get_cuda_stream_wait_event_df()",
    _CP + "test_critical_path_breakdown_and_save_restore":
        _R + "CPGraph.critical_path_edges_set, save(); restore_cpgraph(t_full=TraceAnalysis.t)",
}

# Trace folders under tests/data each test reads (only those some stored copies lack).
_VT, _INF, _H100 = "vision_transformer", "inference_single_rank", "h100"
DATA = {
    _TA + "test_frequent_cuda_kernel_sequences": [_VT],
    _TA + "test_get_cuda_kernel_launch_stats_training_multiple_ranks": [_VT],
    _TA + "test_get_cuda_kernel_launch_stats_inference_single_rank": [_INF],
    _TA + "test_get_cuda_kernel_launch_stats_for_h100": [_H100],
    _TA + "test_get_profiler_steps": [_VT],
    _TA + "test_include_last_profiler_step": [_VT],
    _TA + "test_get_potential_stragglers": [_VT],
    _TA + "test_comm_comp_overlap": [_VT],
    _TA + "test_temporal_breakdown": [_VT],
    _TA + "test_get_gpu_kernel_breakdown": [_VT],
    _TA + "test_get_gpu_kernels_with_user_annotations": [_VT],
    _TA + "test_get_queue_length_stats": [_VT],
    _TA + "test_get_idle_time_breakdown": [_VT],
    "tests/test_cupti_profiler.py::CuptiTestCase::test_get_cupti_counter_data_with_operators":
        [_INF],
}


# Tests that check HTA's internals on the way to an answer trainprof gives: each has a stand-in
# of the same name in test_on_present_traces.py that asks the rest, and says why here.
MOCKS_HTA = {
    _TA + "test_generate_trace_with_counters":
        "asserts HTA's own writer (hta.common.trace.Trace.write_raw_trace, mocked) was called; "
        "the stand-in checks the file trainprof writes",
}


def _missing(rootdir, nodeid):
    out = []
    for d in DATA.get(nodeid, []):
        path = os.path.join(rootdir, "tests", "data", d)
        if not os.path.isdir(path) or not any(f.endswith((".json", ".gz"))
                                              for f in os.listdir(path)):
            out.append(f"tests/data/{d}/")
    return out


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not REAL:
            mod = getattr(item, "module", None)
            for name, cls in SWAPS.items():
                if mod is not None and hasattr(mod, name):
                    setattr(mod, name, cls)
            if item.nodeid in INTERNALS:
                item.add_marker(pytest.mark.skip(reason=INTERNALS[item.nodeid]))


_results = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    if rep.when == "setup" and rep.skipped:
        _results[item.nodeid] = ("skipped", rep.longrepr[2].removeprefix("Skipped: "))
    elif rep.failed or (rep.when == "call" and item.nodeid not in _results):
        reason = ""
        if rep.failed:
            exc = call.excinfo
            lines = str(exc.value).strip().splitlines() if exc else []
            reason = f"{exc.typename}: {lines[0] if lines else ''}" if exc else "failed"
            gone = _missing(str(item.config.rootpath), item.nodeid)
            if gone and exc and exc.typename in ("NotImplementedError", "AssertionError"):
                reason = f"(then reads {', '.join(gone)}: empty here) {reason}"
            elif gone:
                reason = f"missing trace file ({', '.join(gone)} empty); {reason}"
            if item.nodeid in MOCKS_HTA:
                reason = f"{MOCKS_HTA[item.nodeid]}; {reason}"
        outcome = "error" if rep.when != "call" else rep.outcome
        if rep.when == "call" and rep.skipped:
            reason = str(rep.longrepr[2]).removeprefix("Skipped: ")
        _results.setdefault(item.nodeid, (outcome, reason))


def pytest_sessionfinish(session):
    path = os.environ.get("HTA_TESTS_TSV")
    if path:
        with open(path, "a") as f:
            for nodeid, (outcome, reason) in _results.items():
                f.write(f"{nodeid}\t{outcome}\t{reason[:200]}\n")
