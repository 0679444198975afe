"""HTA's rank-to-file map and its `TraceAnalysis.t` for trainprof.hta.

    files = hta_rank_files(trace_files=None, trace_dir="traces/")   # {0: ".../rank-0.json.gz"}
    t = Trace(files, trace_dir, include_last_profiler_step=False)
    df = t.get_trace(0)                                # HTA's event table of rank 0

Ranks are HTA's integers, found as HTA 0.6.1 finds them (hta/common/trace_file.py): the keys
of a trace_files dict, else the first `"rank": N` in each file's text (0 when there is none),
one file per rank, the last file listed winning. `Trace.get_trace` is HTA's parsed event table
read again from the raw file: every event with a duration and a category (not "Trace"), with
HTA's symbol ids for name and cat, ts from the earliest event of all ranks, and HTA's selection
(host events before the last ProfilerStep, GPU events whose launch is kept).
"""

from __future__ import annotations

import gzip
import os
import re
import warnings
from typing import Any, Dict, List, Optional

from trainprof._analysis import _pandas
from trainprof._raw_trace import load_raw_trace

_RANK_IN_TEXT = re.compile(r'"rank":\s+(\d+)')  # HTA's pattern, whitespace after the colon
_STEP = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def _rank_in_file(path: str) -> Optional[int]:
    """The first `"rank": N` of the file's text, line by line as HTA reads it; None if none."""
    with (gzip.open(path, "rt", errors="replace") if path.endswith("gz")
          else open(path, errors="replace")) as f:
        for line in f:
            m = _RANK_IN_TEXT.search(line)
            if m:
                return int(m.group(1))
    return None


def _ranks_of(paths: List[str]) -> Dict[int, str]:
    """HTA's create_rank_to_trace_dict: rank -> file, the last file of a rank kept (warned)."""
    out: Dict[int, str] = {}
    for path in paths:
        rank = _rank_in_file(path)
        if rank is None:
            rank = 0  # HTA: no rank in the file is rank 0
        if rank in out:
            warnings.warn(f"trainprof.hta: {out[rank]} and {path} are both rank {rank}; "
                          f"{path} is used, as HTA does", stacklevel=4)
        out[rank] = path
    return out


def hta_rank_files(trace_files: Optional[Dict[int, str]], trace_dir: str
                   ) -> Optional[Dict[int, str]]:
    """HTA's rank -> trace file map; None when trace_dir holds no .json or .gz file at its top
    (an Nsight export, traces in subfolders): trainprof's own reading then finds the files."""
    base = _normalize(trace_dir)
    if isinstance(trace_files, dict):
        return {int(r): p if p.startswith(base) or p.startswith("/") else os.path.join(base, p)
                for r, p in trace_files.items()}
    if isinstance(trace_files, list):
        return _ranks_of([p if p.startswith(base) or p.startswith("/")
                          else os.path.join(base, p) for p in trace_files])
    if not os.path.isdir(base):
        return None
    names = [n for n in os.listdir(base) if n.endswith((".gz", ".json"))]
    files = [os.path.join(base, n) for n in names if os.path.isfile(os.path.join(base, n))]
    return _ranks_of(files) if files else None


def _normalize(path: str) -> str:
    """HTA's normalize_path: "./x" from the working directory, "~/x" from home."""
    if path.startswith("./"):
        return os.path.join(os.getcwd(), path[2:]) if len(path) > 2 else os.getcwd()
    if path.startswith("~/"):
        return os.path.join(os.path.expanduser("~"), path[2:]) if len(path) > 2 \
            else os.path.expanduser("~")
    return path


class TraceSymbolTable:
    """HTA's symbol table: every name and category once, numbered in the order met."""

    def __init__(self) -> None:
        self.sym_table: List[str] = []
        self.sym_index: Dict[str, int] = {}

    def add(self, symbol: str) -> int:
        if symbol not in self.sym_index:
            self.sym_index[symbol] = len(self.sym_table)
            self.sym_table.append(symbol)
        return self.sym_index[symbol]

    def get_sym_id_map(self) -> Dict[str, int]:
        return self.sym_index

    def get_sym_table(self) -> List[str]:
        return self.sym_table

    def add_symbols_to_trace_df(self, df: Any, col: str) -> None:
        """Replaces the ids in column `col` by their text ("" for an unknown id), as HTA."""
        table = self.sym_table
        df[col] = df[col].map(lambda i: table[i] if 0 <= i < len(table) else "")


class Trace:
    """HTA's `TraceAnalysis.t`, as far as users and HTA's examples read it: trace_files,
    get_ranks, get_trace, get_all_traces, get_iterations, get_trace_duration, symbol_table,
    min_ts. The tables are built when first asked for (every rank at once: ts counts from the
    earliest event of all ranks)."""

    def __init__(self, trace_files: Dict[int, str], trace_dir: str,
                 include_last_profiler_step: bool = False) -> None:
        self.trace_path = _normalize(trace_dir)
        self.trace_files: Dict[int, str] = dict(trace_files)
        self._symbols = TraceSymbolTable()
        self._min_ts = 0
        self.is_parsed = True
        self._last_step = include_last_profiler_step
        self._traces: Optional[Dict[int, Any]] = None

    @property
    def traces(self) -> Dict[int, Any]:
        if self._traces is None:
            self._traces = self._load()
        return self._traces

    @property
    def symbol_table(self) -> TraceSymbolTable:
        self.traces  # the symbols are those of the tables
        return self._symbols

    @property
    def min_ts(self) -> int:
        self.traces
        return self._min_ts

    def get_ranks(self) -> List[int]:
        return sorted(self.trace_files)

    def get_trace(self, rank: int) -> Any:
        """HTA's event table of `rank` (index: the event's place in traceEvents). ValueError
        when there is no such rank, as HTA."""
        if rank not in self.trace_files:
            raise ValueError(f"trainprof.hta: no trace for rank {rank} "
                             f"(ranks: {self.get_ranks()})")
        return self.traces[rank]

    def get_all_traces(self) -> Dict[int, Any]:
        return self.traces

    def get_iterations(self, rank: Optional[int] = None) -> List[int]:
        ranks = self.get_ranks()
        rank = ranks[0] if rank is None and ranks else rank
        if rank not in self.trace_files:
            return []
        df = self.traces[rank]
        return sorted(int(i) for i in df["iteration"].unique() if i >= 0)

    def get_trace_duration(self, rank: Optional[int] = None) -> int:
        ranks = self.get_ranks()
        df = self.get_trace(ranks[0] if rank is None else rank)
        return df.ts.max() - df.ts.min()

    def _load(self) -> Dict[int, Any]:
        frames = {r: _event_frame(load_raw_trace(p), self._symbols)
                  for r, p in sorted(self.trace_files.items())}
        starts = [df["ts"].min() for df in frames.values() if not df.empty]
        self._min_ts = int(min(starts)) if starts else 0
        # HTA filters only when the traces name two ProfilerSteps or more (all ranks counted).
        filtered = sum(bool(_STEP.match(s)) for s in self._symbols.sym_table) >= 2
        out = {}
        for r, df in frames.items():
            df["ts"] = df["ts"] - self._min_ts
            out[r] = _select(df, self._symbols, self._last_step, filtered)
        return out


# HTA's columns from an event's args: (column, args key, value when absent).
_ARGS = [("stream", "stream", -1), ("correlation", "correlation", -1), ("bytes", "bytes", -1),
         ("memory_bw_gbps", "memory bandwidth (GB/s)", 0.0),
         ("external_id", "External id", -1)]


def _arg(args: Dict[str, Any], key: str, default: Any) -> Any:
    """An arg as a number; text such as ROCm's stream "0x0" read as a number, else the
    default."""
    v = args.get(key, default)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    try:
        return type(default)(int(str(v), 0))
    except ValueError:
        return default


def _event_frame(raw: Dict[str, Any], symbols: TraceSymbolTable) -> Any:
    """HTA's columns of every event with a duration and a category other than "Trace"; a
    trace with fractional (ns) times has its events cut to the whole µs inside them (start up,
    end down), as HTA rounds them."""
    pd = _pandas()
    import numpy as np
    rows, fractional = [], False
    for i, ev in enumerate(raw.get("traceEvents", [])):
        if not isinstance(ev, dict) or ev.get("dur") is None or ev.get("cat") is None \
                or ev.get("cat") == "Trace" or "ts" not in ev:
            continue
        args = ev.get("args") or {}
        fractional = fractional or isinstance(ev["ts"], float)
        rows.append([i, symbols.add(str(ev["cat"])), symbols.add(str(ev.get("name", ""))),
                     ev.get("pid"), ev.get("tid"), float(ev["ts"]), float(ev["dur"])]
                    + [_arg(args, key, default) for _, key, default in _ARGS])
    cols = ["index", "cat", "name", "pid", "tid", "ts", "dur"] + [c for c, _, _ in _ARGS]
    df = pd.DataFrame(rows, columns=cols)
    df = df.astype({"stream": "int64", "correlation": "int64", "bytes": "int64",
                    "memory_bw_gbps": "float64", "external_id": "int64"})
    df["end"] = df["ts"] + df["dur"]
    if fractional:
        df["ts"] = np.ceil(df["ts"])
        df["end"] = np.floor(df["end"])
        df["dur"] = df["end"] - df["ts"]
    df["ts"] = df["ts"].astype("int64")
    return df.set_index("index", drop=False)


def _on_gpu(df: Any, symbols: TraceSymbolTable) -> Any:
    """HTA's GPU events: on a stream with a correlation id, or a device-wide sync."""
    syncs = {symbols.sym_index.get("Event Sync", -1), symbols.sym_index.get("Context Sync", -1)}
    return ((df["stream"] >= 0) & (df["correlation"] >= 0)) | df["name"].isin(syncs)


def _index_correlation(df: Any, symbols: TraceSymbolTable) -> Any:
    """HTA's index_correlation: the correlated event's index (a launch's GPU event, a GPU
    event's launch; the last listed where several share an id), 0 for an id with no partner,
    -1 for no id."""
    linked = df["correlation"] != -1
    gpu = _on_gpu(df, symbols) & linked
    cpu = ~_on_gpu(df, symbols) & linked
    host_of = df.loc[cpu].drop_duplicates("correlation", keep="last") \
        .set_index("correlation")["index"]
    gpu_of = df.loc[gpu].drop_duplicates("correlation", keep="last") \
        .set_index("correlation")["index"]
    out = df["correlation"].clip(upper=0).astype("int64")
    out[gpu] = df.loc[gpu, "correlation"].map(host_of).fillna(0).astype("int64")
    out[cpu] = df.loc[cpu, "correlation"].map(gpu_of).fillna(0).astype("int64")
    return out


def _iterations(df: Any, symbols: TraceSymbolTable) -> Any:
    """HTA's iteration: a host event's ProfilerStep (start <= ts < end), a GPU event's that of
    its launch; -1 for the rest."""
    import numpy as np
    steps = [(row.ts, row.ts + row.dur, int(_STEP.match(symbols.sym_table[row.name]).group(1)))
             for row in df.itertuples()
             if _STEP.match(symbols.sym_table[row.name])]
    it = np.full(len(df), -1, dtype=np.int64)
    ts = df["ts"].to_numpy()
    host = (df["stream"] < 0).to_numpy()
    for start, end, n in steps:  # a later step wins where steps overlap, as in HTA
        it[host & (ts >= start) & (ts < end)] = n
    by_index = dict(zip(df["index"].to_numpy(), it))
    corr = df["index_correlation"].to_numpy()
    gpu = (df["stream"] > 0).to_numpy()
    it[gpu] = [by_index.get(c, -1) if c > 0 else -1 for c in corr[gpu]]
    return it


def _select(df: Any, symbols: TraceSymbolTable, include_last: bool, filtered: bool) -> Any:
    """HTA's filter (when `filtered`): host events that start before the last ProfilerStep
    (or, with include_last, by its end), and the GPU events their launches started; the GPU
    events first, as HTA orders them, the index (as HTA's) unnamed."""
    df["index_correlation"] = _index_correlation(df, symbols)
    df["iteration"] = _iterations(df, symbols)
    df.index.name = None
    if df.empty or not filtered:
        return df
    gpu = _on_gpu(df, symbols)
    host = df[~gpu]
    is_step = host["name"].map(lambda i: bool(_STEP.match(symbols.sym_table[i])))
    if not is_step.any():
        return df
    steps = host[is_step]
    if include_last:
        host = host[host["ts"] <= steps["end"].max()]
    else:
        host = host[host["ts"] < steps["ts"].max()]
    kept_corr = set(host["correlation"]) - {-1}
    device = df[gpu & df["correlation"].isin(kept_corr)]
    return _pandas().concat([device, host])
