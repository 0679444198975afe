"""What snapshot.stacks costs: record 2 training steps of a 4-layer transformer with
stacks=python and stacks=all, time the steps and _dump_snapshot, and the file size."""
import json, os, sys, time, torch
from torch import nn
out = sys.argv[1]
torch.manual_seed(0)
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 4).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
def step():
    model(torch.randn(32, 256, 512, device="cuda")).square().mean().backward(); opt.step(); opt.zero_grad()
for _ in range(3): step()
torch.cuda.synchronize()
res = {}
for stacks in ("python", "all", "python", "all"):
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks=stacks)
    t0 = time.perf_counter()
    for _ in range(2): step()
    torch.cuda.synchronize(); t1 = time.perf_counter()
    path = os.path.join(out, f"s_{stacks}.pickle")
    torch.cuda.memory._dump_snapshot(path); t2 = time.perf_counter()
    torch.cuda.memory._record_memory_history(enabled=None)
    step(); torch.cuda.synchronize(); t3 = time.perf_counter(); step(); torch.cuda.synchronize(); t4 = time.perf_counter()
    res.setdefault(stacks, []).append({"steps_s": round(t1 - t0, 4), "dump_s": round(t2 - t1, 3), "bytes": os.path.getsize(path), "plain_step_s": round(t4 - t3, 4)})
    os.remove(path)
print(json.dumps(res, indent=1))
