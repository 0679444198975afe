#!/usr/bin/env python3
"""Copies the part of a run's report.json that `trainprof compare` gates on into a small file:
its meta, config and speed section, with the per-step table (speed.training_rate) cut to the
columns the interval reads. tests/data/compare/ holds real runs trimmed this way.

Usage: scripts/trim-run.py RUN_DIR OUT_DIR   (writes OUT_DIR/report.json)
"""
import json
import os
import sys

KEEP_META = ("trainprof_version", "created_utc", "host", "device", "torch_threads", "steps")
KEEP_RATE = ("step", "batches_per_s", "samples_per_s", "data_wait_s")


def trim(report):
    out = {k: report[k] for k in ("schema_version", "kind", "title", "config")}
    out["meta"] = {k: v for k, v in report["meta"].items() if k in KEEP_META}
    out["diagnostics"] = []
    speed = next(s for s in report["sections"] if s["id"] == "speed")
    tables = []
    for t in speed["tables"]:
        if t["id"] == "training_rate":
            t = dict(t)
            t["columns"] = [c for c in t["columns"] if c["key"] in KEEP_RATE]
            t["rows"] = [{k: r[k] for k in KEEP_RATE} for r in t["rows"]]
            tables.append(t)
        elif t["id"] == "speed_report":
            tables.append(t)
    out["sections"] = [dict(speed, tables=tables)]
    return out


def main():
    run_dir, out_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(run_dir, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(trim(report), f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
