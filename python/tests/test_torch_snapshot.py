"""The Session's allocator snapshot (trainprof.torch, snapshot.*): file names per rank, a ring
buffer that keeps whole steps, the out-of-memory snapshot, and each file analysed into the run's
report by the C++ snapshot reader.

Without a GPU, torch.cuda's snapshot API is replaced by a recording stand-in that dumps a
generated snapshot with known answers (bench/make_snapshot.py), so the recorder's schedule and the
report are checked here; the real API is exercised by test_torch.py's GPU test."""

from __future__ import annotations

import math
import os
import pickle
import sys
from typing import Any, Dict, List

import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch (Debian: python3-torch)")

import trainprof  # noqa: E402
import trainprof.torch  # noqa: E402
from trainprof import _core  # noqa: E402
from trainprof._torch_snapshot import file_name, max_entries_for, world  # noqa: E402
from conftest import ROOT, load_report, section, table  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import make_snapshot  # noqa: E402

MIB = 1 << 20
QUIET = {"output.print": False, "speed.warmup_batches": 0}
ALLOCS_PER_STEP = 4000


def test_file_names_say_the_rank_only_when_there_are_several() -> None:
    assert file_name(0, 1) == "memory_snapshot.pickle"
    assert file_name(3, 8) == "memory_snapshot_rank3.pickle"
    assert file_name(0, 1, oom=True) == "memory_snapshot_oom.pickle"
    assert file_name(5, 8, oom=True) == "memory_snapshot_oom_rank5.pickle"


def test_the_rank_comes_from_the_launcher_without_torch_distributed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert world() == (2, 4)
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    assert world() == (0, 1)


def test_max_entries_holds_the_recorded_steps_and_one_more() -> None:
    assert max_entries_for(None, 4) == 1_000_000  # nothing measured: torchtitan's figure
    assert max_entries_for(20_000, 4) == math.ceil(5 * 20_000 * 3 * 1.25)
    assert max_entries_for(10, 4) == 10_000  # never below the floor


class FakeCuda:
    """torch.cuda's snapshot API as the recorder calls it: every call is recorded, the
    allocation counter grows by ALLOCS_PER_STEP per step, and a dump writes a generated
    snapshot."""

    def __init__(self, snapshot: Dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.history: List[Dict[str, Any]] = []
        self.dumps: List[str] = []
        self.allocations = 0
        self.observer: Any = None

    def record_memory_history(self, enabled: Any = "all", context: Any = "all",
                              stacks: str = "all", max_entries: int = sys.maxsize,
                              device: Any = None) -> None:
        self.history.append({"enabled": enabled, "context": context, "stacks": stacks,
                             "max_entries": max_entries})

    def dump_snapshot(self, path: str) -> None:
        self.dumps.append(path)
        with open(path, "wb") as f:
            pickle.dump(self.snapshot, f, protocol=4)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda.memory, "_record_memory_history",
                            self.record_memory_history, raising=False)
        monkeypatch.setattr(torch.cuda.memory, "_dump_snapshot", self.dump_snapshot,
                            raising=False)
        monkeypatch.setattr(torch.cuda, "memory_stats",
                            lambda: {"allocation.all.allocated": self.allocations})
        monkeypatch.setattr(torch._C, "_cuda_attach_out_of_memory_observer",
                            self.attach, raising=False)

    def attach(self, observer: Any) -> None:
        self.observer = observer


def generated() -> Any:
    return make_snapshot.generate(steps=4, layers=3, act=4 * MIB, grad=2 * MIB, tmp=MIB,
                                  leak=512 * 1024)


def run(fake: FakeCuda, overrides: Dict[str, Any], steps: int, oom_at: int = -1) -> Any:
    with trainprof.Session(run_dir="run", db="off", overrides={
            **QUIET, "snapshot.enabled": True, **overrides}) as s:
        trainprof.torch.attach(s)
        for k in range(steps):
            fake.allocations += ALLOCS_PER_STEP
            if k == oom_at:
                fake.observer(0, 8 * MIB, 10 * MIB, 1 * MIB)
            s.step()
    return s, load_report(s.report.run_dir)


def devices(report: Dict[str, Any]) -> Dict[str, Any]:
    return table(report, "snapshot", "snapshot_devices")["rows"][0]


def diagnostics(report: Dict[str, Any]) -> Dict[str, str]:
    return {d["name"]: d["message"] for d in report["diagnostics"]}


def test_history_of_the_window_is_dumped_and_analysed_into_the_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    snap, answers = generated()
    fake = FakeCuda(snap)
    fake.install(monkeypatch)
    s, report = run(fake, {"snapshot.warmup": 2, "snapshot.steps": 2}, 6)
    entries = math.ceil(3 * ALLOCS_PER_STEP * 3 * 1.25)  # 2 steps and one more, measured
    assert fake.history == [
        {"enabled": "all", "context": "all", "stacks": "python", "max_entries": entries},
        {"enabled": None, "context": "all", "stacks": "all", "max_entries": sys.maxsize}]
    path = os.path.join(s.report.run_dir, "memory_snapshot.pickle")
    assert fake.dumps == [path]
    assert f"max_entries {entries} (sized from {ALLOCS_PER_STEP} allocations" in diagnostics(
        report)["snapshot_history"]
    row = devices(report)
    assert row["peak_allocated_bytes"] == answers["peak_allocated"]
    assert row["end_allocated_bytes"] == answers["end_allocated"]
    assert "drag" in " ".join(section(report, "snapshot")["notes"])


def test_stacks_and_max_entries_as_set(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCuda(generated()[0])
    fake.install(monkeypatch)
    run(fake, {"snapshot.warmup": 0, "snapshot.steps": 1, "snapshot.stacks": "all",
               "snapshot.max_entries": 12345}, 3)
    assert fake.history[0]["stacks"] == "all"
    assert fake.history[0]["max_entries"] == 12345


def test_recording_from_step_0_uses_the_default_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCuda(generated()[0])
    fake.install(monkeypatch)
    _, report = run(fake, {"snapshot.warmup": 0, "snapshot.steps": 2}, 3)
    assert fake.history[0]["max_entries"] == 1_000_000
    assert "max_entries 1000000" in diagnostics(report)["snapshot_history"]


def test_an_oom_writes_its_snapshot_which_the_report_analyses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    snap, answers = generated()
    fake = FakeCuda(snap)
    fake.install(monkeypatch)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    s, report = run(fake, {"snapshot.warmup": 0, "snapshot.steps": 4}, 6, oom_at=1)
    oom_path = os.path.join(s.report.run_dir, "memory_snapshot_oom_rank1.pickle")
    history = os.path.join(s.report.run_dir, "memory_snapshot_rank1.pickle")
    assert fake.dumps == [oom_path, history]
    overview = section(report, "snapshot")
    first = overview["findings"][0]
    assert first["severity"] == "error"
    assert first["text"].startswith("cuda:0 ran out of memory asking for 8.00 MiB: the caching allocator held 10.0 MiB and the driver had 1.00 MiB free")
    assert oom_path in first["text"]
    assert any(history in n for n in overview["notes"])
    oom = table(report, "snapshot_oom", "snapshot_ooms")["rows"][0]
    assert oom["requested_bytes"] == answers["oom_requested"]


def test_no_oom_snapshot_when_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCuda(generated()[0])
    fake.install(monkeypatch)
    run(fake, {"snapshot.oom": False, "snapshot.warmup": 0, "snapshot.steps": 1}, 2)
    assert fake.observer is None


def test_a_snapshot_that_does_not_read_back_is_one_diagnostic(tmp_path: Any) -> None:
    bad = tmp_path / "memory_snapshot.pickle"
    bad.write_bytes(b"\x80\x04not a snapshot")
    s = trainprof.Session(run_dir="run", db="off", overrides=QUIET)
    _core.TorchCollector(s._core).add_snapshot_file(str(bad))
    s.step()
    s.finish()
    report = load_report(s.report.run_dir)
    assert str(bad) in diagnostics(report)["snapshot_unreadable"]
    assert "snapshot" not in {x["id"] for x in report["sections"]}
