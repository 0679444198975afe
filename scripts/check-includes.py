#!/usr/bin/env python3
"""Checks that includes run downhill (as Perfetto's tools/check_include_violations does).

Three rules, over include/ and src/:
1. A folder includes only itself and the folders below it in the layering of
   docs/architecture.md ("Folders and their layers"), which LAYERS below restates: a folder's
   allowed set is its own layer list and everything those allow, transitively.
2. No include loop between modules (foo.h and foo.cc are one module, with the private headers
   PRIVATE_PARTS names): a file may not include a header whose module, directly or through
   others, includes the file's module back.
3. The driver's doors (DOORS) include no header of the analyses (analysis/ outside analysis/run/):
   they declare the analyses' types they name, so a front end that asks for a report through
   them compiles none of the analyses.

Prints each violation as FILE:LINE: what, and exits 1 when there is any; 0 and a one-line
summary otherwise. Usage: scripts/check-includes.py [ROOT] (default: the checkout).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Set, Tuple

# Folder -> the folders it may include directly (besides itself). Of src/analysis's rooms, the
# sections and the driver are layers above its computations; hta/ (HTA's analyses) and ranks/
# (the analyses across ranks) are rooms of the computations' own layer, checked for loops only.
LAYERS: Dict[str, List[str]] = {
    "trainprof": [],
    "base": ["trainprof"],
    "record": ["base"],
    "trace": ["base"],
    "report": ["base"],
    "memory": [],
    "snapshot": ["trace", "report", "memory"],
    "analysis": ["trace", "report", "snapshot"],
    "analysis/sections": ["analysis"],
    "analysis/run": ["analysis/sections"],
    "history": ["report"],
    "system": ["report", "trace"],
    "live": ["report", "system"],
    "session": ["record", "report", "trace", "system", "live"],
    "operators": ["session", "analysis/run"],
    "gpu": ["operators"],
    "cupti": ["gpu"],
    "torch": ["operators", "snapshot", "cupti"],
    "mcp": ["analysis/run", "history"],
    "cli": ["mcp", "torch", "cupti", "analysis/run", "history", "session"],
}

# Private headers of a module whose implementation spans several files: they are part of that
# module (its .cc includes them, and they include its header), not modules of their own.
PRIVATE_PARTS: Dict[str, str] = {
    "history/compare_parts": "history/compare",  # compare.cc's and gate.cc's shared pieces
    "snapshot/pickle_machine": "snapshot/pickle_reader",  # PickleReader::Machine, its pimpl
}

# The headers a front end (cli/, mcp/, the Python bindings, the torch Session) asks for a report
# through; the few front ends that handle rank summaries themselves include rank_summary.h.
DOORS: Set[str] = {"analysis/run/driver.h", "analysis/run/request.h", "analysis/run/options.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(header: str) -> str:
    """The layer of an include path: "analysis/sections/sections.h" -> "analysis/sections"."""
    parts = header.split("/")[:-1]
    while parts and "/".join(parts) not in LAYERS:
        parts.pop()
    return "/".join(parts)


def allowed_sets() -> Dict[str, Set[str]]:
    memo: Dict[str, Set[str]] = {}

    def reach(f: str) -> Set[str]:
        if f not in memo:
            memo[f] = {f}
            for d in LAYERS[f]:
                memo[f] |= reach(d)
        return memo[f]

    return {f: reach(f) for f in LAYERS}


def sources(root: str) -> List[Tuple[str, str]]:
    """(path relative to its include root, file path) of every .h and .cc under src/ and include/."""
    out = []
    for base in ("src", "include"):
        top = os.path.join(root, base)
        for dirpath, _, files in os.walk(top):
            for f in files:
                if f.endswith((".h", ".cc")):
                    path = os.path.join(dirpath, f)
                    out.append((os.path.relpath(path, top), path))
    return sorted(out)


def module(rel: str) -> str:
    m = rel.rsplit(".", 1)[0].removesuffix("_test")
    return PRIVATE_PARTS.get(m, m)


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    allowed = allowed_sets()
    known = {rel for rel, _ in sources(root)}
    edges: Dict[str, Set[str]] = {}
    where: Dict[Tuple[str, str], str] = {}
    problems: List[str] = []
    files = 0
    for rel, path in sources(root):
        files += 1
        mine = folder_of(rel)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in known:
                    continue  # a system or third-party header
                inc = m.group(1)
                theirs = folder_of(inc)
                if mine in allowed and theirs not in allowed[mine] and not rel.endswith("_test.cc"):
                    problems.append(f"{path}:{n}: {mine}/ includes {inc}, which is in {theirs}/, "
                                    f"not below {mine}/ in the layering")
                if rel in DOORS and theirs.startswith("analysis") and theirs != "analysis/run":
                    problems.append(f"{path}:{n}: the driver's door {rel} includes {inc}; "
                                    "declare the analyses' types it names instead")
                a, b = module(rel), module(inc)
                if a != b and not rel.endswith("_test.cc"):
                    edges.setdefault(a, set()).add(b)
                    where.setdefault((a, b), f"{path}:{n}")
    problems += loops(edges, where)
    for p in problems:
        print(p)
    if problems:
        print(f"check-includes: {len(problems)} violation(s) in {files} files", file=sys.stderr)
        return 1
    print(f"check-includes: {files} files, every include runs downhill, no loop")
    return 0


def loops(edges: Dict[str, Set[str]], where: Dict[Tuple[str, str], str]) -> List[str]:
    """One line per include that closes a loop between modules (Tarjan's components)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    comps: List[Set[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    out = []
    for comp in comps:
        names = " <-> ".join(sorted(comp))
        for a in sorted(comp):
            for b in sorted(edges.get(a, ())):
                if b in comp:
                    out.append(f"{where[(a, b)]}: include loop ({names}): {a} includes {b}")
    return out


if __name__ == "__main__":
    sys.exit(main())
