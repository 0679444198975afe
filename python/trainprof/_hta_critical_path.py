"""HTA's critical path for trainprof.hta: the CPGraph that `critical_path_analysis` returns and
the overlaid trace of `overlay_critical_path_analysis`, from the path the C++ core computed
(analysis/ranks/critical_path.h; `trainprof analyze --critical-path`).

A path event is found again in the rank's raw trace by its name, start and duration (within a
µs: Python's floats hold a µs timestamp of today's epoch to a quarter of a µs), so the overlay
marks the same raw events HTA marks, and draws its arrows between them.
"""

from __future__ import annotations

import bisect
import os
from typing import Any, Dict, List, Optional, Set, Tuple

from trainprof._analysis import _pandas
from trainprof._hta_names import _shorten
from trainprof._raw_trace import load_raw_trace, write_raw_trace

# HTA's DEFAULT_EDGE_TYPES_IN_VIZ: the edges the overlay draws.
_VIZ_EDGES = {"critical_path_dependency", "critical_path_kernel_launch_delay",
              "critical_path_sync_dependency"}


class CPGraph:
    """What `critical_path_analysis` found for one window: HTA's CPGraph's public answers (the
    path's nodes and events, its length and its share per `bound_by` category); the graph's
    other edges (HTA's networkx graph) are kept for the overlay's show_all_edges."""

    def __init__(self, rank: int, trace_path: str, window: str, length_ns: int,
                 nodes: List[int], events: List[Tuple[str, int, int, int, bool]],
                 edges: List[Tuple[str, int, int, bool, int, bool, str, int]],
                 top_events: Any,
                 other_edges: Optional[List[Tuple[str, int, int, bool, int, bool, str, int]]]
                 = None) -> None:
        self.rank = rank
        self.window = window
        self.critical_path_length_us = round(length_ns / 1000.0, 3)
        self.critical_path_nodes: List[int] = list(nodes)
        self.top_events = top_events  # the ten events with most time on the path
        self._trace_path = trace_path
        self._events = events  # (name, ts ns, dur ns, stream, has a node), ascending
        # (type, weight ns, from event, from is a start, to, to is a start, bound_by,
        # attributed event or -1), in path order
        self._edges = edges
        self._other_edges = other_edges or []  # the graph's edges off the path, same shape
        self._raw_index: Optional[List[int]] = None  # our event -> its index in the raw trace

    def summary(self) -> Any:
        """HTA's CPGraph.summary(): % of the path's duration per `bound_by` category (those
        with an edge on the path; "" for the dependency and sync edges, always 0)."""
        pd = _pandas()  # the breakdown's bound_by and duration, without reading the trace
        df = pd.DataFrame([(e[6], e[1] / 1000.0) for e in self._edges],
                          columns=["bound_by", "duration"])
        summary = df.groupby("bound_by").duration.sum() / df.duration.sum() * 100
        print("Critical Path broken down by boundedness = (in % of duration)")
        return summary

    def get_critical_path_breakdown(self) -> Any:
        """HTA's breakdown: one row per edge on the path (in path order; HTA's is a set's),
        with the event its time is attributed to (event_idx, its index in the raw trace; NaN
        for launch, dependency and sync edges), duration (µs), type, s_name (shortened), cat,
        pid, tid, stream, index and bound_by."""
        pd = _pandas()
        raw = load_raw_trace(self._trace_path)
        index, events = self._raw_indices(raw), raw.get("traceEvents", [])
        rows = []
        for type_, weight, _s, _ss, _d, _ds, bound_by, attributed in self._edges:
            i = index[attributed] if attributed >= 0 else -1
            ev = events[i] if i >= 0 else None
            rows.append({
                "event_idx": i if ev else None, "duration": weight / 1000.0, "type": type_,
                "s_name": _shorten(ev["name"]) if ev else None,
                "cat": ev.get("cat") if ev else None, "pid": ev.get("pid") if ev else None,
                "tid": ev.get("tid") if ev else None,
                "stream": ev.get("args", {}).get("stream", -1) if ev else None,
                "index": i if ev else None, "bound_by": bound_by})
        return pd.DataFrame(rows, columns=["event_idx", "duration", "type", "s_name", "cat", "pid",
                                           "tid", "stream", "index", "bound_by"])

    @property
    def critical_path_events_set(self) -> Set[int]:
        """The indices, in the rank's raw traceEvents, of the events with a node on the path."""
        return {i for i, ev in zip(self._raw_indices(), self._events) if i >= 0 and ev[4]}

    def _raw_indices(self, raw: Optional[Dict[str, Any]] = None) -> List[int]:
        """Our events' indices in the raw trace, matched once (the trace read when `raw` is
        not given)."""
        if self._raw_index is None:
            self._raw_index = _match_events(raw or load_raw_trace(self._trace_path),
                                            self._events)
        return self._raw_index


def _match_events(raw: Dict[str, Any], events: List[Tuple[str, int, int, int, bool]]) -> List[int]:
    """Each path event's index in raw["traceEvents"] (-1 when none matches): a complete event
    of the same name starting and lasting the same within a µs, the nearest start first."""
    base = int(raw.get("baseTimeNanoseconds", 0) or 0)
    by_name: Dict[str, List[Tuple[float, int]]] = {}
    for i, ev in enumerate(raw.get("traceEvents", [])):
        if ev.get("ph") == "X" and "ts" in ev:
            by_name.setdefault(ev.get("name", ""), []).append((float(ev["ts"]), i))
    for v in by_name.values():
        v.sort()
    raw_events = raw.get("traceEvents", [])
    out = []
    for name, ts_ns, dur_ns, _stream, _node in events:
        cands = by_name.get(name, [])
        ts_us = (ts_ns - base) / 1000.0
        lo = bisect.bisect_left(cands, (ts_us - 1.0, -1))
        best, best_d = -1, 2.0
        for t, i in cands[lo:]:
            if t > ts_us + 1.0:
                break
            d = abs(t - ts_us) + abs(float(raw_events[i].get("dur", 0)) - dur_ns / 1000.0)
            if d < best_d:
                best, best_d = i, d
        out.append(best)
    return out


def _flow(ev: Dict[str, Any], start_of_node: bool, flow_id: int, is_start: bool,
          edge_type: str, weight_ns: int) -> Dict[str, Any]:
    """HTA's flow event for one end of an arrow: at the event's start for a start node, else
    at its end (a µs early on a GPU, so the arrow lands inside the kernel)."""
    end = ev["ts"] + ev.get("dur", 0)
    if ev.get("args", {}).get("device", -1) >= 0:
        end -= min(1, ev.get("dur", 0))
    out = {"ph": "s" if is_start else "f", "id": flow_id, "pid": ev["pid"], "tid": ev["tid"],
           "ts": int(ev["ts"] if start_of_node else end), "cat": "critical_path",
           "name": "critical_path",
           "args": {"weight": int(weight_ns // 1000), "critical": True, "type": edge_type}}
    if not is_start:
        out["bp"] = "e"
    return out


def write_overlay(g: CPGraph, output_dir: str, only_show_critical_events: bool,
                  edge_types: Optional[Set[str]] = None, show_all_edges: bool = False) -> str:
    """The rank's raw trace with `args.critical = 1` on the path's events and an arrow (a flow
    event pair) per path edge of `edge_types`, into output_dir/overlaid_critical_path_<file>;
    with only_show_critical_events, complete events off the path are left out (annotations
    and Python functions stay), as HTA does; with show_all_edges (and every event shown), an
    arrow for every edge of the graph of any type, launch edges of no weight left out, as HTA's.
    Returns the file's path; gzip when it ends .gz."""
    os.makedirs(os.path.expanduser(output_dir), exist_ok=True)
    raw = load_raw_trace(g._trace_path)
    events = raw.get("traceEvents", [])
    index = g._raw_indices(raw)
    for i, ev in zip(index, g._events):
        if i >= 0 and ev[4]:
            events[i].setdefault("args", {})["critical"] = 1
    flows = []
    every = show_all_edges and not only_show_critical_events
    for type_, weight, src, src_start, dst, dst_start, _bound_by, _attributed in (
            g._edges + g._other_edges if every else g._edges):
        if not every and type_ not in (edge_types or _VIZ_EDGES):
            continue
        if index[src] < 0 or index[dst] < 0:
            continue
        flows.append(_flow(events[index[src]], src_start, len(flows) // 2, True, type_, weight))
        flows.append(_flow(events[index[dst]], dst_start, len(flows) // 2, False, type_, weight))
    if only_show_critical_events:
        events[:] = [e for e in events
                     if e.get("ph") != "X" or e.get("cat", "") in ("user_annotation",
                                                                     "python_function")
                     or e.get("args", {}).get("critical", 0) == 1]
    events.extend(flows)
    out = os.path.join(os.path.expanduser(output_dir),
                       "overlaid_critical_path_" + os.path.basename(g._trace_path))
    write_raw_trace(out, raw)
    return out
