"""Memory by role in the training loop against analytic truth: a GPT-style model trained with
AdamW on the CPU holds 4·P bytes of parameters, 4·P of gradients and 8·P of AdamW state (plus a
4-byte step counter per parameter tensor), and its activations are the storages autograd saves,
which the test counts itself on a forward of its own."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch (Debian: python3-torch)")
nn = torch.nn

import trainprof  # noqa: E402
import trainprof.torch  # noqa: E402
from conftest import load_report, section, table  # noqa: E402

VOCAB, D, BLOCKS, T, BATCH = 512, 256, 4, 64, 8
WINDOW = {"output.print": False, "speed.warmup_batches": 0, "memory.enabled": True,
          "memory.warmup": 0, "memory.steps": 1}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x: Any) -> Any:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx: Any) -> Any:
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def batch() -> Any:
    return torch.randint(0, VOCAB, (BATCH, T))


def loss_of(model: Any, idx: Any) -> Any:
    return nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())


def fit(model: Any, opt: Optional[Any], set_to_none: bool, steps: int = 2,
        attach_optimizer: bool = True) -> Dict[str, Any]:
    with trainprof.Session(run_dir="run", db="off", overrides=WINDOW) as s:
        trainprof.torch.attach(s, model, optimizer=opt if attach_optimizer else None)
        s.stage("train")
        for _ in range(steps):
            loss_of(model, batch()).backward()
            opt.step()
            opt.zero_grad(set_to_none=set_to_none)
            s.step()
    return load_report(s.report.run_dir)


def saved_bytes(model: Any) -> int:
    """The storages one forward saves for backward, parameters excluded, each once."""
    storage = lambda t: getattr(t, "untyped_storage", t.storage)()  # noqa: E731 (torch 1.13)
    params = {storage(p).data_ptr() for p in model.parameters()}
    seen: Dict[int, int] = {}

    def pack(t: Any) -> Any:
        s = storage(t)
        if s.data_ptr() not in params:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_of(model, batch())
    return sum(seen.values())


def samples(report: Dict[str, Any], at: str) -> List[Dict[str, Any]]:
    return [r for r in table(report, "memory_by_role", "role_samples")["rows"] if r["at"] == at]


def metric(report: Dict[str, Any], key: str) -> Any:
    return section(report, "memory_by_role")["metrics"][key]["value"]


def test_adamw_roles_are_the_analytic_bytes() -> None:
    torch.manual_seed(0)
    model = Gpt()
    P = sum(p.numel() for p in model.parameters())
    tensors = len(list(model.parameters()))
    expected_activations = saved_bytes(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    report = fit(model, opt, set_to_none=True)
    assert metric(report, "parameter_bytes") == 4 * P
    assert metric(report, "gradient_bytes") == 4 * P
    assert metric(report, "optimizer_state_bytes") == pytest.approx(8 * P + 4 * tensors, rel=0.01)
    assert metric(report, "activation_bytes") == pytest.approx(expected_activations, rel=0.05)
    assert metric(report, "input_bytes") == BATCH * T * 8  # int64 token ids
    forward = samples(report, "end of forward")
    # The roles' window follows the operator window (step 0), as the activations' does.
    assert [r["step"] for r in forward] == [1]
    # set_to_none: no gradient lives into the forward; after the step they all do.
    assert all(r["gradient_bytes"] == 0 for r in forward)
    assert all(r["gradient_bytes"] == 4 * P for r in samples(report, "end of optimizer.step"))
    # On the CPU there is no allocator total: the rest is absent, not 0.
    assert all(r["other_bytes"] is None and r["allocated_bytes"] is None for r in forward)
    assert "other_bytes" not in section(report, "memory_by_role")["metrics"]
    findings = [f["text"] for f in section(report, "memory_by_role")["findings"]]
    assert any(f.startswith("optimizer state is 2.0x the weights") for f in findings)
    assert not any("still live when the next forward begins" in f for f in findings)


def test_modules_own_their_parameters_gradients_and_state() -> None:
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    report = fit(model, opt, set_to_none=False)
    rows = {r["module"]: r for r in table(report, "memory_by_role", "role_modules")["rows"]}
    fc = model.blocks[0].mlp[0]
    p = (fc.weight.numel() + fc.bias.numel()) * 4
    assert rows["blocks.0.mlp.0"]["parameter_bytes"] == p
    assert rows["blocks.0.mlp.0"]["gradient_bytes"] == p
    assert rows["blocks.0.mlp.0"]["optimizer_state_bytes"] == 2 * p + 2 * 4
    assert rows["(the model itself)"]["parameter_bytes"] == T * D * 4  # pos
    assert sum(r["parameter_bytes"] for r in rows.values()) == metric(report, "parameter_bytes")
    # Gradients zeroed in place stay live into the next forward, and the report says so.
    assert [r["gradient_bytes"] for r in samples(report, "end of forward")] == [4 * sum(
        p.numel() for p in model.parameters())]
    findings = [f["text"] for f in section(report, "memory_by_role")["findings"]]
    assert any("zero_grad(set_to_none=True)" in f for f in findings)


def test_without_the_optimizer_its_state_is_not_measured() -> None:
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    report = fit(model, opt, set_to_none=True, attach_optimizer=False)
    assert all(r["optimizer_state_bytes"] is None
               for r in table(report, "memory_by_role", "role_samples")["rows"])
    assert "optimizer_state_bytes" not in section(report, "memory_by_role")["metrics"]
    assert "roles_without_optimizer" in {d["name"] for d in report["diagnostics"]}
    assert not samples(report, "end of optimizer.step")


def test_hooks_are_gone_after_the_window() -> None:
    torch.manual_seed(0)
    model = Gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fit(model, opt, set_to_none=True, steps=3)
    assert not model._forward_hooks and not model._forward_pre_hooks
    assert "step" not in vars(opt)  # torch 1.13: the instance's wrapper is removed


def test_fp32_weights_under_autocast_are_an_answer() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512, bias=False), nn.ReLU(),
                          nn.Linear(512, 512, bias=False))  # 2 MiB of float32 weights
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with trainprof.Session(run_dir="run", db="off", overrides=WINDOW) as s:
        trainprof.torch.attach(s, model, optimizer=opt)
        s.stage("train")
        for _ in range(2):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(4, 512)).float().sum()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            s.step()
    roles = section(load_report(s.report.run_dir), "memory_by_role")
    findings = [f["text"] for f in roles["findings"]]
    autocast = [f for f in findings if "autocast" in f]
    assert len(autocast) == 1, findings
    assert autocast[0].startswith("the forward ran under autocast to bfloat16 while 2.00 MiB of "
                                  "the weights are float32")
    assert "would hold 1.00 MiB" in autocast[0]


def test_the_live_view_shows_memory_by_role(tmp_path: Any) -> None:
    """Issue 72: live.json carries the roles at the last sampled step, in the loop, with
    memory.enabled off (the live view samples on its own, once a live.interval_s)."""
    import json
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    P = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with trainprof.Session(run_dir="run", db="off", overrides={
            "output.print": False, "live.mode": "lines", "live.interval_s": 0.1}) as s:
        trainprof.torch.attach(s, model, optimizer=opt)
        s.stage("train")
        for _ in range(3):
            model(torch.randn(8, 256)).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            s.step()
    with open(os.path.join(s.report.run_dir, "live.json"), encoding="utf-8") as f:
        live = json.load(f)
    assert live["finished"] and 0 <= live["roles_step"] <= 2  # a step's end, sampled
    assert live["parameter_bytes"] == live["gradient_bytes"] == 4 * P
    assert live["optimizer_state_bytes"] == 8 * P + 2 * 2 * 4  # two moments, a step counter each
    assert "other_bytes" not in live  # the CPU: no allocator total
