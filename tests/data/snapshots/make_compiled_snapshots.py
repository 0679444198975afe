"""Snapshots of torch.compile'd training with compile_context=True: default mode, and
mode="reduce-overhead" (CUDA graphs, private pools)."""
import collections, json, os, sys, torch
out = sys.argv[1]
facts = {}
for mode in ("default", "reduce-overhead"):
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    cm = torch.compile(m, mode=mode)
    for _ in range(3):  # compile and warm up outside the history
        cm(torch.randn(256, 1024, device="cuda")).square().mean().backward(); opt.step(); opt.zero_grad()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python", compile_context=True)
    for k in range(3):
        with torch.autograd.profiler.record_function(f"ProfilerStep#{k}"):
            cm(torch.randn(256, 1024, device="cuda")).square().mean().backward(); opt.step(); opt.zero_grad()
    torch.cuda.synchronize()
    path = os.path.join(out, f"compiled_{mode}.pickle")
    torch.cuda.memory._dump_snapshot(path)
    s = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    facts[mode] = {
        "contexts": collections.Counter(str(e.get("compile_context")) for t in s["device_traces"] for e in t).most_common(8),
        "pools": collections.Counter(str(seg.get("segment_pool_id")) for seg in s["segments"]).most_common(5),
        "allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
        "bytes": os.path.getsize(path)}
print(json.dumps(facts, indent=1))
json.dump(facts, open(os.path.join(out, "compiled_facts.json"), "w"), indent=1)
