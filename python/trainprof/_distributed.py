"""Multi-rank runs through torch.distributed: every rank writes ``<run folder>/rank<N>/``, and
rank 0 writes the merged report (per-rank table, the slowest rank, one trace on rank 0's clock)
with the same C++ merge that ``trainprof profile --nproc-per-node`` uses. The reports travel
through torch.distributed's object collectives, so ranks on other nodes need no shared folder.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from trainprof import _core

_CLOCK_ROUNDS = 8
CLOCK_METHOD = (f"clock readings as every rank leaves {_CLOCK_ROUNDS} torch.distributed barriers: "
                "the median difference, error half their spread")


def _dist() -> Any:
    # Only when the program has imported torch.distributed itself: importing torch costs seconds.
    if "torch.distributed" not in sys.modules:
        return None
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return None
    return dist


def _launcher() -> str:
    if "TORCHELASTIC_RUN_ID" in os.environ:
        return "torchrun"
    if "SLURM_PROCID" in os.environ:
        return "slurm"
    return "torch.distributed"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


class Ranks:
    """This process's part of a multi-rank run."""

    def __init__(self, dist: Any, merged_dir: str, name: str, csv: bool, trace: bool,
                 exporters: Optional[Dict[str, str]] = None) -> None:
        self.dist = dist
        self.rank: int = dist.get_rank()
        self.world_size: int = dist.get_world_size()
        self.merged_dir = merged_dir
        self.rank_dir = os.path.join(merged_dir, f"rank{self.rank}")
        self.name = name
        self.csv = csv
        self.trace = trace
        # _core.exporter_keys() (output.mlflow, ...) -> value: the merged run's only
        self.exporters = exporters or {}
        self.live = False  # the live view is on: its digests travel while the run trains
        self.live_interval_s = 1.0
        self.clock = self._clock_offset()

    def _clock_offset(self) -> Tuple[int, int]:
        """(offset, error) ns with rank 0's steady clock = this rank's + offset: each rank reads
        its clock as it leaves the same barriers; the offset is the median difference to rank 0
        and the error half the spread of the differences."""
        readings = []
        for _ in range(_CLOCK_ROUNDS):
            self.dist.barrier()
            readings.append(_core.steady_ns())
        everyone: List[Any] = [None] * self.world_size
        self.dist.all_gather_object(everyone, readings)
        diffs = sorted(a - b for a, b in zip(everyone[0], readings))
        return diffs[len(diffs) // 2], max(1, (diffs[-1] - diffs[0]) // 2)

    def start_live(self, interval_s: float) -> Callable[[], None]:
        """Carries the live view's digests over torch.distributed's store while the run trains:
        every rank sets ``trainprof/live/<rank>`` to its latest; rank 0 reads every rank's and
        hands them to its view. Returns the call that stops it."""
        box = _core.LiveMailbox(self.rank, self.world_size)
        _core.set_live_channel(box)
        store = self.dist.distributed_c10d._get_default_store()
        stop = threading.Event()

        def key(r: int) -> str:
            return f"trainprof/live/{r}"

        # Every key exists before anyone reads one (the store's get waits for a missing key, and
        # torch's Python store has no check), so rank 0 never waits on a rank not started yet.
        store.set(key(self.rank), "")
        self.dist.barrier()

        def exchange() -> None:
            while not stop.wait(interval_s):
                try:
                    mine = box.latest()
                    if mine:
                        store.set(key(self.rank), mine)
                    if self.rank == 0:
                        box.set_gathered([store.get(key(r)).decode()
                                          for r in range(self.world_size)])
                except Exception:  # noqa: BLE001 - the store is gone: the view goes without
                    return

        thread = threading.Thread(target=exchange, name="trainprof-live-ranks", daemon=True)
        thread.start()

        def stop_live() -> None:
            stop.set()
            thread.join()
            _core.set_live_channel(None)
        return stop_live

    def finish(self, core: Any, summary: str, db: str, status: str = "ok") -> Any:
        """Sends this rank's reports to rank 0; rank 0 merges and prints them. Returns the merged
        Report on rank 0 and this rank's own elsewhere."""
        from trainprof._session import Report, _record

        mine = (
            self.rank,
            status,
            self.clock[0],
            self.clock[1],
            _read(os.path.join(self.rank_dir, "report.json")),
            _read(os.path.join(self.rank_dir, "trace.json")) if self.trace else "",
        )
        gathered: Optional[List[Any]] = [None] * self.world_size if self.rank == 0 else None
        self.dist.gather_object(mine, gathered, dst=0)
        if self.rank != 0:
            return Report(self.rank_dir, summary)
        got = [g for g in gathered or [] if g is not None and g[4]]
        have = {g[0] for g in got}
        missing = [(r, "its report.json could not be read or was not sent")
                   for r in range(self.world_size) if r not in have]
        merged = _core.merge_ranks(
            self.world_size, _launcher(), self.name, self.merged_dir, CLOCK_METHOD, got, missing,
            self.csv, self.trace, self.exporters,
        )
        if core.print:
            sys.stdout.write(summary)
            sys.stdout.write("\n" + merged)
            sys.stdout.write(
                f"\nMerged report of {self.world_size} ranks written to {self.merged_dir}/ "
                f"(per-rank folders rank0/ ... rank{self.world_size - 1}/)\n"
            )
            sys.stdout.flush()
        return Report(self.merged_dir, merged, _record(self.merged_dir, db, core.print))


def join(config: Optional[str], sets: List[str]) -> Optional[Ranks]:
    """Ranks when torch.distributed runs several; rank 0 creates the run folder and every rank
    learns it. None for a single process."""
    dist = _dist()
    if dist is None:
        return None
    out = _core.check_config(config, sets)
    folder: List[Any] = [None]
    if dist.get_rank() == 0:
        try:
            folder[0] = out["output.run_dir"] or _core.create_run_dir(
                out["output.dir"], out["output.name"])
        except _core.TrainprofError as e:
            folder[0] = e  # every rank raises it, not only rank 0
    dist.broadcast_object_list(folder, src=0)
    if isinstance(folder[0], BaseException):
        raise _core.TrainprofError(str(folder[0]))
    exporters = {k: out[k] for k in _core.exporter_keys()}
    ranks = Ranks(dist, folder[0], out["output.name"], out["output.csv"], out["output.trace"],
                  exporters)
    ranks.live = out["live.mode"] != "off" or out["live.port"] != 0
    ranks.live_interval_s = out["live.interval_s"]
    return ranks
