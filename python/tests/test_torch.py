"""trainprof.torch on a real PyTorch loop: the operator table against torch's own key_averages(),
the model summary and the activation memory with exact answers worked out from the layers, the
lines for what this torch cannot do, and the hooks gone after the summary batch."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from collections import OrderedDict
from typing import Any, Dict, List, Set

import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch (Debian: python3-torch)")
nn = torch.nn

import trainprof  # noqa: E402
import trainprof.torch  # noqa: E402
from conftest import ROOT, load_report, section, table  # noqa: E402

QUIET = {"output.print": False, "speed.warmup_batches": 0}
F32 = 4  # bytes per float32


def load_cnn() -> Any:
    """The PyTorch profiler tutorial's CNN with one input channel, from examples/python."""
    spec = importlib.util.spec_from_file_location(
        "fashion_mnist", ROOT / "examples" / "python" / "fashion_mnist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Cnn


Cnn = load_cnn()


def train(model: Any, overrides: Dict[str, Any], steps: int, shape: List[int]) -> Any:
    torch.manual_seed(0)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01)
    with trainprof.Session(run_dir="run", db="off", overrides={**QUIET, **overrides}) as s:
        prof = trainprof.torch.attach(s, model)
        s.stage("train")
        for _ in range(steps):
            loss = model(torch.randn(*shape)).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            s.step()
    return s, prof


def rows_by(report: Dict[str, Any], sid: str, tid: str, key: str) -> Dict[str, Dict[str, Any]]:
    return {r[key]: r for r in table(report, sid, tid)["rows"]}


def diagnostics(report: Dict[str, Any]) -> Dict[str, str]:
    return {d["name"]: d["message"] for d in report["diagnostics"]}


def _began_inside(e: Any, open_call: Any) -> bool:
    begin, end = e.time_range.start, e.time_range.end
    return begin < open_call.time_range.end or begin == end == open_call.time_range.end


def _nested_as_timed(events: Any) -> Set[str]:
    """The names whose every call has, as torch's cpu_children, the calls nested in it by time
    on its thread (as the C++ core nests them). With microsecond times torch can make a callee
    its caller's sibling, and its self figures then subtract it twice."""
    order = sorted(range(len(events)), key=lambda i: (events[i].thread,
                   events[i].time_range.start, -events[i].time_range.end, i))
    kids: Dict[int, Set[int]] = {i: set() for i in range(len(events))}
    stack: List[int] = []
    for i in order:
        e = events[i]
        # Close the outermost open call it is not inside, and every call within it.
        closed = next((k for k, o in enumerate(stack) if events[o].thread != e.thread
                       or not _began_inside(e, events[o])), len(stack))
        del stack[closed:]
        if stack:
            kids[stack[-1]].add(i)
        stack.append(i)
    index = {id(e): i for i, e in enumerate(events)}
    bad = {events[i].name for i in kids
           if {index[id(c)] for c in events[i].cpu_children} != kids[i]}
    return {e.name for e in events} - bad


def test_operator_table_matches_torchs_key_averages() -> None:
    s, prof = train(Cnn(), {"memory.enabled": True, "memory.warmup": 1, "memory.steps": 2}, 4,
                    [4, 1, 28, 28])
    report = load_report(s.report.run_dir)
    ours = rows_by(report, "operators", "operators", "name")
    theirs = {e.key: e for e in prof.profiler.key_averages()}
    assert set(ours) == set(theirs)
    timed = _nested_as_timed(prof.profiler.events())
    assert len(timed & set(theirs)) >= 10  # about half; which half varies from run to run
    for name, e in theirs.items():
        row = ours[name]
        assert row["calls"] == e.count, name
        # torch's times are whole µs; a callee can end 1 µs after its caller, which then ends
        # with it here (or begins after it): 1 µs a call, and the ns of the re-timing.
        slack = 1.01e-6 * e.count
        assert row["cpu_total_s"] == pytest.approx(e.cpu_time_total * 1e-6, abs=slack), name
        assert row["cpu_mem"] == e.cpu_memory_usage, name
        if name in timed:
            assert row["self_cpu_s"] == pytest.approx(e.self_cpu_time_total * 1e-6,
                                                      abs=slack), name
            assert row["self_cpu_mem"] == e.self_cpu_memory_usage, name
    assert ours["ProfilerStep*"]["calls"] == 2
    # The CNN's relu and max_pool are functional calls in its own forward.
    saved = rows_by(report, "activation_memory", "activation_modules", "module")
    assert "(Cnn.forward itself)" in saved and "conv1" in saved
    assert "aten::conv2d" in ours and "aten::addmm" in ours
    # The trace is in the run folder, gzipped, and holds the recorded steps.
    path = os.path.join(s.report.run_dir, trainprof.torch.TRACE_NAME)
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    events = data if isinstance(data, list) else data["traceEvents"]
    assert sum(1 for e in events if e.get("name", "").startswith("ProfilerStep")) == 2


def test_operator_table_grouped_by_input_shape() -> None:
    s, _ = train(nn.Linear(8, 3), {"memory.enabled": True, "memory.warmup": 0, "memory.steps": 1,
                                   "memory.record_shapes": True,
                                   "memory.group_by_input_shape": True}, 2, [5, 8])
    rows = table(load_report(s.report.run_dir), "operators", "operators")["rows"]
    addmm = [r for r in rows if r["name"] == "aten::addmm"]
    assert [r["input_shapes"] for r in addmm] == ["[[3], [5, 8], [8, 3], [], []]"]


def test_model_summary_of_the_tutorial_cnn() -> None:
    s, _ = train(Cnn(), {"model_summary.enabled": True}, 2, [4, 1, 28, 28])
    report = load_report(s.report.run_dir)
    rows = rows_by(report, "model_summary", "model_summary", "name")
    b = 4
    expect = {  # name: (output shape, params, mult-adds by torchinfo's rule)
        "conv1": ([b, 6, 24, 24], 6 * 25 + 6, (6 * 25 + 6) * b * 24 * 24),
        "conv2": ([b, 16, 8, 8], 16 * 6 * 25 + 16, (16 * 6 * 25 + 16) * b * 8 * 8),
        "fc1": ([b, 120], 256 * 120 + 120, (256 * 120 + 120) * b),
        "fc2": ([b, 84], 120 * 84 + 84, (120 * 84 + 84) * b),
        "fc3": ([b, 10], 84 * 10 + 10, (84 * 10 + 10) * b),
    }
    for name, (shape, params, mult_adds) in expect.items():
        assert rows[name]["output_shape"] == str(shape), name
        assert rows[name]["params"] == params, name
        assert rows[name]["mult_adds"] == mult_adds, name
        assert rows[name]["trainable"] == "True"
    assert rows["conv1"]["input_shape"] == str([b, 1, 28, 28])
    assert rows["fc1"]["input_shape"] == str([b, 256])
    m = section(report, "model_summary")["metrics"]
    total = sum(p for _, p, _ in expect.values())
    assert m["total_params"]["value"] == total == 44426
    assert m["total_mult_adds"]["value"] == sum(x for _, _, x in expect.values())
    assert m["input_size_bytes"]["value"] == b * 28 * 28 * F32
    out_elems = b * (6 * 24 * 24 + 16 * 8 * 8 + 120 + 84 + 10)
    assert m["forward_backward_pass_size_bytes"]["value"] == 2 * out_elems * F32
    assert m["params_size_bytes"]["value"] == total * F32
    text = open(os.path.join(s.report.run_dir, "model_summary.txt"), encoding="utf-8").read()
    assert "├─Conv2d: 1-1" in text and "└─Linear: 1-5" in text


def test_model_summary_shows_parameterless_modules_and_a_frozen_layer() -> None:
    model = nn.Sequential(OrderedDict(
        conv=nn.Conv2d(1, 2, 3), act=nn.ReLU(), pool=nn.MaxPool2d(2), flat=nn.Flatten(),
        head=nn.Sequential(nn.Dropout(0.5), nn.Linear(2 * 13 * 13, 5))))
    model.conv.requires_grad_(False)
    s, _ = train(model, {"model_summary.enabled": True}, 1, [3, 1, 28, 28])
    report = load_report(s.report.run_dir)
    rows = rows_by(report, "model_summary", "model_summary", "name")
    assert rows["conv"]["trainable"] == "False"
    assert rows["conv"]["mult_adds"] == (2 * 9 + 2) * 3 * 26 * 26
    assert rows["act"]["output_shape"] == str([3, 2, 26, 26]) and rows["act"]["params"] is None
    assert rows["pool"]["output_shape"] == str([3, 2, 13, 13])
    assert rows["flat"]["output_shape"] == str([3, 338])
    assert rows["head.0"]["layer"].endswith("Dropout: 2-1")
    assert rows["head.1"]["layer"].endswith("Linear: 2-2")
    assert rows["head.1"]["mult_adds"] == (338 * 5 + 5) * 3
    m = section(report, "model_summary")["metrics"]
    assert m["total_params"]["value"] == 20 + 1695
    assert m["trainable_params"]["value"] == 1695
    assert m["non_trainable_params"]["value"] == 20


def test_summary_hooks_are_removed_after_the_summary_batch() -> None:
    model = Cnn()
    with trainprof.Session(run_dir="run", db="off",
                           overrides={**QUIET, "model_summary.enabled": True}) as s:
        trainprof.torch.attach(s, model)
        hooked = sum(len(m._forward_hooks) for m in model.modules())
        assert hooked > 0
        model(torch.randn(2, 1, 28, 28))
        assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks)
                   for m in model.modules()) == 0
        s.step()


def test_activation_memory_is_exact_on_a_tiny_model() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 26 * 26, 10))
    # memory.steps = 2: the operator window is steps 0-1, activations are counted in steps 2-3.
    s, _ = train(model, {"memory.enabled": True, "memory.warmup": 0, "memory.steps": 2}, 5,
                 [8, 1, 28, 28])
    report = load_report(s.report.run_dir)
    steps = table(report, "activation_memory", "activation_steps")["rows"]
    assert [r["step"] for r in steps] == [2, 3]
    # Saved for backward: the conv's input x, and ReLU's output (Flatten's output and the
    # Linear's input are views of it; the weights are parameters).
    x_bytes = 8 * 1 * 28 * 28 * F32
    relu_bytes = 8 * 4 * 26 * 26 * F32
    for r in steps:
        assert r["bytes"] == x_bytes + relu_bytes
        assert r["tensors"] == 2
    modules = rows_by(report, "activation_memory", "activation_modules", "module")
    assert set(modules) == {"0", "1"}
    assert modules["0"]["max_bytes"] == x_bytes
    assert modules["1"]["max_bytes"] == relu_bytes


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x: Any) -> Any:
        return torch.tanh(self.fc(x)) + x  # tanh saves its output: the block's own


class Gpt(nn.Module):
    """Blocks run from an nn.ModuleList in a Python loop, as GPT-style models do."""

    def __init__(self, width: int, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x: Any) -> Any:
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def test_activations_go_to_the_innermost_module_even_from_a_module_list() -> None:
    # Issue 69: blocks called from the model's forward in a loop are still its children.
    s, _ = train(Gpt(16, 3), {"memory.enabled": True, "memory.warmup": 0, "memory.steps": 1},
                 4, [8, 16])
    report = load_report(s.report.run_dir)
    modules = rows_by(report, "activation_memory", "activation_modules", "module")
    row_bytes = 8 * 16 * F32
    # Each block's Linear saves its input, each block's tanh its output; the head its input.
    for i in range(3):
        assert modules[f"blocks.{i}.fc"]["max_bytes"] == row_bytes
        assert modules[f"blocks.{i}"]["max_bytes"] == row_bytes
    assert modules["head"]["max_bytes"] == row_bytes
    assert "(Gpt.forward itself)" not in modules


@pytest.mark.skipif(torch.cuda.is_available(), reason="the lines of a CPU-only torch")
def test_what_a_cpu_only_torch_lacks_is_one_line_each() -> None:
    s, _ = train(nn.Linear(4, 2), {"memory.enabled": True, "memory.warmup": 0, "memory.steps": 1,
                                   "snapshot.enabled": True}, 2, [3, 4])
    report = load_report(s.report.run_dir)
    lines = diagnostics(report)
    assert "torch.cuda.is_available() is False" in lines["cuda_memory_without_cuda"]
    assert "no memory snapshot was written" in lines["snapshot_needs_cuda"]
    if not torch.autograd.kineto_available():
        assert "legacy autograd profiler" in lines["torch_profiler_legacy"]
    for sid in ("cuda_memory", "snapshot"):
        assert sid not in {x["id"] for x in report["sections"]}
    assert not os.path.exists(os.path.join(s.report.run_dir, "memory_snapshot.pickle"))
    # Training went on: the operator table is there.
    assert table(report, "operators", "operators")["rows"]


def test_summary_without_a_model_and_a_late_attach_say_so() -> None:
    with trainprof.Session(run_dir="run", db="off", overrides={
            **QUIET, "model_summary.enabled": True, "memory.enabled": True,
            "memory.warmup": 0, "memory.steps": 1}) as s:
        for _ in range(2):
            s.step()
        trainprof.torch.attach(s)
        s.step()
    lines = diagnostics(load_report(s.report.run_dir))
    assert "was given no model" in lines["model_summary_not_taken"]
    assert "after the operator window" in lines["memory_schedule_passed"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda)")
def test_on_a_gpu_kernel_times_cuda_memory_and_the_snapshot() -> None:
    model = Cnn().cuda()
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with trainprof.Session(run_dir="run", db="off", overrides={
            **QUIET, "memory.enabled": True, "memory.warmup": 1, "memory.steps": 2,
            "snapshot.enabled": True, "snapshot.warmup": 1, "snapshot.steps": 2}) as s:
        trainprof.torch.attach(s, model)
        s.stage("train")
        for _ in range(5):
            loss = model(torch.randn(64, 1, 28, 28, device="cuda")).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            s.step()
    report = load_report(s.report.run_dir)
    ops = rows_by(report, "operators", "operators", "name")
    assert any(r.get("self_cuda_s", 0) > 0 for r in ops.values())
    # One operator table, torch's (with its ProfilerStep* row), and the trace's memory view.
    assert ops["ProfilerStep*"]["calls"] == 2
    ids = {x["id"] for x in report["sections"]}
    assert "operator_view" not in ids and "memory" in ids
    assert table(report, "cuda_memory", "cuda_memory")["rows"]
    assert section(report, "gpu")
    devices = table(report, "snapshot", "snapshot_devices")["rows"]
    assert devices[0]["device"] == "cuda:0" and devices[0]["peak_allocated_bytes"] > 0
    assert os.path.exists(os.path.join(s.report.run_dir, "memory_snapshot.pickle"))
    # The history covers steps 1 and 2, each marked by its record_function (torch >= 2.4 keeps
    # them as annotations), and the stacks live at the peak are Python stacks.
    steps = [r["step"] for r in table(report, "snapshot_steps", "snapshot_steps")["rows"]]
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4):
        assert steps == ["ProfilerStep#1", "ProfilerStep#2"]
    peak = table(report, "snapshot_peak", "snapshot_peak_stacks")["rows"]
    assert any(".py:" in r["stack"] for r in peak), peak


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda)")
def test_on_a_gpu_an_out_of_memory_error_leaves_its_snapshot_in_the_report() -> None:
    free, _ = torch.cuda.mem_get_info()
    with trainprof.Session(run_dir="run", db="off", overrides={
            **QUIET, "snapshot.enabled": True, "snapshot.warmup": 0, "snapshot.steps": 3}) as s:
        trainprof.torch.attach(s)
        keep = [torch.empty(64 << 20, dtype=torch.uint8, device="cuda") for _ in range(4)]
        s.step()
        with pytest.raises(torch.cuda.OutOfMemoryError):
            torch.empty(free * 2, dtype=torch.uint8, device="cuda")
        s.step()
        del keep
    report = load_report(s.report.run_dir)
    assert os.path.exists(os.path.join(s.report.run_dir, "memory_snapshot_oom.pickle"))
    first = section(report, "snapshot")["findings"][0]
    assert first["severity"] == "error" and "ran out of memory asking for" in first["text"]
    ooms = table(report, "snapshot_oom", "snapshot_ooms")["rows"]
    assert ooms and ooms[0]["requested_bytes"] >= free * 2


def test_a_cuda_trace_adds_analyzes_sections_and_a_cpu_trace_says_why_not() -> None:
    from trainprof import _core

    for trace, gpu_trace in ((ROOT / "fuzz" / "corpus" / "kineto" / "kineto_small.json", True),
                             (ROOT / "fuzz" / "corpus" / "kineto" / "escapes.json", False)):
        s = trainprof.Session(run_dir=f"run_{gpu_trace}", db="off", overrides=QUIET)
        _core.TorchCollector(s._core).set_trace(str(trace))
        s.step()
        s.finish()
        report = load_report(s.report.run_dir)
        ids = {x["id"]: x["title"] for x in report["sections"]}
        if gpu_trace:
            assert ids["gpu"].startswith("torch.profiler trace: GPU summary")
            assert "overview" in ids and "hta" in ids and "recommendations" not in ids
            # One operator table: torch's, with its ProfilerStep* row; not analyze's own view.
            assert "operator_view" not in ids
            ops = rows_by(report, "operators", "operators", "name")
            assert ops["ProfilerStep*"]["calls"] == 1 and "cudaLaunchKernel" in ops
        else:
            assert "gpu" not in ids
            assert "no GPU activity" in diagnostics(report)["torch_trace_without_gpu"]


def test_the_trace_attach_writes_on_this_torch_opens_in_analyze(tmp_path: Any) -> None:
    """On torch without Kineto (Debian's 1.13) the trace is the legacy export, a bare array of
    operators; trainprof analyze reads its ProfilerSteps."""
    import subprocess

    from conftest import cli

    s, _ = train(nn.Linear(16, 16), {"memory.enabled": True, "memory.warmup": 1,
                                     "memory.steps": 3}, 6, [4, 16])
    trace = os.path.join(s.report.run_dir, "torch_trace.pt.trace.json.gz")
    assert os.path.exists(trace)
    done = subprocess.run([cli(), "analyze", trace, "--format", "json", "--db", "off",
                           "--run-dir", str(tmp_path / "a"), "--progress", "off"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    steps = section(report, "overview")["metrics"]["steps"]["value"]
    assert steps >= 3
