#!/usr/bin/env python3
"""Writes a long plain-JSON Kineto trace by repeating a real trace's step window.

The events whose start lies between the first ProfilerStep's start and the last one's end are
copied again and again, each copy shifted by the window's length, with its ProfilerStep numbers
and its ids (correlation, External id, flow ids) renumbered so that no two copies share one.
Events outside the window (metadata, the profiler's own spans) are written once. The output is
streamed, so a 1 GB trace needs no more memory than the source trace.

  bench/make_long_trace.py SOURCE.json[.gz] OUT.json [--mb 1000]

docs/performance.md times `trainprof analyze` on the result.
"""
import argparse
import gzip
import json
import re
import sys

ID_ARGS = ("correlation", "External id")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def step_window(events):
    steps = [e for e in events if STEP.match(str(e.get("name", ""))) and "dur" in e]
    if not steps:
        sys.exit("make_long_trace: the source has no ProfilerStep#N events to repeat")
    start = min(e["ts"] for e in steps)
    end = max(e["ts"] + e["dur"] for e in steps)
    return start, end, len(steps)


def largest_id(events):
    top = 0
    for e in events:
        args = e.get("args") or {}
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                top = max(top, args[key])
        if isinstance(e.get("id"), int):
            top = max(top, e["id"])
    return top


def shifted(event, copy, shift, id_stride, step_stride):
    e = dict(event)
    e["ts"] = e["ts"] + copy * shift
    if isinstance(e.get("id"), int):
        e["id"] += copy * id_stride
    args = e.get("args")
    if isinstance(args, dict) and any(isinstance(args.get(k), int) for k in ID_ARGS):
        args = dict(args)
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                args[key] += copy * id_stride
        e["args"] = args
    m = STEP.match(str(e.get("name", "")))
    if m:
        e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + copy * step_stride)
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=1000, help="size to reach, in MB (default 1000)")
    a = ap.parse_args()
    trace = load(a.source)
    events = trace.pop("traceEvents")
    start, end, nsteps = step_window(events)
    window = [e for e in events if "ts" in e and start <= e["ts"] < end]
    rest = [e for e in events if not ("ts" in e and start <= e["ts"] < end)]
    shift, id_stride = end - start, largest_id(events) + 1
    target = int(a.mb * 1e6)
    with open(a.out, "w", encoding="utf-8") as out:
        head = json.dumps(trace)[:-1]
        out.write(head + (', ' if trace else '') + '"traceEvents": [\n')
        written, copy, first = 0, 0, True
        for e in rest:
            text = json.dumps(e)
            out.write(("" if first else ",\n") + text)
            written += len(text) + 2
            first = False
        while written < target:
            for e in window:
                text = json.dumps(shifted(e, copy, shift, id_stride, nsteps))
                out.write(("" if first else ",\n") + text)
                written += len(text) + 2
                first = False
            copy += 1
            print(f"\r{written / 1e6:.0f} MB, {copy * nsteps} steps", end="", file=sys.stderr)
        out.write("\n]}\n")
    print(f"\nwrote {a.out}: {copy} copies of {len(window)} events ({copy * nsteps} steps)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
