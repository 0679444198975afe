"""torch.distributed with 2 processes (gloo): each rank writes rank<N>/ and rank 0 the merged
report, as trainprof profile --nproc-per-node does."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import PYTHON, calls, load_report, python_env, table

torch = pytest.importorskip("torch", reason="torch not installed (Debian: python3-torch)")

RANK = """
import time, torch, torch.distributed as dist, trainprof
dist.init_process_group("gloo")
rank = dist.get_rank()
with trainprof.Session(name="ddp", overrides={"speed.warmup_batches": 1}) as s:
    s.batch_size = 8
    s.stage("train")
    for i in range(10):
        with trainprof.scope("run_training_batch", kind="loop"):
            time.sleep(0.008 if rank == 1 else 0.002)   # rank 1 is the straggler
        s.step()
    t = torch.ones(4)
    with trainprof.scope("[DDP].all_reduce_gradients", kind="communication"):
        dist.all_reduce(t)
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_ranks(code: str) -> List[Tuple[str, str]]:
    """Runs `code` as ranks 0 and 1 of a gloo world; each rank's (stdout, stderr), both exited 0."""
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = python_env()
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([PYTHON, "-c", code], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    return outs


def test_two_ranks_write_a_merged_report(tmp_path: Path) -> None:
    outs = run_two_ranks(RANK)
    [run_dir] = list((tmp_path / "runs").glob("*-ddp"))
    assert "Merged report of 2 ranks" in outs[0][0] and not outs[1][0]
    for rank in range(2):
        rank_report = load_report(str(run_dir / f"rank{rank}"))
        assert calls(rank_report)["run_training_batch"] == 10
    merged = load_report(str(run_dir))
    ranks = table(merged, "ranks", "rank_summary")["rows"]
    assert sorted(r["rank"] for r in ranks) == [0, 1]
    assert (run_dir / "rank_summary.csv").is_file() and (run_dir / "trace.json").is_file()
    findings = [f["text"] for s in merged["sections"] for f in s["findings"]]
    assert any("rank 1" in f for f in findings), findings


LIVE_RANK = """
import time, torch, torch.distributed as dist, trainprof
dist.init_process_group("gloo")
rank = dist.get_rank()
with trainprof.Session(name="ddp-live", overrides={"live.mode": "lines",
                                                   "live.interval_s": 0.1}) as s:
    s.batch_size = 8
    for i in range(60):
        with trainprof.scope("forward", kind="forward"):
            time.sleep(0.012 if rank == 1 else 0.004)   # rank 1's own work is longer
        t = torch.ones(4)
        with trainprof.scope("[DDP].all_reduce_gradients", kind="communication"):
            dist.all_reduce(t)                          # so rank 0 waits here for it
        s.step()
dist.destroy_process_group()
"""


def test_rank_zero_shows_the_world_live(tmp_path: Path) -> None:
    # The live view across torch.distributed ranks: the digests travel through the process
    # group's store; rank 0 prints the world with rank 1 late in the all-reduce (the culprit)
    # and itself waiting in it; rank 1 prints nothing of its own.
    outs = run_two_ranks(LIVE_RANK)
    world = [line for line in outs[0][1].splitlines() if "| world 2 of 2 ranks" in line]
    assert world, outs[0][1]
    assert "slowest: rank 1 " in world[-1] and "(late in collectives)" in world[-1], world[-1]
    assert "rank 0 " in world[-1] and "(waiting in collectives)" in world[-1], world[-1]
    assert "trainprof live:" not in outs[1][1]
