"""A profiler trace file as its raw JSON, read and written whole (plain, or gzip when the name
ends .gz), for the drop-in's methods that write a copy of a trace as HTA does."""

from __future__ import annotations

import gzip
import json
from typing import Any, Dict


def load_raw_trace(path: str) -> Dict[str, Any]:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def write_raw_trace(path: str, raw: Dict[str, Any]) -> None:
    with (gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")) as f:
        json.dump(raw, f)
