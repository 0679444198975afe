"""A real torch 2.x allocator snapshot of a small GPT-style model trained with AdamW, its history
recorded from before the model existed, so every parameter, gradient and optimizer-state block
has the stack that made it; beside it, the exact bytes of each role (facts.json): test data for a
memory-by-role analysis. Issue 59, item 5; run on a GPU machine:

    python3 tests/data/snapshots/make_gpt_adamw_snapshot.py OUT_DIR

writes OUT_DIR/torch<version>_<gpu>_gpt_adamw.pickle and .facts.json (a few hundred KB with
python stacks). Without a GPU it says so and exits 2.
"""
import json
import os
import sys

import torch
from torch import nn
from torch.autograd.profiler import record_function

VOCAB, WIDTH, HEADS, LAYERS, SEQ, BATCH, STEPS = 512, 128, 4, 2, 64, 8, 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, WIDTH), nn.Embedding(SEQ, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, idx):
        mask = torch.triu(torch.full((SEQ, SEQ), float("-inf"), device=idx.device), 1)
        x = self.tok(idx) + self.pos(torch.arange(SEQ, device=idx.device))
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def cuda_bytes(tensors):
    """Exact bytes of the CUDA tensors, and as the caching allocator rounds each (512 B)."""
    ts = [t for t in tensors if torch.is_tensor(t) and t.is_cuda]
    exact = sum(t.numel() * t.element_size() for t in ts)
    rounded = sum(-(-t.numel() * t.element_size() // 512) * 512 for t in ts)
    return {"tensors": len(ts), "bytes": exact, "allocator_bytes": rounded}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("make_gpt_adamw_snapshot: torch sees no GPU", file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    gpu = torch.cuda.get_device_name(0).split()[-1].lower()
    stem = os.path.join(out, f"torch{torch.__version__.split('+')[0]}_{gpu}_gpt_adamw")
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(stacks="python", max_entries=1_000_000)
    model = Gpt().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    facts = {"model": {"vocab": VOCAB, "width": WIDTH, "heads": HEADS, "layers": LAYERS,
                       "seq": SEQ, "batch": BATCH, "steps": STEPS,
                       "optimizer": "AdamW (torch defaults: foreach on CUDA)"},
             "parameters": cuda_bytes(model.parameters()),
             "parameter_list": [[n, list(p.shape), p.numel() * p.element_size()]
                                for n, p in model.named_parameters()],
             "steps": []}
    for k in range(STEPS):
        with record_function(f"ProfilerStep#{k}"):
            idx = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda")
            with record_function("forward"):
                logits = model(idx)
                loss = nn.functional.cross_entropy(logits.view(-1, VOCAB), idx.view(-1))
            after_forward = torch.cuda.memory_allocated()
            with record_function("backward"):
                loss.backward()
            grads = cuda_bytes(p.grad for p in model.parameters())
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        state = [t for s in opt.state.values() for t in s.values()]
        facts["steps"].append({"step": k, "allocated_after_forward": after_forward,
                               "gradients": grads, "optimizer_state": cuda_bytes(state),
                               "optimizer_state_cpu_tensors": sum(
                                   1 for t in state if torch.is_tensor(t) and not t.is_cuda),
                               "allocated_at_end": torch.cuda.memory_allocated(),
                               "max_allocated": torch.cuda.max_memory_allocated()})
    torch.cuda.memory._dump_snapshot(stem + ".pickle")
    torch.cuda.memory._record_memory_history(enabled=None)
    facts["torch"], facts["device"] = torch.__version__, torch.cuda.get_device_name(0)
    facts["made_by"] = "tests/data/snapshots/make_gpt_adamw_snapshot.py"
    with open(stem + ".facts.json", "w") as f:
        json.dump(facts, f, indent=1)
    print(json.dumps({k: facts[k] for k in ("parameters", "steps")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
