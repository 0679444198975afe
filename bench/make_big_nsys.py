#!/usr/bin/env python3
"""Makes a large Nsight Systems SQLite export for benchmarks by repeating a real one's rows.

    bench/make_big_nsys.py ../shared/data/nsys/mfu_2gpu_before.sqlite /tmp/big.sqlite --mb 1024

The source is copied (never changed), then its GPU work, CUDA API calls and NVTX ranges are
appended again and again, each copy shifted past the last in time and given new correlation
ids, until the file reaches the asked size: the shape of a long profile of the same job.
"""
import argparse
import os
import shutil
import sqlite3
import sys

TABLES = ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
          "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("source")
    p.add_argument("out")
    p.add_argument("--mb", type=float, default=1024, help="size to reach, in MB (default 1024)")
    a = p.parse_args()
    shutil.copyfile(a.source, a.out)
    os.chmod(a.out, 0o644)
    db = sqlite3.connect(a.out)
    tables = [t for t in TABLES if db.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = ?", (t,)).fetchone()[0]]
    lo, hi = db.execute("SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
    span = hi - lo + 1000
    corr = db.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    for t in tables:
        db.execute(f"CREATE TEMP TABLE orig_{t} AS SELECT * FROM {t}")
    k = 0
    while os.path.getsize(a.out) < a.mb * 1e6:
        k += 1
        for t in tables:
            cols = [r[1] for r in db.execute(f"PRAGMA table_info({t})")]
            expr = [f"{c} + {k * span}" if c in ("start", "end")
                    else f"{c} + {k * corr}" if c == "correlationId" else c for c in cols]
            db.execute(f"INSERT INTO {t} SELECT {', '.join(expr)} FROM orig_{t}")
        db.commit()
        if k % 50 == 0:
            print(f"{k} copies, {os.path.getsize(a.out) / 1e6:.0f} MB", file=sys.stderr)
    print(file=sys.stderr)
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
