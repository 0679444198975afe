"""HTA's shortened kernel and operator names, for trainprof.hta's tables and its critical path
(one module below both, so neither imports the other)."""

from __future__ import annotations

from typing import List


def _shorten(name: str) -> str:
    """A kernel or operator name without its return type, template and call arguments, as HTA's
    shorten_name gives it ("void at::native::(anonymous namespace)::f<4>(int)" ->
    "at::native::::f"); copies and sets, and names with nothing to cut, unchanged. An
    unmatched closing bracket drops what came before it, as HTA's does."""
    import re
    if re.match(r"(hip)?Memcpy|(hip)?Memset|dma", name) or ("<" not in name and "(" not in name):
        return name
    kept: List[str] = []
    for ch in name.replace("->", ""):
        opener = {">": "<", ")": "("}.get(ch)
        if opener is None:
            kept.append(ch)
            continue
        cut = len(kept) - 1
        while cut >= 0 and kept[cut] != opener:
            cut -= 1
        del kept[max(cut, 0):]
    return "".join(kept).split(" ")[-1]
