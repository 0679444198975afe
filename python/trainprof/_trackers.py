"""A finished run's figures in the experiment trackers a Lightning Trainer already logs to.

Used by :class:`trainprof.lightning.TrainprofProfiler`; it needs no Lightning itself and uses
only Lightning's public logger API, by duck typing:

* every logger: ``log_metrics(metrics, step)`` with the run's headline figures
  (``trainprof/<section>.<metric>``, at the last step) and its rate curves
  (``trainprof/training_rate`` and ``trainprof/validation_rate`` in samples/s, per step, as
  anemoi-training logs them);
* a logger that keeps artifacts through an MLflow client (``MLFlowLogger``: ``experiment`` with
  ``log_artifacts`` and a ``run_id``): the run folder's report files under ``trainprof/``;
* a logger with a ``log_dir`` and a writer with ``add_text`` (``TensorBoardLogger``): the text
  report as a text summary, and the report files copied into ``<log_dir>/trainprof/``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from typing import Any, Dict, Iterable, List, Tuple

# The report files handed to trackers: the run folder's top level, no rank sub-folders.
_ARTIFACT_SUFFIXES = (".json", ".txt", ".html", ".csv")


def report_metrics(report: Dict[str, Any]) -> Dict[str, float]:
    """The numeric headline metrics of every section of a report.json, keyed
    ``trainprof/<section>.<metric>``."""
    out: Dict[str, float] = {}
    for section in report.get("sections", []):
        for key, metric in (section.get("metrics") or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if math.isfinite(value):
                    out[f"trainprof/{section['id']}.{key}"] = float(value)
    return out


def rate_curves(report: Dict[str, Any]) -> Iterable[Tuple[str, int, float]]:
    """(name, step, samples/s) of the training and validation rate tables."""
    for section in report.get("sections", []):
        for table in section.get("tables", []):
            if table.get("id") not in ("training_rate", "validation_rate"):
                continue
            for row in table.get("rows", []):
                value, step = row.get("samples_per_s"), row.get("step")
                if isinstance(value, (int, float)) and isinstance(step, int):
                    yield f"trainprof/{table['id']}", step, float(value)


def _artifacts(run_dir: str) -> List[str]:
    return sorted(
        os.path.join(run_dir, name)
        for name in os.listdir(run_dir)
        if name.endswith(_ARTIFACT_SUFFIXES) and os.path.isfile(os.path.join(run_dir, name))
    )


def _hand_over(logger: Any, run_dir: str, summary: str) -> str:
    """Gives the report files to a logger that keeps files; says what was done, or ""."""
    experiment = getattr(logger, "experiment", None)
    run_id = getattr(logger, "run_id", None)
    if run_id and hasattr(experiment, "log_artifacts"):
        experiment.log_artifacts(run_id, run_dir, artifact_path="trainprof")
        return f"MLflow run {run_id}: artifacts under trainprof/"
    log_dir = getattr(logger, "log_dir", None)
    if log_dir and hasattr(experiment, "add_text"):
        experiment.add_text("trainprof/summary", "```\n" + summary + "\n```")
        target = os.path.join(log_dir, "trainprof")
        os.makedirs(target, exist_ok=True)
        for path in _artifacts(run_dir):
            shutil.copy2(path, target)
        return f"TensorBoard {log_dir}: text summary, reports in trainprof/"
    return ""


def log_to_loggers(loggers: Iterable[Any], run_dir: str, last_step: int) -> List[str]:
    """Logs the run in ``run_dir`` (its report.json) through each logger; returns one line per
    logger that kept the report files. A logger that raises is skipped with a warning line, so a
    tracker that is down never loses the run's own reports."""
    with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    summary = ""
    if os.path.isfile(os.path.join(run_dir, "summary.txt")):
        with open(os.path.join(run_dir, "summary.txt"), encoding="utf-8") as f:
            summary = f.read()
    metrics = report_metrics(report)
    curves = list(rate_curves(report))
    done: List[str] = []
    for logger in loggers:
        try:
            for name, step, value in curves:
                logger.log_metrics({name: value}, step=step)
            if metrics:
                logger.log_metrics(metrics, step=last_step)
            if hasattr(logger, "save"):
                logger.save()
            line = _hand_over(logger, run_dir, summary)
            if line:
                done.append(line)
        except Exception as e:  # noqa: BLE001: a tracker's failure must not lose the run
            done.append(f"warning: {type(logger).__name__} did not take the report: {e}")
    return done
