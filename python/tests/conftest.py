"""Shared helpers of the Python package's tests. They test the package built in the build tree
(PYTHONPATH=build/release/python, as scripts/test.sh sets it) or an installed one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_report_header(config: Any) -> str:
    import trainprof

    return f"trainprof {trainprof.__version__} from {os.path.dirname(trainprof.__file__)}"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own folder, with its own run history."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAINPROF_DB", str(tmp_path / "history.db"))


def load_report(run_dir: str) -> Dict[str, Any]:
    with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as f:
        return json.load(f)


def section(report: Dict[str, Any], sid: str) -> Dict[str, Any]:
    for s in report["sections"]:
        if s["id"] == sid:
            return s
    raise AssertionError(f"no section {sid!r}; have {[s['id'] for s in report['sections']]}")


def table(report: Dict[str, Any], sid: str, tid: str) -> Dict[str, Any]:
    for t in section(report, sid)["tables"]:
        if t["id"] == tid:
            return t
    raise AssertionError(f"no table {tid!r} in section {sid!r}")


def calls(report: Dict[str, Any]) -> Dict[str, int]:
    """Action -> calls, from the time report."""
    return {r["action"]: r["calls"] for r in table(report, "time", "time_report")["rows"]}


def python_env() -> Dict[str, str]:
    """The environment for a child Python that must import the same trainprof."""
    import trainprof

    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(trainprof.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_parent, env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


PYTHON = sys.executable
# The trainprof command (resolved now, before the tests change folder).
_CLI = os.path.abspath(os.environ.get("TRAINPROF_CLI", str(ROOT / "build/release/src/cli/trainprof")))


def cli() -> str:
    """The built trainprof command; fails the test, naming it, when it is not there."""
    if not os.path.exists(_CLI):
        pytest.fail(f"the trainprof command is not built at {_CLI} (set TRAINPROF_CLI)")
    return _CLI
