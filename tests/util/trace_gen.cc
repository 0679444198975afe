#include "util/trace_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trainprof::testutil {
namespace {

constexpr int64_t kCpuPid = 4242;
constexpr int64_t kCpuTid = 4242;
constexpr const char* kDataLoaderName =
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";

// --- the description, laid out in absolute time --------------------------------------------

struct HostEv {
  std::string name, cat;
  int64_t ts = 0, dur = 0;
  int64_t ext = -1;                // External id
  int64_t corr = -1;               // runtime calls only
  bool launch = false;             // a launch call: an ac2g flow starts here
  std::string dims, types, stack;  // Input Dims / Input type / Call stack
  int64_t end() const { return ts + dur; }
};

struct GpuEv {
  GenGpuOp op;
  int64_t ts = 0, end = 0;
  int64_t launch_ts = 0, launch_dur = 0;
  int64_t corr = 0, ext = -1;
  size_t step = 0;
  bool comm_by_op = false;  // launched under a collective CPU op (the Overview's second rule)
};

struct StepRange {
  int64_t host_begin = 0, host_end = 0, ext = 0;
};

struct Layout {
  std::vector<StepRange> steps;
  std::vector<HostEv> host;  // every CPU-side X event, ProfilerStep ranges included
  std::vector<GpuEv> gpu;    // in file order
};

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(),
                     [&](char a, char b) { return lower(a) == lower(b); }) != hay.end();
}

// docs/trace-analysis.md, "Communication kernels".
bool IsNcclName(std::string_view n) {
  return ContainsNoCase(n, "nccl") || ContainsNoCase(n, "rccl") || ContainsNoCase(n, "hccl") ||
         ContainsNoCase(n, "msccl");
}

// docs/trace-analysis.md, Overview: CPU collectives and the data loader's ranges.
bool IsCollectiveOp(std::string_view n) {
  return n.starts_with("nccl:") || n.starts_with("c10d::") || n.starts_with("gloo:") ||
         n == "record_param_comms";
}
bool IsDataLoader(std::string_view n) {
  return n.starts_with("enumerate(DataLoader)#") || n.starts_with("enumerate(DataPipe)#");
}
bool IsOpCategory(std::string_view cat) { return cat == "cpu_op" || cat == "user_annotation"; }

const char* LaunchCallName(GenGpuKind k) {
  return k == GenGpuKind::kKernel   ? "cudaLaunchKernel"
         : k == GenGpuKind::kMemcpy ? "cudaMemcpyAsync"
                                    : "cudaMemsetAsync";
}

int64_t Scale(int64_t v, const GenRank& r) { return v * r.slowdown_num / r.slowdown_den; }

GenTrace Scaled(GenTrace t, const GenRank& r) {
  for (GenStep& s : t.steps) {
    for (int64_t* v : {&s.host_dur_ns, &s.gap_before_ns, &s.data_loader_ns}) *v = Scale(*v, r);
    for (GenCpuOp& c : s.cpu_ops) c.start_ns = Scale(c.start_ns, r), c.dur_ns = Scale(c.dur_ns, r);
    for (GenGpuOp& g : s.gpu_ops)
      for (int64_t* v : {&g.start_ns, &g.dur_ns, &g.launch_delay_ns, &g.launch_dur_ns})
        *v = Scale(*v, r);
  }
  for (GenMemorySample& m : t.memory) m.at_ns = Scale(m.at_ns, r);
  return t;
}

// The innermost cpu_op / user_annotation of the step holding [ts, end), else the step itself.
int64_t EnclosingExternalId(const std::vector<HostEv>& host, size_t first, int64_t ts, int64_t end,
                            int64_t step_ext) {
  int64_t best = step_ext, best_dur = INT64_MAX;
  for (size_t i = first; i < host.size(); ++i) {
    const HostEv& h = host[i];
    if (IsOpCategory(h.cat) && h.ts <= ts && end <= h.end() && h.dur < best_dur)
      best = h.ext, best_dur = h.dur;
  }
  return best;
}

StatusOr<Layout> Lay(const GenTrace& t, const GenRank& r) {
  Layout l;
  int64_t cursor = t.epoch_ns + r.skew_ns, ext = 1, corr = 100'000;
  for (size_t si = 0; si < t.steps.size(); ++si) {
    const GenStep& s = t.steps[si];
    if (s.host_dur_ns < 0 || s.gap_before_ns < 0 || s.data_loader_ns > s.host_dur_ns)
      return InvalidArgument(fmt::format("step {}: bad host range or data loader", si));
    StepRange st{cursor + s.gap_before_ns, cursor + s.gap_before_ns + s.host_dur_ns, ext++};
    cursor = st.host_end;
    l.steps.push_back(st);
    l.host.push_back({fmt::format("ProfilerStep#{}", t.first_step_number + int64_t(si)),
                      "user_annotation", st.host_begin, s.host_dur_ns, st.ext});
    size_t ops = l.host.size();
    if (s.data_loader_ns > 0)
      l.host.push_back(
          {kDataLoaderName, "user_annotation", st.host_begin, s.data_loader_ns, ext++});
    for (const GenCpuOp& c : s.cpu_ops) {
      if (c.dur_ns < 0 || c.start_ns < 0 || c.start_ns + c.dur_ns > s.host_dur_ns)
        return InvalidArgument(fmt::format("step {}: \"{}\" lies outside the step", si, c.name));
      // Kineto gives runtime and driver calls a correlation id, ops an External id.
      bool runtime = c.category == "cuda_runtime" || c.category == "cuda_driver";
      l.host.push_back({c.name, c.category, st.host_begin + c.start_ns, c.dur_ns,
                        IsOpCategory(c.category) ? ext++ : -1, runtime ? corr++ : -1, false,
                        c.input_dims, c.input_types, c.call_stack});
    }
    for (const GenGpuOp& g : s.gpu_ops) {
      int64_t launch = g.start_ns - g.launch_delay_ns;
      if (g.dur_ns < 0 || g.launch_dur_ns < 0 || launch < 0 ||
          launch + g.launch_dur_ns > s.host_dur_ns)
        return InvalidArgument(
            fmt::format("step {}: the launch of \"{}\" lies outside the step", si, g.name));
      GpuEv e{g,
              st.host_begin + g.start_ns,
              st.host_begin + g.start_ns + g.dur_ns,
              st.host_begin + launch,
              g.launch_dur_ns,
              corr++};
      e.step = si;
      e.ext = EnclosingExternalId(l.host, ops, e.launch_ts, e.launch_ts + e.launch_dur, st.ext);
      for (size_t i = ops; i < l.host.size(); ++i)
        if (l.host[i].ext == e.ext && IsCollectiveOp(l.host[i].name)) e.comm_by_op = true;
      l.gpu.push_back(e);
    }
    // The launch calls after the ops, so EnclosingExternalId never picks one of them.
    for (const GpuEv& e : l.gpu)
      if (e.step == si)
        l.host.push_back({LaunchCallName(e.op.kind), "cuda_runtime", e.launch_ts, e.launch_dur,
                          e.ext, e.corr, true});
  }
  return l;
}

// --- JSON ----------------------------------------------------------------------------------

std::string Us(int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

// Kineto since 2024 writes each ts as µs after baseTimeNanoseconds, which the trace also holds.
constexpr int64_t kBaseTimeNs = 1712000000000000000;
std::string Ts(int64_t ns) { return Us(ns - kBaseTimeNs); }

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", c);
    else
      out += c;
  }
  return out + "\"";
}

std::string GpuCategory(GenGpuKind k) {
  return k == GenGpuKind::kKernel   ? "kernel"
         : k == GenGpuKind::kMemcpy ? "gpu_memcpy"
                                    : "gpu_memset";
}

std::string GpuArgs(const GpuEv& e, int64_t device) {
  std::string a = fmt::format(R"("External id": {}, )", e.ext);
  if (e.op.kind == GenGpuKind::kKernel) a += R"("queued": 0, )";
  a += fmt::format(R"("device": {}, "context": 1, "stream": {}, "correlation": {})", device,
                   e.op.stream, e.corr);
  if (e.op.kind != GenGpuKind::kKernel)
    return a + fmt::format(R"J(, "bytes": {}, "memory bandwidth (GB/s)": {:.3f})J", e.op.bytes,
                           e.op.dur_ns > 0 ? static_cast<double>(e.op.bytes) / e.op.dur_ns : 0);
  a += R"(, "registers per thread": 64, "shared memory": 0)";
  if (e.op.blocks_per_sm >= 0) a += fmt::format(R"(, "blocks per SM": {})", e.op.blocks_per_sm);
  a += R"(, "grid": [216, 1, 1], "block": [256, 1, 1])";
  if (e.op.occupancy_pct >= 0)
    a += fmt::format(R"(, "est. achieved occupancy %": {})", e.op.occupancy_pct);
  if (const auto& c = e.op.collective) {
    a += fmt::format(
        R"(, "Collective name": {}, "In msg nelems": {}, "Out msg nelems": {}, "Group size": {}, )"
        R"("dtype": {}, "Process Group Name": {})",
        Quoted(c->name), c->nelems, c->nelems, c->group_size, Quoted(c->dtype), Quoted(c->group));
    if (c->seq >= 0) a += fmt::format(R"(, "Seq": {})", c->seq);
  }
  return a;
}

std::string Json(const GenTrace& t, const GenRank& r, const Layout& l) {
  std::vector<std::string> ev;
  for (const HostEv& h : l.host) {
    std::string args = h.corr >= 0 ? fmt::format(R"("cbid": 211, "correlation": {})", h.corr) : "";
    if (h.ext >= 0)
      args = fmt::format(R"("External id": {}{}{})", h.ext, args.empty() ? "" : ", ", args);
    if (!h.dims.empty()) args += fmt::format(R"(, "Input Dims": {})", h.dims);
    if (!h.types.empty()) args += fmt::format(R"(, "Input type": {})", h.types);
    if (!h.stack.empty()) args += fmt::format(R"(, "Call stack": {})", Quoted(h.stack));
    ev.push_back(fmt::format(
        R"({{"ph": "X", "cat": {}, "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
        Quoted(h.cat), Quoted(h.name), kCpuPid, kCpuTid, Ts(h.ts), Us(h.dur), args));
    if (t.flows && h.launch)
      ev.push_back(fmt::format(
          R"({{"ph": "s", "id": {}, "pid": {}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g"}})",
          h.corr, kCpuPid, kCpuTid, Ts(h.ts)));
  }
  for (const GpuEv& e : l.gpu) {
    ev.push_back(fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": {}, "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
        GpuCategory(e.op.kind), Quoted(e.op.name), t.device, e.op.stream, Ts(e.ts),
        Us(e.end - e.ts), GpuArgs(e, t.device)));
    if (t.flows)
      ev.push_back(fmt::format(
          R"({{"ph": "f", "id": {}, "pid": {}, "tid": {}, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})",
          e.corr, t.device, e.op.stream, Ts(e.ts)));
  }
  const int64_t origin = l.steps.empty() ? t.epoch_ns + r.skew_ns : l.steps.front().host_begin;
  int64_t last = origin;
  for (const HostEv& h : l.host) last = std::max(last, h.end());
  for (const GpuEv& e : l.gpu) last = std::max(last, e.end);
  int64_t prev = 0;
  for (const GenMemorySample& m : t.memory) {
    ev.push_back(fmt::format(
        R"({{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": {}, "tid": {}, "ts": {}, "args": {{"Total Reserved": {}, "Total Allocated": {}, "Bytes": {}, "Addr": {}, "Device Id": {}, "Device Type": 1}}}})",
        kCpuPid, kCpuTid, Ts(origin + m.at_ns), m.total_allocated_bytes + (int64_t{1} << 21),
        m.total_allocated_bytes, m.total_allocated_bytes - prev, m.addr, t.device));
    prev = m.total_allocated_bytes;
  }
  ev.push_back(fmt::format(
      R"J({{"ph": "X", "cat": "Trace", "ts": {}, "dur": {}, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {{"Op count": 0}}}})J",
      Ts(origin - 50'000), Us(last - origin + 100'000)));
  ev.push_back(fmt::format(
      R"({{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": {}}})",
      Ts(origin - 50'000)));
  struct Names {
    int64_t pid, tid;
    std::string process, thread;
  };
  for (const Names& n : {Names{kCpuPid, kCpuTid, "python3", "thread 4242 (python3)"},
                         Names{t.device, 7, fmt::format("GPU {}", t.device), "stream 7"}}) {
    ev.push_back(fmt::format(
        R"({{"name": "process_name", "ph": "M", "ts": {}, "pid": {}, "tid": 0, "args": {{"name": {}}}}})",
        Ts(origin), n.pid, Quoted(n.process)));
    ev.push_back(fmt::format(
        R"({{"name": "thread_name", "ph": "M", "ts": {}, "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
        Ts(origin), n.pid, n.tid, Quoted(n.thread)));
  }
  std::string out = fmt::format(
      R"({{
  "schemaVersion": 1,
  "deviceProperties": [
    {{
      "id": {}, "name": {}, "totalGlobalMem": {},
      "computeMajor": {}, "computeMinor": {},
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": {}
    }}
  ],
  "distributedInfo": {{"backend": {}, "rank": {}, "world_size": {}}},
  "record_shapes": 0,
  "with_stack": 0,
  "profile_memory": {},
  "traceEvents": [
)",
      t.device, Quoted(t.device_name), t.total_memory_bytes, t.compute_major, t.compute_minor,
      t.num_sms, Quoted(t.backend), r.rank, t.world_size, t.memory.empty() ? 0 : 1);
  for (size_t i = 0; i < ev.size(); ++i) out += "  " + ev[i] + (i + 1 < ev.size() ? ",\n" : "\n");
  out += fmt::format(
      R"(  ],
  "traceName": "rank{}.pt.trace.json",{}
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": {}
}}
)",
      r.rank, t.host_name.empty() ? "" : fmt::format("\n  \"hostname\": {},", Quoted(t.host_name)),
      kBaseTimeNs);
  return out;
}

// --- the expected figures ------------------------------------------------------------------

// What covers one elementary segment of time (between two consecutive event boundaries).
struct Segment {
  int64_t begin = 0, end = 0;
  unsigned overview = 0;  // bit c: some event of Overview category c covers it
  bool gpu = false, kernel = false, memcpy = false, memset = false;
  bool comm = false, comp = false;  // kernels by name (all GPU work of the trace)
  unsigned hta = 0;                 // HTA selection: 1 compute, 2 comm, 4 memory
  double blocks = 0;                // summed blocks per SM of kernels
  int64_t len() const { return end - begin; }
  int category() const {
    for (int c = 0; c < kGenOther; ++c)
      if (overview & (1u << c)) return c;
    return kGenOther;
  }
};

int OverviewOf(const HostEv& h) {
  if (h.name.starts_with("ProfilerStep#")) return -1;
  if (h.cat == "cuda_runtime" || h.cat == "cuda_driver") return kGenRuntime;
  if (IsOpCategory(h.cat) && IsDataLoader(h.name)) return kGenDataLoader;
  bool cpu = IsOpCategory(h.cat) || h.cat == "python_function";
  if (cpu && IsCollectiveOp(h.name)) return kGenCommunication;
  if (cpu) return kGenCpuExec;
  return -1;
}

int OverviewOf(const GpuEv& e) {
  switch (e.op.kind) {
    case GenGpuKind::kMemcpy:
      return kGenMemcpy;
    case GenGpuKind::kMemset:
      return kGenMemset;
    case GenGpuKind::kKernel:
      break;
  }
  return IsNcclName(e.op.name) || e.comm_by_op ? kGenCommunication : kGenKernel;
}

// HTA's type bit: memory for memcpy / memset, communication by name, else computation.
unsigned HtaBit(const GpuEv& e) {
  if (e.op.kind != GenGpuKind::kKernel) return 4;
  return IsNcclName(e.op.name) ? 2 : 1;
}

std::vector<Segment> Segments(const Layout& l, const std::vector<bool>& selected,
                              const std::vector<std::pair<int64_t, int64_t>>& steps) {
  std::vector<int64_t> t;
  for (const HostEv& h : l.host) t.push_back(h.ts), t.push_back(h.end());
  for (const GpuEv& e : l.gpu) t.push_back(e.ts), t.push_back(e.end);
  for (auto [b, e] : steps) t.push_back(b), t.push_back(e);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  std::vector<Segment> out;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    Segment s{t[i], t[i + 1]};
    auto covers = [&](int64_t b, int64_t e) { return b <= s.begin && s.end <= e; };
    for (const HostEv& h : l.host) {
      int c = OverviewOf(h);
      if (c >= 0 && covers(h.ts, h.end())) s.overview |= 1u << c;
    }
    for (size_t g = 0; g < l.gpu.size(); ++g) {
      const GpuEv& e = l.gpu[g];
      if (!covers(e.ts, e.end)) continue;
      s.overview |= 1u << OverviewOf(e);
      s.gpu = true;
      s.kernel |= e.op.kind == GenGpuKind::kKernel;
      s.memcpy |= e.op.kind == GenGpuKind::kMemcpy;
      s.memset |= e.op.kind == GenGpuKind::kMemset;
      s.comm |= HtaBit(e) == 2;
      s.comp |= HtaBit(e) == 1;
      if (selected[g]) s.hta |= HtaBit(e);
      if (e.op.kind == GenGpuKind::kKernel && e.op.blocks_per_sm > 0)
        s.blocks += e.op.blocks_per_sm;
    }
    out.push_back(s);
  }
  return out;
}

template <typename Pred>
int64_t Sum(const std::vector<Segment>& segs, int64_t lo, int64_t hi, Pred pred) {
  int64_t n = 0;
  for (const Segment& s : segs)
    if (s.begin >= lo && s.end <= hi && pred(s)) n += s.len();
  return n;
}

// numpy's default (linear) quantile, as pandas and HTA use it.
double Quantile(std::vector<int64_t> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return static_cast<double>(v[lo]) +
         static_cast<double>(v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// The steps as the TensorBoard plugin finds them, and the trailing ones it drops.
void ExpectSteps(const GenTrace& t, const Layout& l, Expected& x) {
  size_t n = l.steps.size();
  std::vector<int64_t> launches(n, 0), gpu_end(n, INT64_MIN);
  for (const GpuEv& e : l.gpu)
    ++launches[e.step], gpu_end[e.step] = std::max(gpu_end[e.step], e.end);
  bool any_gpu = !l.gpu.empty();
  int64_t prev_end = n ? l.steps[0].host_begin : 0;
  for (size_t i = 0; i < n; ++i) {
    ExpectedStep s;
    s.name = fmt::format("ProfilerStep#{}", t.first_step_number + int64_t(i));
    s.launches = launches[i];
    if (any_gpu) {
      s.begin_ns = std::max(prev_end, l.steps[i].host_begin);
      s.end_ns = std::max({l.steps[i].host_end, gpu_end[i], s.begin_ns});
    } else {
      s.begin_ns = l.steps[i].host_begin;
      s.end_ns = l.steps[i].host_end;
    }
    s.dur_ns = s.end_ns - s.begin_ns;
    prev_end = s.end_ns;
    x.steps.push_back(s);
  }
  if (!any_gpu || n < 2) return;
  size_t last = n;
  while (last > 0 && launches[last - 1] == 0) --last;
  size_t keep = last;
  if (last >= 2 && launches[last - 2] * 4 > launches[last - 1] * 5) keep = last - 1;
  for (size_t i = keep; i < n; ++i) x.dropped.push_back(x.steps[i].name);
  x.steps.resize(keep);
}

void ExpectPerStep(const Layout& l, const std::vector<Segment>& segs, Expected& x) {
  for (ExpectedStep& s : x.steps) {
    int64_t b = s.begin_ns, e = s.end_ns;
    s.gpu_busy_ns = Sum(segs, b, e, [](const Segment& g) { return g.gpu; });
    s.gpu_idle_ns = s.dur_ns - s.gpu_busy_ns;
    s.kernel_ns = Sum(segs, b, e, [](const Segment& g) { return g.kernel; });
    s.memcpy_ns = Sum(segs, b, e, [](const Segment& g) { return g.memcpy; });
    s.memset_ns = Sum(segs, b, e, [](const Segment& g) { return g.memset; });
    s.communication_ns = Sum(segs, b, e, [](const Segment& g) { return g.comm; });
    s.comm_overlap_ns = Sum(segs, b, e, [](const Segment& g) { return g.comm && g.comp; });
    for (int c = 0; c < kGenNumCategories; ++c)
      s.overview_ns[c] = Sum(segs, b, e, [c](const Segment& g) { return g.category() == c; });
  }
  for (size_t i = 0; i < x.steps.size(); ++i)
    for (const GpuEv& g : l.gpu)
      if (g.step == i) x.steps[i].launch_delays_ns.push_back(g.ts - (g.launch_ts + g.launch_dur));
}

void ExpectGpuSummary(const Layout& l, const std::vector<Segment>& segs, Expected& x) {
  if (x.steps.empty()) return;
  int64_t lo = x.steps.front().begin_ns, hi = x.steps.back().end_ns;
  x.span_ns = hi - lo;
  double occ_sum = 0, occ_w = 0;
  for (const GpuEv& e : l.gpu) {
    if (e.op.kind != GenGpuKind::kKernel) continue;
    ++x.kernels;
    int64_t clipped = std::max<int64_t>(0, std::min(e.end, hi) - std::max(e.ts, lo));
    x.kernel_ns += clipped;
    if (e.op.occupancy_pct >= 0)
      occ_sum += e.op.occupancy_pct * double(clipped), occ_w += double(clipped);
  }
  x.kernel_busy_ns = Sum(segs, lo, hi, [](const Segment& g) { return g.kernel; });
  double span = static_cast<double>(std::max<int64_t>(x.span_ns, 1));
  x.utilization_pct = 100.0 * static_cast<double>(x.kernel_busy_ns) / span;
  if (occ_w > 0) x.occupancy_pct = occ_sum / occ_w;
  double area = 0;
  bool any = false;
  for (const Segment& g : segs)
    if (g.begin >= lo && g.end <= hi && g.blocks > 0)
      area += std::min(g.blocks, 1.0) * double(g.len()), any = true;
  if (any) x.sm_efficiency_pct = 100.0 * area / span;
}

void ExpectIdle(const Layout& l, const std::vector<bool>& selected, Expected& x) {
  std::map<int64_t, std::vector<const GpuEv*>> by_stream;
  for (size_t g = 0; g < l.gpu.size(); ++g)
    if (selected[g]) by_stream[l.gpu[g].op.stream].push_back(&l.gpu[g]);
  for (auto& [stream, evs] : by_stream) {
    std::stable_sort(evs.begin(), evs.end(),
                     [](const GpuEv* a, const GpuEv* b) { return a->ts < b->ts; });
    ExpectedIdle idle;
    idle.stream = stream;
    int64_t latest_end = evs.front()->end;
    for (size_t i = 1; i < evs.size(); ++i) {
      int64_t gap = evs[i]->ts - latest_end;
      // Host wait: the launch call began only after the stream had gone idle.
      int c = evs[i]->launch_ts > latest_end ? 0 : gap < kGenKernelWaitNs ? 1 : 2;
      latest_end = std::max(latest_end, evs[i]->end);
      if (gap <= 0) continue;
      idle.ns[c] += gap;
      idle.gaps[c] += 1;
    }
    x.idle.push_back(idle);
  }
}

void ExpectHta(const Layout& l, const std::vector<bool>& selected, const std::vector<Segment>& segs,
               Expected& x) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t g = 0; g < l.gpu.size(); ++g)
    if (selected[g])
      ++x.gpu_events, lo = std::min(lo, l.gpu[g].ts), hi = std::max(hi, l.gpu[g].end);
  if (x.gpu_events > 0) {
    x.hta_span_ns = hi - lo;
    x.hta_idle_ns = x.hta_span_ns - Sum(segs, lo, hi, [](const Segment& g) { return g.hta != 0; });
    x.hta_compute_ns = Sum(segs, lo, hi, [](const Segment& g) { return (g.hta & 1) != 0; });
    x.hta_non_compute_ns = x.hta_span_ns - x.hta_compute_ns - x.hta_idle_ns;
  }
  static const char* kNames[3] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
  for (unsigned mask = 1; mask < 8; ++mask) {
    int64_t ns =
        Sum(segs, INT64_MIN, INT64_MAX, [mask](const Segment& g) { return g.hta == mask; });
    if (ns == 0) continue;
    std::string label;
    for (int b = 0; b < 3; ++b)
      if (mask & (1u << b))
        label += (label.empty() ? "" : " overlapping ") + std::string(kNames[b]);
    x.kernel_types[label] = ns;
  }
  x.communication_ns =
      Sum(segs, INT64_MIN, INT64_MAX, [](const Segment& g) { return (g.hta & 2) != 0; });
  x.comm_overlap_ns =
      Sum(segs, INT64_MIN, INT64_MAX, [](const Segment& g) { return (g.hta & 3) == 3; });
  if (x.communication_ns > 0)
    x.comm_overlap_pct = 100.0 * double(x.comm_overlap_ns) / double(x.communication_ns);

  std::vector<int64_t> delays;
  int64_t launch_sum = 0;
  for (size_t g = 0; g < l.gpu.size(); ++g) {
    if (!selected[g]) continue;
    const GpuEv& e = l.gpu[g];
    int64_t delay = e.ts - (e.launch_ts + e.launch_dur);
    ++x.launches;
    x.short_kernels += e.launch_dur <= kGenRuntimeCutoffNs && e.end - e.ts < e.launch_dur;
    x.runtime_outliers += e.launch_dur > kGenRuntimeCutoffNs;
    x.launch_delay_outliers += delay > kGenLaunchDelayCutoffNs;
    delays.push_back(delay);
    launch_sum += e.launch_dur;
  }
  if (delays.empty()) return;
  double n = static_cast<double>(delays.size());
  x.mean_delay_ns =
      static_cast<double>(std::accumulate(delays.begin(), delays.end(), int64_t{0})) / n;
  x.mean_launch_ns = static_cast<double>(launch_sum) / n;
  x.max_delay_ns = static_cast<double>(*std::max_element(delays.begin(), delays.end()));
  x.median_delay_ns = Quantile(delays, 0.5);
  x.p95_delay_ns = Quantile(delays, 0.95);
}

// Each memory sample's change goes to the innermost cpu_op around it: of those whose [start, end)
// holds it, the one that started last (the shortest of those that started together).
void ExpectMemoryByOp(const GenTrace& t, const GenRank& r, const Layout& l, Expected& x) {
  const int64_t origin = l.steps.empty() ? t.epoch_ns + r.skew_ns : l.steps.front().host_begin;
  int64_t prev = 0;
  for (const GenMemorySample& m : t.memory) {
    const int64_t at = origin + m.at_ns, bytes = m.total_allocated_bytes - prev;
    prev = m.total_allocated_bytes;
    const HostEv* inner = nullptr;
    for (const HostEv& h : l.host) {
      if (h.cat != "cpu_op" || at < h.ts || at >= h.end()) continue;
      if (!inner || h.ts > inner->ts || (h.ts == inner->ts && h.dur < inner->dur)) inner = &h;
    }
    if (inner)
      x.memory_self_increase[inner->name] += bytes;
    else
      ++x.memory_unattributed;
  }
}

Expected Expect(const GenTrace& t, const GenRank& r, const Layout& l) {
  Expected x;
  x.rank = r.rank;
  ExpectSteps(t, l, x);
  // HTA's selection: the GPU work whose launch call starts inside the kept steps' host ranges.
  std::vector<bool> selected(l.gpu.size(), false);
  if (!x.steps.empty()) {
    int64_t lo = l.steps.front().host_begin, hi = l.steps[x.steps.size() - 1].host_end;
    for (size_t g = 0; g < l.gpu.size(); ++g)
      selected[g] = l.gpu[g].launch_ts >= lo && l.gpu[g].launch_ts < hi;
  }
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (const ExpectedStep& s : x.steps) bounds.emplace_back(s.begin_ns, s.end_ns);
  std::vector<Segment> segs = Segments(l, selected, bounds);
  ExpectPerStep(l, segs, x);
  ExpectGpuSummary(l, segs, x);
  ExpectIdle(l, selected, x);
  ExpectHta(l, selected, segs, x);
  for (const GenMemorySample& m : t.memory)
    x.peak_allocated_bytes = std::max(x.peak_allocated_bytes, m.total_allocated_bytes);
  ExpectMemoryByOp(t, r, l, x);
  return x;
}

}  // namespace

StatusOr<GeneratedTrace> GenerateKinetoTrace(const GenTrace& spec, const GenRank& rank) {
  if (rank.slowdown_den <= 0 || rank.slowdown_num <= 0)
    return InvalidArgument("the slowdown must be a positive fraction");
  GenTrace t = Scaled(spec, rank);
  StatusOr<Layout> l = Lay(t, rank);
  if (!l.ok()) return l.status();
  return GeneratedTrace{Json(t, rank, *l), Expect(t, rank, *l)};
}

}  // namespace trainprof::testutil
