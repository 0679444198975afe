#!/usr/bin/env python3
"""Writes N rank traces made from one real Kineto trace, for timing `trainprof analyze` on many ranks.

The source's events are cut to about SIZE MB (the earliest events, metadata kept), and rank k's
copy gets `distributedInfo.rank = k` (world size N) and its clock shifted by k * 1.234 us - 2 ms,
as unsynchronised hosts would give. The files are plain JSON, rank<k>.json; nothing is committed.

  bench/make_shared_rank_traces.py SOURCE.json[.gz] OUT_DIR [--ranks 1000] [--mb 0.7]
"""
import argparse
import gzip
import json
import os


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def cut_events(events, mb):
    """The metadata events and the earliest timed events that fit in about `mb` MB."""
    meta = [e for e in events if "ts" not in e]
    timed = sorted((e for e in events if "ts" in e), key=lambda e: e["ts"])
    budget = int(mb * 1e6) - len(json.dumps(meta))
    out, used = [], 0
    for e in timed:
        used += len(json.dumps(e)) + 2
        if used > budget:
            break
        out.append(e)
    return meta, out


def write_rank(out_dir, doc, meta, timed, rank, ranks):
    shift = rank * 1.234 - 2000.0
    d = dict(doc)
    d["distributedInfo"] = dict(doc.get("distributedInfo") or {}, rank=rank, world_size=ranks)
    d["traceEvents"] = meta + [dict(e, ts=e["ts"] + shift) for e in timed]
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w", encoding="utf-8") as f:
        json.dump(d, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("out_dir")
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--mb", type=float, default=0.7)
    a = ap.parse_args()
    doc = load(a.source)
    meta, timed = cut_events(doc.pop("traceEvents"), a.mb)
    os.makedirs(a.out_dir, exist_ok=True)
    for rank in range(a.ranks):
        write_rank(a.out_dir, doc, meta, timed, rank, a.ranks)
    print(f"wrote {a.ranks} ranks of {len(meta) + len(timed)} events to {a.out_dir}")


if __name__ == "__main__":
    main()
