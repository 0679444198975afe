"""HTA's counters for trainprof.hta: memory bandwidth (get_memory_bw_time_series and its
summary), the trace with counters (generate_trace_with_counters) and CUPTI's range-profiler
counters with their operators (get_cupti_counter_data_with_operators), on rows the C++ core
reads (analysis/hta/hta_counter_rows.h). Times are µs on the traces' clock, as the queue-length
series' (HTA counts from its earliest event).
"""

from __future__ import annotations

import warnings
from enum import Flag, auto
from typing import Any, Dict, List, Optional

from trainprof._analysis import _pandas
from trainprof._raw_trace import load_raw_trace, write_raw_trace


class TimeSeriesTypes(Flag):
    """HTA's: which series generate_trace_with_counters adds (HTA's own flag works too)."""
    QUEUE_LENGTH = auto()
    MEMCPY_BANDWIDTH = auto()


def _memory_kernel_type(name: str) -> str:
    """HTA's get_memory_kernel_type: "Memcpy DtoH", "Memset", "Memcpy Unknown"."""
    if name[:6] == "Memset":
        return "Memset"
    return name[:11] if name[:6] == "Memcpy" else "Memcpy Unknown"


def memory_bw_series(core: Any, rank: int) -> Optional[Any]:
    """One rank's bandwidth series as HTA builds it: +GB/s at each copy's start, -GB/s at its
    end, summed per copy type in time order; None when the rank has no copy or set."""
    pd = _pandas()
    ts, end, pid, name, gbps = core.memory_bw(rank)
    if not ts:
        return None
    kind = [_memory_kernel_type(n) for n in name]
    df = pd.concat([pd.DataFrame({"ts": ts, "name": kind, "pid": pid, "memory_bw_gbps": gbps}),
                    pd.DataFrame({"ts": end, "pid": pid, "name": kind,
                                  "memory_bw_gbps": [-g for g in gbps]})],
                   ignore_index=True).sort_values(by="ts", kind="stable")
    parts = []
    for _, part in df.groupby("name"):
        part = part.copy()
        part["memory_bw_gbps"] = part["memory_bw_gbps"].cumsum()
        parts.append(part)
    return pd.concat(parts)[["ts", "pid", "name", "memory_bw_gbps"]]


def memory_bw_summary(series: Dict[int, Any]) -> Optional[Any]:
    """pandas' describe() of each copy type's bandwidth per rank, the zero points left out;
    None without any copy."""
    pd = _pandas()
    parts = []
    for rank, df in series.items():
        df = df.assign(rank=rank)
        df = df[df.memory_bw_gbps > 0]
        parts.append(df[["rank", "name", "memory_bw_gbps"]].groupby(["rank", "name"]).describe())
    return pd.concat(parts) if parts else None


def counter_events(series: Any, counter_name: str, column: str) -> List[Dict[str, Any]]:
    """HTA's convert_time_series_to_events: a Chrome counter ("C") event per row, named by the
    row's name (else counter_name), its stream as the counter's id."""
    out = []
    has_name, has_stream = "name" in series.columns, "stream" in series.columns
    for row in series.itertuples(index=False):
        ev = {"pid": int(row.pid), "ts": float(row.ts), "args": {counter_name: getattr(row, column)},
              "ph": "C", "name": row.name if has_name else counter_name}
        if has_stream:
            ev["id"] = int(row.stream)
        out.append(ev)
    return out


def write_trace_with_counters(paths: Dict[int, str], series: Dict[int, List[List[Dict]]],
                              output_suffix: str) -> List[str]:
    """Each rank's raw trace with its counter events appended, next to it as
    <name><output_suffix>.json[.gz] (gzip when the trace is); returns the files written."""
    written = []
    for rank, lists in series.items():
        raw = load_raw_trace(paths[rank])
        for events in lists:
            raw.setdefault("traceEvents", []).extend(events)
        out = paths[rank].replace(".json", f"{output_suffix}.json")
        write_raw_trace(out, raw)
        written.append(out)
    return written


def counter_data_with_operators(at: Any, ranks: List[int]) -> List[Any]:
    """HTA's frames of CUPTI range-profiler counters, one per rank whose ranges pair with its
    launch calls: cat, name, pid, tid, ts, dur, one column per counter, op_stack and the top and
    bottom operators of the launch. [] when the trace has no cuda_profiler_range events.
    `at(rank)`: the core analysis that holds the rank, and the rank's number there."""
    pd = _pandas()
    out = []
    for rank in ranks:
        core, core_rank = at(rank)
        found, matched, ranges, launches, rows = core.counter_ranges(core_rank)
        if not found:
            warnings.warn("trainprof.hta: get_cupti_counter_data_with_operators: no "
                          "cuda_profiler_range events (was the trace taken in CUPTI's profiler "
                          "mode?); [] as HTA", stacklevel=3)
            return []
        if not matched:
            warnings.warn(f"trainprof.hta: rank {rank}: {ranges} cuda_profiler_range events but "
                          f"{launches} cudaLaunchKernel calls, so they cannot be paired; the "
                          "rank is left out, as in HTA", stacklevel=3)
            continue
        records = []
        for r in rows:
            rec = {"cat": "cuda_profiler_range", "name": r["name"], "pid": r["pid"],
                   "tid": r["tid"], "ts": r["ts"], "dur": r["dur"]}
            rec.update(r["counters"])
            stack = r["op_stack"]
            rec.update(op_stack=stack, top_level_op=stack[0] if stack else "",
                       bottom_level_op=stack[-1] if stack else "")
            records.append(rec)
        df = pd.DataFrame(records)
        for col in {c for r in rows for c in r["counters"]}:  # counts are whole, as in HTA
            if df[col].notna().all() and (df[col] % 1 == 0).all():
                df[col] = df[col].astype("int64")
        out.append(df)
    return out
