"""trainprof.hta: Holistic Trace Analysis' `TraceAnalysis`, answered by trainprof.

    from trainprof.hta import TraceAnalysis        # instead of: from hta.trace_analysis import ...
    analyzer = TraceAnalysis(trace_dir="traces/")
    temporal = analyzer.get_temporal_breakdown(visualize=False)
    idle, _ = analyzer.get_idle_time_breakdown(ranks=[0], visualize=False)

The methods HTA users call take HTA 0.6.1's arguments and return its shapes and column names,
with HTA's figures: the trace is analysed once, in C++, with `trainprof analyze --hta-compat`'s
selection (every event before the last ProfilerStep, times rounded to whole µs as HTA does).
Times are µs, as in HTA. Ranks are HTA's integers, each file's found as HTA finds it
(_hta_trace.py); `analyzer.t` is HTA's Trace (trace_files, get_trace(rank), symbol_table).
A method (or an argument value) trainprof cannot answer as HTA does
raises NotImplementedError naming it; docs/python.md lists them and the differences.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, NoReturn, Optional, Tuple, Union

from trainprof import _core
from trainprof._analysis import Analysis, _pandas
from trainprof import _hta_counters as _counters
from trainprof import _hta_trace as _trace
from trainprof._hta_counters import TimeSeriesTypes
from trainprof._hta_critical_path import CPGraph, write_overlay
from trainprof._hta_names import _shorten

CriticalPath = CPGraph  # the name trainprof.hta gave it before HTA's

DEFAULT_TRACE_DIR = "/tmp/trace"  # HTA's default (hta.configs.default_values)

_IDLE_CATEGORIES = ("host_wait", "kernel_wait", "other")  # HTA's, in the core's order
_DESCRIBE = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]  # pandas' describe()


def _not_implemented(what: str, why: str) -> NoReturn:
    raise NotImplementedError(f"trainprof.hta: HTA's TraceAnalysis.{what} is not available: {why}")


def _warn_no_rows(method: str, rank: int, what: str) -> None:
    """An empty frame where HTA's would be empty too, said rather than silent."""
    warnings.warn(f"trainprof.hta: {method}: rank {rank} has no rows: {what}", stacklevel=3)


def _us(seconds: float) -> float:
    # Report times are exact ns as seconds; back to µs at ns resolution.
    return round(seconds * 1e6, 3)


def _plotly(method: str) -> Any:
    """plotly.express, or None with a warning saying it is not installed."""
    try:
        import plotly.express as px
    except ImportError:
        warnings.warn(f"trainprof.hta: {method}(visualize=True) draws with plotly, which is not "
                      "installed (pip install plotly); returning the data without the chart",
                      stacklevel=3)
        return None
    return px


class TraceAnalysis:
    """HTA's TraceAnalysis over trainprof's analysis of the same traces (see the module)."""

    def __init__(self, trace_files: Optional[Dict[int, str]] = None,
                 trace_dir: str = DEFAULT_TRACE_DIR,
                 include_last_profiler_step: Optional[bool] = False) -> None:
        self._last_step = bool(include_last_profiler_step)
        self._runs: Dict[Tuple[Any, ...], Analysis] = {}
        self._queues: Dict[int, Any] = {}  # rank -> queue length series (None: no launch)
        files = _trace.hta_rank_files(trace_files, trace_dir)
        # Each part: the files one core analysis reads, and HTA's rank -> the core's rank there.
        self._parts: List[Tuple[List[str], Dict[int, int]]] = []
        self._split_into_parts(files, trace_dir)
        if files is None:
            files = {r: core.path_of_rank(c) for r in self._hta_ranks
                     for core, c in [self._core_at(r)]}
        # HTA's Trace object (trace_files, get_trace, ...): read when first asked for.
        self.t = _trace.Trace(files, trace_dir, self._last_step)

    def _split_into_parts(self, files: Optional[Dict[int, str]], trace_dir: str) -> None:
        """HTA's ranks over trainprof's analyses: one analysis of every file when the files'
        own ranks (distributedInfo, else the file name) are distinct, mapped to HTA's; else one
        analysis per file. Without HTA's map (no trace at trace_dir's top), trainprof's ranks,
        one file per rank, the last listed winning as in HTA."""
        paths = list(files.values()) if files is not None else [trace_dir]
        self._parts = [(paths, {})]
        core = self._run()._core
        ranks = list(core.ranks())
        if files is None:
            if len(set(ranks)) == len(ranks):
                self._parts = [(paths, {r: r for r in ranks})]
                return
            files = {}
            for path in core.files:
                one = Analysis(_core.analyze([path], {"hta_compat": True}, False))
                files[one.ranks[0]] = path  # the last file of a rank wins, as in HTA
        elif len(set(ranks)) == len(files):
            hta_rank = {os.path.realpath(p): r for r, p in files.items()}
            where = {hta_rank.get(os.path.realpath(core.path_of_rank(c))): c for c in ranks}
            if None not in where:
                self._parts = [(paths, where)]
                return
        self._runs.clear()
        self._parts = [([p], {}) for p in files.values()]
        for i, r in enumerate(files):
            self._parts[i] = (self._parts[i][0], {r: self._run(part=i).ranks[0]})

    def _run(self, part: int = 0, **options: Any) -> Analysis:
        """A part's --hta-compat analysis with these options, computed once (with the launch
        rows when there are no options)."""
        launches = not options
        key = (part,) + tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                     for k, v in options.items()))
        if key not in self._runs:
            kw = dict(options, hta_compat=True, hta_last_step=self._last_step)
            self._runs[key] = Analysis(_core.analyze(self._parts[part][0], kw, launches))
        return self._runs[key]

    @property
    def _hta_ranks(self) -> List[int]:
        return sorted(r for _, ranks in self._parts for r in ranks)

    def _core_at(self, rank: int, **options: Any) -> Tuple[Any, int]:
        """The core analysis that holds HTA's `rank`, and the rank's number there."""
        for i, (_, ranks) in enumerate(self._parts):
            if rank in ranks:
                return self._run(part=i, **options)._core, ranks[rank]
        raise ValueError(f"trainprof.hta: rank {rank} is not in the traces "
                         f"(ranks: {self._hta_ranks})")

    def _table(self, id: str, **options: Any) -> Any:
        """A report table over every part, its rank column HTA's ranks (int64)."""
        pd = _pandas()
        frames = []
        for i, (_, ranks) in enumerate(self._parts):
            df = self._run(part=i, **options).table(id)
            if "rank" in df.columns:
                label = {str(c): r for r, c in ranks.items()}
                df = df[df["rank"].astype(str).isin(label)].copy()
                df["rank"] = df["rank"].astype(str).map(label).astype("int64")
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    def _ranks(self, ranks: Optional[List[int]]) -> List[int]:
        # HTA's default is rank 0; a rank the traces do not hold is an error, as in HTA.
        wanted = [0] if not ranks else list(ranks)
        have = self._hta_ranks
        for r in wanted:
            if r not in have:
                raise ValueError(f"trainprof.hta: rank {r} is not in the traces (ranks: {have})")
        return wanted

    # --- HTA's breakdowns ---------------------------------------------------------------

    def get_temporal_breakdown(self, visualize: bool = True) -> Any:
        """Idle, compute and non-compute time per rank over the GPU's busy span (µs, %)."""
        pd = _pandas()
        t = self._table("temporal_breakdown")
        df = pd.DataFrame({
            "rank": t["rank"],
            "idle_time(us)": t["idle_s"].map(_us),
            "compute_time(us)": t["compute_s"].map(_us),
            "non_compute_time(us)": t["non_compute_s"].map(_us),
            "kernel_time(us)": t["kernel_span_s"].map(_us),
            "idle_time_pctg": t["idle_pct"].round(2),
            "compute_time_pctg": t["compute_pct"].round(2),
            "non_compute_time_pctg": t["non_compute_pct"].round(2),
        })
        if visualize and (px := _plotly("get_temporal_breakdown")) is not None:
            px.bar(df, x="rank", y=["idle_time_pctg", "compute_time_pctg",
                                    "non_compute_time_pctg"],
                   title="Temporal breakdown across ranks",
                   labels={"rank": "Rank", "value": "Time (%)"}).show()
        return df

    def get_idle_time_breakdown(self, ranks: Optional[List[int]] = None,
                                streams: Optional[List[int]] = None, visualize: bool = True,
                                visualize_pctg: bool = True, show_idle_interval_stats: bool = False,
                                consecutive_kernel_delay: int = 30) -> Tuple[Any, Optional[Any]]:
        """Idle time per rank and stream by category (host_wait, kernel_wait, other), µs and
        ratio; with show_idle_interval_stats, HTA's second frame: pandas' describe() of each
        category's idle intervals per rank and stream (µs, rounded to 0.01), else None."""
        pd = _pandas()
        options = {} if consecutive_kernel_delay == 30 else {
            "kernel_wait_us": float(consecutive_kernel_delay)}
        frames, interval_frames = [], []
        for rank in self._ranks(ranks):
            rows, stats_rows, categories = [], [], []
            core, core_rank = self._core_at(rank, **options)
            for stream, times, present, stats in core.idle(core_rank):
                if streams is not None and stream not in streams:
                    continue
                total = sum(times)
                for c, (name, us, listed) in enumerate(zip(_IDLE_CATEGORIES, times, present)):
                    if not listed:
                        continue
                    rows.append((rank, stream, name, us,
                                 round(us / total, 2) if total > 0 else float("nan")))
                    categories.append(name)
                    stats_rows.append([rank, stream] + list(stats[c * 8:(c + 1) * 8]))
            if not rows:
                _warn_no_rows("get_idle_time_breakdown", rank,
                              "no GPU stream ran kernels, copies or sets in the analysed steps"
                              + (f" (of streams {streams})" if streams else ""))
            # One frame per rank, concatenated: HTA's index restarts at each rank.
            frames.append(pd.DataFrame(rows, columns=["rank", "stream", "idle_category",
                                                      "idle_time", "idle_time_ratio"]))
            interval_frames.append(pd.DataFrame(
                stats_rows, columns=["rank", "stream"] + _DESCRIBE,
                index=pd.Index(categories, name="idle_category")).round(2))
        df = pd.concat(frames)
        if visualize and (px := _plotly("get_idle_time_breakdown")) is not None:
            px.bar(df, x="stream", y="idle_time_ratio" if visualize_pctg else "idle_time",
                   color="idle_category", facet_row="rank",
                   title="Idle time breakdown per stream").show()
        return df, pd.concat(interval_frames) if show_idle_interval_stats else None

    def get_gpu_kernel_breakdown(self, visualize: bool = True, duration_ratio: float = 0.8,
                                 num_kernels: int = 10, include_memory_kernels: bool = True,
                                 image_renderer: str = "") -> Tuple[Any, Any]:
        """(time per kernel type and overlap of types, the top kernels of each type per rank
        with the rest as "others"), µs."""
        if not include_memory_kernels:
            _not_implemented("get_gpu_kernel_breakdown(include_memory_kernels=False)",
                             "trainprof's kernel types always include MEMORY")
        pd = _pandas()
        options: Dict[str, Any] = {} if num_kernels == 10 else {"top_kernels": int(num_kernels)}
        if duration_ratio != 0.8:
            options["hta_duration_ratio"] = float(duration_ratio)
        kt = self._table("kernel_type_breakdown", **options)
        kt = kt.groupby("kernel_type", sort=False, as_index=False)["time_s"].sum()
        sums = kt["time_s"].map(_us)
        kernel_type_df = pd.DataFrame({
            "kernel_type": kt["kernel_type"],
            "sum": sums.round().astype("int64"),
            "percentage": (sums / sums.sum() * 100).round(1),
        }).sort_values("sum", ascending=False, ignore_index=True)
        k = self._table("top_kernels", **options)
        metrics_df = pd.DataFrame({
            "name": k["name"],
            "sum (us)": k["sum_s"].map(_us),
            "max (us)": k["max_s"].map(_us),
            "min (us)": k["min_s"].map(_us),
            "stddev": k["std_s"] * 1e6,
            "mean (us)": k["mean_s"] * 1e6,
            "kernel_type": k["kernel_type"],
            "rank": k["rank"].astype("int64"),
        }).sort_values(["kernel_type", "name", "rank"], ignore_index=True)
        if visualize and (px := _plotly("get_gpu_kernel_breakdown")) is not None:
            px.pie(kernel_type_df[kernel_type_df["percentage"] > 0], values="percentage",
                   names="kernel_type", title="Kernel Type Percentage Across All Ranks"
                   ).show(renderer=image_renderer or None)
            px.bar(metrics_df, x="name", y="mean (us)", color="kernel_type", facet_row="rank",
                   title="Mean duration of the top kernels").show(renderer=image_renderer or None)
        return kernel_type_df, metrics_df

    def get_comm_comp_overlap(self, visualize: bool = True) -> Any:
        """Percent of communication time overlapped by computation, per rank."""
        pd = _pandas()
        t = self._table("comm_comp_overlap")
        pct = dict(zip(t["rank"], t["overlap_pct"].round(2)))
        ranks = self._hta_ranks  # a rank without communication: NaN, as in HTA
        df = pd.DataFrame({"rank": pd.Series(ranks, dtype="int64"),
                           "comp_comm_overlap_pctg": [pct.get(r, float("nan")) for r in ranks]})
        if visualize and (px := _plotly("get_comm_comp_overlap")) is not None:
            px.bar(df, x="rank", y="comp_comm_overlap_pctg",
                   title="Computation-Communication Overlap").show()
        return df

    def get_cuda_kernel_launch_stats(self, ranks: Optional[List[int]] = None,
                                     runtime_cutoff: int = 50, launch_delay_cutoff: int = 100,
                                     include_memory_events: bool = True,
                                     visualize: bool = True) -> Dict[int, Any]:
        """rank -> one row per GPU event started by a kernel, memcpy or memset launch call:
        correlation, cpu_duration, gpu_duration, launch_delay (µs, the delay clipped at 0)."""
        if not include_memory_events:
            _not_implemented("get_cuda_kernel_launch_stats(include_memory_events=False)",
                             "trainprof's launches always include cudaMemcpyAsync and "
                             "cudaMemsetAsync")
        pd = _pandas()
        import numpy as np

        out: Dict[int, Any] = {}
        for rank in self._ranks(ranks):
            core, core_rank = self._core_at(rank)
            cols = core.launches(core_rank)
            corr, cpu, gpu, delay = cols[:4] if cols is not None else ([], [], [], [])
            # HTA's parser downcasts its integer columns to the smallest type that holds them.
            correlation = pd.to_numeric(np.array(corr, dtype=np.int64), downcast="integer")
            df = pd.DataFrame({"correlation": correlation,
                               "cpu_duration": np.array(cpu, dtype=np.float64),
                               "gpu_duration": np.array(gpu, dtype=np.float64),
                               "launch_delay": np.array(delay, dtype=np.float64)})
            if visualize and (px := _plotly("get_cuda_kernel_launch_stats")) is not None:
                short = df[(df["gpu_duration"] < df["cpu_duration"])
                           & (df["cpu_duration"] <= runtime_cutoff)]
                px.scatter(short, x="cpu_duration", y="gpu_duration",
                           title=f"Rank {rank}: GPU kernels shorter than their launch").show()
                px.histogram(df[df["launch_delay"] > launch_delay_cutoff], x="launch_delay",
                             title=f"Rank {rank}: launch delay outliers").show()
            if df.empty:
                _warn_no_rows("get_cuda_kernel_launch_stats", rank,
                              "no GPU work in the analysed steps was matched to the runtime call "
                              "that launched it (CUDA, HIP or MTIA launches, by correlation id)")
            out[rank] = df
        return out

    def get_profiler_steps(self) -> List[int]:
        """The traces' ProfilerStep numbers, ascending, the last left out when there are two or
        more (HTA's selection) unless include_last_profiler_step was given."""
        steps = sorted({s for i in range(len(self._parts))  # every ProfilerStep#N named
                        for s in self._run(part=i)._core.profiler_steps})
        return steps[:-1] if len(steps) >= 2 and not self._last_step else steps

    # --- critical path ------------------------------------------------------------------

    def critical_path_analysis(self, rank: int, annotation: str,
                               instance_id: Union[Optional[int], Tuple[int, int]],
                               data_load_events: Optional[List[str]] = None
                               ) -> Optional[Tuple[CPGraph, bool]]:
        """HTA's critical path of `rank` over the `instance_id`-th (from 0) event whose name
        contains `annotation` (the whole trace for ""); (CPGraph, success), or None (with a
        warning) when no event matches, as HTA returns None. `data_load_events`: regular
        expressions; host events they match are data loading on the path."""
        self._ranks([rank])
        if isinstance(instance_id, tuple):  # HTA's (first, last): one window over them
            spec = f"{annotation}:{instance_id[0]}-{instance_id[1]}"
        else:
            spec = f"{annotation}:{instance_id or 0}"
        # Every edge of the graph is kept, as HTA's CPGraph keeps it, for the overlay's
        # show_all_edges.
        options: Dict[str, Any] = {"critical_path": spec, "critical_path_all_edges": True}
        if data_load_events:
            options["data_load_events"] = list(data_load_events)
        core, core_rank = self._core_at(rank, **options)
        path = core.critical_path(core_rank)
        if path is None:
            warnings.warn(f"trainprof.hta: critical_path_analysis: rank {rank} has no instance "
                          f"{instance_id or 0} of a range whose name contains {annotation!r}; "
                          "nothing was analysed (None, as HTA)", stacklevel=2)
            return None
        top = self._table("critical_path_top_events", **options)
        top = top[top["rank"] == rank].reset_index(drop=True)
        label, length_ns, nodes, events, edges, others = path
        return CPGraph(rank, core.path_of_rank(core_rank), label, length_ns, nodes, events,
                       edges, top, others), True

    # --- what trainprof does not answer as HTA does ---------------------------------------

    def get_frequent_cuda_kernel_sequences(self, operator_name: str, output_dir: str,
                                           min_pattern_len: int = 3, rank: int = 0,
                                           top_k: int = 5, visualize: bool = True,
                                           compress_other_kernels: bool = True) -> Any:
        """HTA's patterns: the calls of the operators whose names contain `operator_name`, at
        the least depth, that launched at least `min_pattern_len` GPU events; each pattern
        "op|kernel|..." with its count and GPU and CPU time (µs), most frequent first. An empty
        frame (no columns) when nothing matches, as HTA. HTA also writes a copy of the trace
        with the top_k patterns overlaid into output_dir; trainprof does not, and says so."""
        pd = _pandas()
        if not operator_name:
            return pd.DataFrame()
        self._ranks([rank])
        core, core_rank = self._core_at(rank)
        rows = core.hta_sequences(core_rank, operator_name, int(min_pattern_len))
        if not rows:
            return pd.DataFrame()
        df = pd.DataFrame(rows, columns=["pattern", "count", "GPU kernel duration (us)",
                                         "CPU op duration (us)"])
        warnings.warn(f"trainprof.hta: get_frequent_cuda_kernel_sequences writes no overlaid "
                      f"trace into {output_dir} (HTA does); the patterns are returned",
                      stacklevel=2)
        if visualize and (px := _plotly("get_frequent_cuda_kernel_sequences")) is not None:
            top = df[:top_k].copy()
            top["pattern"] = top["pattern"].str.replace("|", "<br>", regex=False)
            px.bar(top, x=top.index, y="count", hover_data=["pattern", "count"],
                   title=f"Top {len(top)} frequent patterns for rank {rank}").show()
        return df

    def get_queue_length_time_series(self, ranks: Optional[List[int]] = None) -> Dict[int, Any]:
        """rank -> HTA's queue length per stream as a step function: +1 when a launch call
        enqueues GPU work, -1 when that work starts; columns ts (µs on the traces' clock; HTA
        counts from its earliest event), pid, tid, stream,
        queue_length, rows in time order per stream. A rank with no launch is left out, as in
        HTA. The index counts the rows (HTA's holds its own event numbers)."""
        return {rank: df.copy() for rank, df in
                ((r, self._queue_series(r)) for r in self._ranks(ranks)) if df is not None}

    def _queue_series(self, rank: int) -> Optional[Any]:
        """One rank's queue length series, built once (numpy: a stable sort by stream then
        time, and a running sum restarted at each stream)."""
        if rank in self._queues:
            return self._queues[rank]
        pd = _pandas()
        import numpy as np

        core, core_rank = self._core_at(rank)
        cols = core.launches(core_rank)
        df = None
        if cols and cols[0]:
            _, _, _, _, launch_ts, gpu_ts, stream, pid, tid = cols
            n = len(launch_ts)
            ts = np.concatenate([np.asarray(launch_ts, float), np.asarray(gpu_ts, float)])
            streams = np.tile(np.asarray(stream, np.int64), 2)
            order = np.lexsort((ts, streams))  # stable: by stream, then time
            step = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])[order]
            s_sorted = streams[order]
            total = np.cumsum(step)
            first = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
            before = np.maximum.accumulate(np.where(first, np.arange(2 * n), 0))
            queue = total - (total[before] - step[before])
            df = pd.DataFrame({"ts": ts[order],
                               "pid": np.tile(np.asarray(pid, np.int64), 2)[order],
                               "tid": np.tile(np.asarray(tid, np.int64), 2)[order],
                               "stream": s_sorted, "queue_length": queue}).rename_axis("index")
        self._queues[rank] = df
        return df

    def get_queue_length_summary_from_time_series(self, queue_length_dict: Dict[int, Any]
                                                  ) -> Optional[Any]:
        """pandas' describe() of the queue length per (rank, stream), from the time series."""
        pd = _pandas()
        import numpy as np

        rows, index = [], []
        for rank, df in queue_length_dict.items():
            df["rank"] = rank  # as HTA, which adds the column to the frames it is given
            for stream, part in df.groupby("stream", sort=True):
                q = part["queue_length"].to_numpy(dtype=float)
                rows.append([float(len(q)), q.mean(), q.std(ddof=1) if len(q) > 1 else np.nan, q.min(),
                             *np.percentile(q, [25, 50, 75]), q.max()])
                index.append((rank, stream))
        if not rows:
            return None
        return pd.DataFrame(rows, index=pd.MultiIndex.from_tuples(index, names=["rank", "stream"]),
                            columns=pd.MultiIndex.from_product([["queue_length"], _DESCRIBE]))

    def get_queue_length_summary(self, ranks: Optional[List[int]] = None) -> Optional[Any]:
        """HTA's queue length statistics per (rank, stream): count, mean, std, quartiles."""
        return self.get_queue_length_summary_from_time_series(
            self.get_queue_length_time_series(ranks))

    def get_time_spent_blocked_on_full_queue(self, queue_length_dict: Dict[int, Any],
                                             max_queue_length: int = 1024) -> Optional[Any]:
        """Per rank, the time its streams' queue length stood at max_queue_length or more (µs)
        and its share of the trace's duration; HTA keeps the last stream of a rank that has
        such time, and so does this."""
        pd = _pandas()
        result: Dict[int, List[Any]] = {}
        for rank, ql in queue_length_dict.items():
            core, core_rank = self._core_at(rank)
            duration = core.trace_duration(core_rank)
            for stream in ql.stream.unique():
                df = ql.loc[ql.stream == stream].copy()
                df["dur"] = df.ts.shift(-1) - df.ts
                df = df.loc[df.queue_length >= max_queue_length]
                if df.empty:
                    continue
                at_max = df.dur.sum()
                result[rank] = [stream, at_max, at_max / duration if duration else float("nan")]
        df = pd.DataFrame.from_dict(result, orient="index", columns=[
            "stream", "duration_at_max_queue_length", "relative_duration_at_max_queue_length"])
        return df.reset_index(names="rank")

    def get_memory_bw_time_series(self, ranks: Optional[List[int]] = None) -> Dict[int, Any]:
        """rank -> HTA's memory bandwidth series: each memcpy's and memset's GB/s (Kineto's
        "memory bandwidth (GB/s)") added at its start and taken off at its end, summed per
        copy type ("Memcpy DtoH", ..., "Memset"); columns ts (µs on the traces' clock), pid, name,
        memory_bw_gbps. A rank without copies is left out, as in HTA."""
        return {r: df for r in self._ranks(ranks)
                if (df := _counters.memory_bw_series(*self._core_at(r))) is not None}

    def get_memory_bw_summary(self, ranks: Optional[List[int]] = None) -> Optional[Any]:
        """pandas' describe() of memory_bw_gbps per (rank, copy type), the series' zero
        points left out; None without copies."""
        return _counters.memory_bw_summary(self.get_memory_bw_time_series(ranks))

    def get_gpu_kernels_with_user_annotations(self, rank: int, expand_names: bool = True,
                                              shorten_names: bool = True) -> Optional[Any]:
        """Every GPU kernel, copy and set of `rank` with the GPU user annotation it falls in on
        its own GPU track (the innermost where they nest): ts, dur, end (µs), pid, tid, stream,
        correlation, name, user_annotation (a number per annotation name, -1 for none), and with
        expand_names s_name and s_user_annotation (names shortened as HTA shortens them). None,
        with a warning, when the trace has no GPU user annotation, as HTA."""
        pd = _pandas()
        self._ranks([rank])
        core, core_rank = self._core_at(rank)
        cols = core.kernels_with_annotations(core_rank)
        if cols is None:
            warnings.warn(f"trainprof.hta: the trace of rank {rank} has no GPU user annotations",
                          stacklevel=2)
            return None
        ts, dur, pid, tid, stream, corr, name, note = cols
        ids = {n: i for i, n in enumerate(sorted(set(note) - {""}))}
        df = pd.DataFrame({"ts": ts, "dur": dur, "pid": pid, "tid": tid, "stream": stream,
                           "correlation": corr, "name": name,
                           "user_annotation": [ids.get(n, -1) for n in note]})
        df.insert(2, "end", df["ts"] + df["dur"])
        if expand_names:
            short = _shorten if shorten_names else (lambda n: n)
            df["s_name"] = df["name"].map(short)
            df["s_user_annotation"] = [short(n) for n in note]
        return df

    def get_potential_stragglers(self, profiler_steps: Optional[List[int]] = None,
                                 num_candidates: int = 2, visualize: bool = False,
                                 straggler_identification_impl: Any = None) -> List[int]:
        """HTA's late-start rule: of the ncclKernels that last at least 1 % of the mean
        iteration, the (stream, kernel) whose duration varies most across ranks; in each
        iteration the ranks whose normalized start is among the num_candidates latest are
        stragglers; the ranks counted most often, most first."""
        if straggler_identification_impl is not None:
            _not_implemented("get_potential_stragglers(straggler_identification_impl=...)",
                             "it takes HTA's own event table")
        pd = _pandas()
        num_candidates = max(1, num_candidates)
        available = self.get_profiler_steps()
        steps = available if profiler_steps is None else \
            [i for i in profiler_steps if i in available]
        if not steps:
            raise ValueError(f"invalid value for argument: profiler_steps={profiler_steps}; "
                             f"available profiler steps={available}")
        spans, comm = [], []
        for rank in self._hta_ranks:
            core, core_rank = self._core_at(rank)
            rank_spans, rank_comm = core.straggler_rows(core_rank)
            spans += [(rank, *row) for row in rank_spans if row[0] in steps]
            comm += [(rank, *row) for row in rank_comm if row[0] in steps]
        if not spans or not comm:
            return []
        t_min = min(s[2] for s in spans)
        mean_iter = (max(s[3] for s in spans) - t_min) / len({s[1] for s in spans})
        df = pd.DataFrame(comm, columns=["rank", "iteration", "ts", "dur", "stream", "name"])
        df = df[df["dur"] >= mean_iter * 0.01]
        if df.empty:
            return []
        last = df.groupby(["rank", "stream", "iteration", "name"], as_index=False).last()
        last["normalized_start_time"] = (last["ts"] - t_min) / mean_iter
        last["duration"] = last["dur"] / mean_iter
        spread = last.groupby(["stream", "iteration", "name"])["duration"].std()
        if spread.dropna().empty:  # HTA fails here with a TypeError
            raise ValueError("trainprof.hta: get_potential_stragglers compares ranks: no "
                             "communication kernel ran on two ranks or more in these steps")
        stream, name = spread.groupby(["stream", "name"]).mean().idxmax()
        metric = last[(last["stream"] == stream) & (last["name"] == name)]
        metric = metric[["rank", "iteration", "normalized_start_time"]].copy()
        metric["is_straggler"] = 0
        for _, group in metric.groupby("iteration"):
            ordered = group["normalized_start_time"].sort_values(ascending=False).tolist()
            threshold = ordered[num_candidates - 1]
            metric.loc[group.index, "is_straggler"] = \
                (group["normalized_start_time"] >= threshold).astype(int)
        counts = metric.groupby("rank")["is_straggler"].sum()
        return counts.sort_values(ascending=False)[:num_candidates].index.tolist()

    def get_gpu_user_annotation_breakdown(self, use_gpu_annotation: bool = True,
                                          visualize: bool = True, duration_ratio: float = 0.8,
                                          num_kernels: int = 1000,
                                          allowlist_patterns: Optional[List[str]] = None,
                                          image_renderer: Optional[str] = None) -> Optional[Any]:
        """Time per user annotation (gpu_user_annotation, or the CPU's user_annotation with
        use_gpu_annotation=False) on each rank, µs: sum, max, min, stddev, mean; past
        num_kernels names or the duration_ratio of the time, the rest is "others" (names that
        contain an allowlist pattern excepted), as HTA folds them. None, with a warning, when
        no rank has that kind of annotation."""
        pd = _pandas()
        frames, any_events = [], False
        for rank in self._hta_ranks:
            core, core_rank = self._core_at(rank)
            has, rows = core.annotation_stats(core_rank, use_gpu_annotation, int(num_kernels),
                                              float(duration_ratio), list(allowlist_patterns or []))
            any_events = any_events or has
            df = pd.DataFrame(rows, columns=["name", "sum", "max", "min", "mean", "std"])
            df = df.astype({c: "float64" for c in ["sum", "max", "min", "mean", "std"]})
            df["rank"] = int(rank)
            frames.append(df)
        if not any_events:
            kind = "gpu_user_annotation" if use_gpu_annotation else "user_annotation"
            warnings.warn(f"trainprof.hta: the traces have no {kind} events", stacklevel=2)
            return None
        out = pd.concat(frames, ignore_index=True).sort_values(by=["rank", "name"],
                                                                ignore_index=True)
        out = out[["name", "sum", "max", "min", "std", "mean", "rank"]]  # HTA's column order
        out = out.rename(columns={"sum": "sum (us)", "mean": "mean (us)", "max": "max (us)",
                                  "min": "min (us)", "std": "stddev"})
        if visualize and (px := _plotly("get_gpu_user_annotation_breakdown")) is not None:
            px.bar(out, x="name", y="sum (us)", facet_row="rank",
                   title="Time per user annotation").show(renderer=image_renderer or None)
        return out

    def get_aten_op_kernels_and_delay(self, ranks: Optional[List[int]] = None,
                                      sort_by: Optional[List[str]] = None) -> Dict[int, Any]:
        """rank -> per (aten op, its kernel sequence): occurrence_count, the mean delay from the
        op's start to its first launch call and from that call to its kernel's start (µs), as
        HTA groups each op call's launches (the innermost aten:: op around each launch call)."""
        pd = _pandas()
        out: Dict[int, Any] = {}
        for rank in self._ranks(ranks):
            core, core_rank = self._core_at(rank)
            tid, op, op_ts, launch_ts, kernel_ts, corr, kernel = core.aten_op_launches(core_rank)
            stats = pd.DataFrame({"thread_id": tid, "aten_op_name": op, "aten_op_start": op_ts,
                                  "runtime_start": launch_ts, "device_start": kernel_ts,
                                  "correlation_id": corr, "kernel_name": kernel})
            stats["aten_op_delay"] = stats["runtime_start"] - stats["aten_op_start"]
            stats["runtime_delay"] = stats["device_start"] - stats["runtime_start"]
            calls = stats.groupby(["thread_id", "aten_op_name", "aten_op_start"]).agg(
                {"kernel_name": list, "aten_op_delay": "first", "runtime_delay": "first"}
            ).reset_index()
            calls["kernel_sequence"] = calls["kernel_name"].apply(" -> ".join)
            final = calls.groupby(["aten_op_name", "kernel_sequence"]).agg(
                occurrence_count=("runtime_delay", "count"),
                avg_aten_op_launch_delay=("aten_op_delay", "mean"),
                avg_runtime_delay=("runtime_delay", "mean"),
            ).reset_index().sort_values(sort_by or ["occurrence_count"], ascending=False)
            final["avg_runtime_delay"] = final["avg_runtime_delay"].round(3)
            final["avg_aten_op_launch_delay"] = final["avg_aten_op_launch_delay"].round(3)
            out[rank] = final
        return out

    def generate_trace_with_counters(self, time_series: Optional[Any] = None,
                                     ranks: Optional[List[int]] = None,
                                     output_suffix: str = "_with_counters") -> None:
        """HTA's trace with counters: each rank's trace with Chrome counter events appended
        (time_series: TimeSeriesTypes.QUEUE_LENGTH, "Queue Length" per stream, and/or
        MEMCPY_BANDWIDTH, one counter per copy type; both by default), written beside it as
        <trace>_with_counters.json[.gz]. Perfetto and chrome://tracing draw the counters."""
        wanted = int(time_series.value) if time_series is not None else 3  # HTA's flag values
        series: Dict[int, List[Any]] = {}
        if wanted & TimeSeriesTypes.QUEUE_LENGTH.value:
            for r, df in self.get_queue_length_time_series(ranks).items():
                series.setdefault(r, []).append(
                    _counters.counter_events(df, "Queue Length", "queue_length"))
        if wanted & TimeSeriesTypes.MEMCPY_BANDWIDTH.value:
            for r, df in self.get_memory_bw_time_series(ranks).items():
                series.setdefault(r, []).append(
                    _counters.counter_events(df, "Memcpy BW", "memory_bw_gbps"))
        paths = {r: self.t.trace_files[r] for r in series}
        _counters.write_trace_with_counters(paths, series, output_suffix or "_with_counters")

    def get_cupti_counter_data_with_operators(self, ranks: Optional[List[int]] = None
                                              ) -> List[Any]:
        """HTA's frames of CUPTI's range-profiler counters (one per rank), each kernel range
        with its counters and the operators around the cudaLaunchKernel call it pairs with
        (op_stack, top_level_op, bottom_level_op); [] without cuda_profiler_range events."""
        return _counters.counter_data_with_operators(self._core_at, self._ranks(ranks))

    def overlay_critical_path_analysis(self, rank: int, critical_path_graph: CPGraph,
                                       output_dir: str, only_show_critical_events: bool = True,
                                       show_all_edges: bool = False) -> str:
        """HTA's overlay: rank's trace with the path's events marked (args.critical = 1) and
        an arrow per dependency, launch and sync edge on the path (with show_all_edges and
        every event shown: per edge of the graph), written to output_dir as
        overlaid_critical_path_<trace file>; returns its path. Perfetto opens it."""
        if critical_path_graph.rank != rank:
            raise ValueError(f"trainprof.hta: the graph is rank {critical_path_graph.rank}'s, "
                             f"not rank {rank}'s")
        return write_overlay(critical_path_graph, output_dir, only_show_critical_events,
                             show_all_edges=show_all_edges)
