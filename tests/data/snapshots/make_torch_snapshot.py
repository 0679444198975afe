"""A real torch 2.x allocator snapshot with known figures: a small transformer trained 6 steps
with record_function phases, history recorded from step 2 (python stacks), an OOM caught in
step 4, torch's own peak (max_memory_allocated) over the recorded window printed for comparison."""
import inspect, json, sys, torch
from torch import nn
from torch.autograd.profiler import record_function
out = sys.argv[1]
print("record_memory_history signature:", inspect.signature(torch.cuda.memory._record_memory_history))
torch.manual_seed(0)
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 4).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
facts = {}
def step(k):
    with record_function(f"ProfilerStep#{k}"):
        x = torch.randn(32, 256, 512, device="cuda")
        with record_function("forward"):
            loss = model(x).square().mean()
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            opt.step(); opt.zero_grad(set_to_none=True)
        if k == 4:
            try:
                torch.empty(1 << 44, dtype=torch.uint8, device="cuda")  # 16 TiB: cannot fit
            except torch.cuda.OutOfMemoryError as e:
                facts["oom"] = str(e).splitlines()[0][:200]
for k in range(2):
    step(k)
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats()
facts["allocated_at_start"] = torch.cuda.memory_allocated()
torch.cuda.memory._record_memory_history(max_entries=200000, stacks="python")
for k in range(2, 6):
    step(k)
torch.cuda.synchronize()
facts["max_memory_allocated"] = torch.cuda.max_memory_allocated()
facts["max_memory_reserved"] = torch.cuda.max_memory_reserved()
facts["allocated_at_end"] = torch.cuda.memory_allocated()
facts["reserved_at_end"] = torch.cuda.memory_reserved()
facts["num_ooms"] = torch.cuda.memory_stats().get("num_ooms")
torch.cuda.memory._dump_snapshot(out)
torch.cuda.memory._record_memory_history(enabled=None)
snap = torch.cuda.memory._snapshot()
facts["keys"] = sorted(snap.keys())
facts["annotations"] = len(snap.get("external_annotations", []))
facts["annotation_example"] = snap.get("external_annotations", [None])[:2]
facts["trace_actions"] = sorted({e["action"] for t in snap["device_traces"] for e in t})
facts["trace_entry_keys"] = sorted({k for t in snap["device_traces"] for e in t[:50] for k in e})
print(json.dumps(facts, indent=1, default=str))
json.dump(facts, open(out + ".facts.json", "w"), indent=1, default=str)
