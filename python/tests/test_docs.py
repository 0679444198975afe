"""The docs that must stay true by construction: docs/performance.md keeps current figures only
(each pass's history goes to docs/perf-log/), so it never again grows a section per issue."""

from __future__ import annotations

import re

from conftest import ROOT

PERFORMANCE = ROOT / "docs" / "performance.md"


def test_performance_md_has_no_per_issue_sections() -> None:
    headings = [line for line in PERFORMANCE.read_text().splitlines() if line.startswith("#")]
    per_issue = [h for h in headings if re.search(r"\bissue \d+\b|\bpass\b", h, re.I)]
    assert not per_issue, (
        "docs/performance.md holds current figures only; move these sections' history to "
        f"docs/perf-log/ and keep the newest figure in its area's table: {per_issue}")


def test_performance_md_links_its_history() -> None:
    text = PERFORMANCE.read_text()
    for link in re.findall(r"\]\((perf-log/[^)#]+)", text):
        assert (PERFORMANCE.parent / link).exists(), f"docs/performance.md links {link}"
