"""trainprof.analyze(): `trainprof analyze` in-process, its report as DataFrames.

The reading and every analysis are the C++ core's (the same code as the CLI, run with the GIL
released); this module checks the keywords, names the run's parts, and hands tables to pandas,
which is imported only when a table is asked for.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Dict, Iterable, List, Sequence, Tuple, Union

from trainprof import _core

PathLike = Union[str, "os.PathLike[str]"]

# The keywords and what each takes, in the CLI's order (`trainprof analyze --help`): the C++
# core's one list of analyze options, which also checks them (analysis/run/options.h).
_OPTIONS: Dict[str, str] = {k: f"{expects}: {help}" for k, expects, help in _core.analyze_options()}

# Table columns by report.json unit: whole numbers and flags become int and bool columns,
# everything else measured becomes float (seconds, bytes/s, percent, ...), text stays text.
_INT_UNITS = frozenset({"count", "bytes", "id"})
_TEXT_UNITS = frozenset({"text", "by_row"})


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # only the tables need it
        raise ImportError(
            "trainprof: Analysis.table() builds a pandas DataFrame, and pandas is not "
            "installed (pip install pandas)"
        ) from e
    return pandas


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise ValueError("trainprof.analyze(): no trace given (a file, a folder, or a list)")
    return out


def analyze(paths: Union[PathLike, Iterable[PathLike]], **options: Any) -> "Analysis":
    """Reads and analyses one run's PyTorch profiler (Kineto) traces, as `trainprof analyze`.

    `paths`: a trace file, a folder of one run's traces (one file per rank), or a list of them.
    The keywords are the CLI's options (`hta_compat=True`, `critical_path="forward:1"`,
    `peak_tflops=312`, ...; see `trainprof.analyze_options()`); an unknown one is a TypeError.

    Raises trainprof.TraceError (a ValueError) with the CLI's one-line error: the path does not
    exist or holds no trace, a file is not a trace (its byte, line and column), nothing to
    analyse, or a trace cut short (unless `allow_data_errors=True`).
    """
    return Analysis(_core.analyze(_paths(paths), options))


def analyze_options() -> Dict[str, str]:
    """The keywords trainprof.analyze() takes, with what each expects."""
    return dict(_OPTIONS)


class Analysis:
    """One run analysed: report.json's sections, their tables as DataFrames, the figures,
    findings and diagnostics, and the run folder `trainprof analyze` writes."""

    def __init__(self, core: Any) -> None:
        self._core = core

    @property
    def sections(self) -> List[str]:
        """The section ids, in report order ("overview", "gpu", "hta", ...)."""
        return list(self._core.sections)

    @property
    def tables(self) -> List[Tuple[str, str]]:
        """(section id, table id) of every table, in report order."""
        return [(s, t) for s, t, _, _ in self._core.tables()]

    def _no_such_table(self, id: str) -> str:
        import difflib
        ids = [t for _, t in self.tables] + [f"{s}/{t}" for s, t in self.tables]
        near = difflib.get_close_matches(id, ids, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        return (f"no table {id!r} in this analysis{hint} (Analysis.tables lists the "
                f"{len(self.tables)} tables)")

    @property
    def files(self) -> List[str]:
        """The trace files that were read."""
        return list(self._core.files)

    @property
    def ranks(self) -> List[int]:
        return list(self._core.ranks())

    def table(self, id: str) -> Any:
        """The table `id` ("temporal_breakdown", or "hta/temporal_breakdown") as a pandas
        DataFrame: report.json's column keys, values in report.json's base units (seconds,
        bytes, percent 0-100), counts as int64 (Int64 where a cell is empty), text as str.
        `df.attrs` holds the title, the section, each column's unit, the notes and the footer
        rows (a table's Total, as dicts). KeyError when there is no such table, naming the
        nearest ids and where the list is (`tables`); ImportError when pandas is not
        installed."""
        pd = _pandas()
        import numpy as np

        try:
            t = self._core.table(id)
        except KeyError:
            raise KeyError(self._no_such_table(id)) from None
        cols: Dict[str, Any] = {}
        units: Dict[str, str] = {}
        for (key, _title, unit), values in zip(t["columns"], t["data"]):
            units[key] = unit
            cols[key] = _column(pd, np, unit, values)
        df = pd.DataFrame(cols, columns=list(units))
        keys = list(units)
        df.attrs.update({"title": t["title"], "section": t["section"], "units": units,
                         "notes": list(t["notes"]),
                         "footer": [dict(zip(keys, row)) for row in t["footer"]]})
        return df

    @property
    def metrics(self) -> Dict[str, Dict[str, Any]]:
        """Headline figures: {section: {key: value}} in base units (as report.json)."""
        out: Dict[str, Dict[str, Any]] = {}
        for section, key, _title, value, _unit, _suffix in self._core.metrics():
            out.setdefault(section, {})[key] = value
        return out

    @property
    def findings(self) -> List[Dict[str, str]]:
        """Findings and recommendations: [{"section", "severity", "text"}]."""
        return [{"section": s, "severity": sev, "text": text}
                for s, sev, text in self._core.findings()]

    @property
    def diagnostics(self) -> List[Dict[str, Any]]:
        """What the input lacked or lost: [{"name", "severity", "count", "message",
        "meaning"}], as the data-quality section lists them."""
        return [{"name": n, "severity": sev, "count": c, "message": m, "meaning": meaning}
                for n, sev, c, m, meaning in self._core.diagnostics()]

    @property
    def summary(self) -> str:
        """The report as `trainprof analyze` prints it."""
        return str(self._core.text())

    def to_dict(self) -> Dict[str, Any]:
        """report.json's content."""
        return json.loads(self._core.to_json())

    def write(self, dir: PathLike, overwrite: bool = False) -> str:
        """Writes the run folder as `trainprof analyze` does (report.json, report.html,
        summary.txt, one CSV per table, critical_path.trace.json with critical_path) into
        `dir`, and returns its absolute path, with the CLI's writer: the files are written
        beside it first and put in place when all are written, so a failure leaves `dir` as it
        was. A `dir` holding an earlier run is refused (trainprof.TrainprofError) unless
        `overwrite`, which replaces that run's files (other files stay, as with the CLI)."""
        return str(self._core.write(os.fspath(dir), overwrite))

    def __repr__(self) -> str:
        return (f"<trainprof.Analysis of {len(self.files)} file(s), ranks {self.ranks}: "
                f"{len(self.sections)} sections, {len(self.findings)} findings>")

    def _repr_html_(self) -> str:
        """The findings and the overview (step time breakdown), for a notebook."""
        parts = ["<div class='trainprof-analysis'>",
                 f"<p><b>trainprof analyze</b>: {html.escape(', '.join(self.files))}</p>"]
        findings = self.findings
        if findings:
            parts.append("<h4>Findings</h4><ul>")
            for f in findings:
                parts.append(f"<li><b>{html.escape(f['severity'])}</b> "
                             f"({html.escape(f['section'])}): {html.escape(f['text'])}</li>")
            parts.append("</ul>")
        else:
            parts.append("<p>No finding: no threshold was crossed.</p>")
        for _, table_id in [t for t in self.tables if t[0] == "overview"]:
            t = self._core.table(table_id)
            parts.append(_html_table(t))
        parts.append("</div>")
        return "".join(parts)


def _column(pd: Any, np: Any, unit: str, values: Sequence[Any]) -> Any:
    if unit in _TEXT_UNITS:
        return pd.Series(values, dtype=object)
    if unit == "bool":
        if any(v is None for v in values):
            return pd.array(values, dtype="boolean")
        return np.array(values, dtype=bool)
    if unit in _INT_UNITS and all(isinstance(v, int) or v is None for v in values):
        if any(v is None for v in values):
            return pd.array(values, dtype="Int64")
        return np.array(values, dtype=np.int64)
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _html_table(t: Dict[str, Any]) -> str:
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title, _ in t["columns"])
    rows = []
    n = len(t["data"][0]) if t["data"] else 0
    for r in range(n):
        cells = []
        for (_, _, unit), col in zip(t["columns"], t["data"]):
            cells.append(f"<td>{html.escape(_format(col[r], unit))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<h4>{html.escape(t['title'])}</h4><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _format(v: Any, unit: str) -> str:
    if v is None:
        return ""
    if unit == "seconds" and isinstance(v, (int, float)):
        return f"{v * 1e3:.3f} ms"
    if unit == "percent" and isinstance(v, (int, float)):
        return f"{v:.1f} %"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
