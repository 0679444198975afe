// Graph kernels credited to the operators of their capture (graph_capture.h).
#include "trace/graph_capture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>

#include "trace/input_kind.h"

namespace trainprof::trace {
namespace {

namespace fs = std::filesystem;

bool IsCall(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }
bool IsHostRange(EventKind k) {
  return k == EventKind::kCpuOp || k == EventKind::kUserAnnotation ||
         k == EventKind::kPythonFunction;
}
bool Has(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }
bool IsGraphLaunch(std::string_view call) { return Has(call, "GraphLaunch"); }

// The GPU work a call enqueues while its stream captures (what the graph will run), if any.
std::optional<EventKind> CapturedWork(std::string_view call) {
  if (IsGraphLaunch(call) || Has(call, "HostFunc")) return std::nullopt;
  if (Has(call, "Memcpy")) return EventKind::kMemcpy;  // cudaMemcpyAsync, hipMemcpyAsync
  if (Has(call, "Memset")) return EventKind::kMemset;
  if (Has(call, "Launch")) return EventKind::kKernel;  // cudaLaunchKernel, hipExtModuleLaunch...
  return std::nullopt;
}

// One capture: the launch calls on one thread between its Begin- and EndCapture calls.
struct Window {
  const TraceModel* m = nullptr;
  uint32_t track = 0;
  int64_t begin = 0, end = 0;  // the end of BeginCapture, the start of EndCapture
  std::vector<uint32_t> calls;
};

std::vector<Window> WindowsOf(const TraceModel& m) {
  std::vector<Window> out;
  std::map<uint32_t, size_t> open;         // track -> its window being filled
  for (size_t i = 0; i < m.size(); ++i) {  // calls in file order, which is time order per thread
    if (!IsCall(m.kind[i])) continue;
    const std::string& n = m.name_of(i);
    const uint32_t track = m.track[i];
    if (Has(n, "StreamBeginCapture")) {
      open[track] = out.size();
      out.push_back({&m, track, m.end_ns(i), m.end_ns(i), {}});
    } else if (auto it = open.find(track); it != open.end()) {
      Window& w = out[it->second];
      if (Has(n, "StreamEndCapture")) {
        w.end = m.ts_ns[i];
        open.erase(it);
      } else if (CapturedWork(n)) {
        w.calls.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  std::erase_if(out, [](const Window& w) { return w.calls.empty() || w.end < w.begin; });
  return out;
}

// How a capture window's calls line up with a graph's GPU work: for each piece of work, the
// index of its call in the window (-1: none); `ok` when every kernel has one.
struct Fit {
  bool ok = false;
  std::vector<int32_t> call_of;
  int64_t missed = 0;    // kernels without their call plus kernel calls without their kernel
  std::string differed;  // what they were, when missed > 0
};

// Kernels a large graph may differ from its capture by and still match (0.1 %, at least one
// from 500 kernel calls on): xDiT's graph of 1,566 kernels against its capture of 1,567.
int64_t KernelTolerance(size_t kernel_calls) {
  return kernel_calls >= 500 ? std::max<int64_t>(1, static_cast<int64_t>(kernel_calls) / 1000) : 0;
}

// The kernel name a call captured, or "" when the capture does not say (CUDA's launch calls).
std::string_view CapturedName(const Window& w, uint32_t c) {
  const uint32_t name = w.m->LaunchKernelOf(c);
  return name == kNoName ? std::string_view() : std::string_view(w.m->names[name]);
}

bool SameWork(const Window& w, size_t j, const TraceModel& run, uint32_t work) {
  const uint32_t c = w.calls[j];
  if (CapturedWork(w.m->name_of(c)) != run.kind[work]) return false;
  const std::string_view name = CapturedName(w, c);
  return name.empty() || name == run.name_of(work);
}

// 1. One for one, in order: same kinds, same kernel names where the capture names them.
// 2. In order of each key: the k-th piece of work of a key (its kind, and its kernel name when
//    every captured kernel is named) goes to the k-th call of that key: graphs captured on several
//    streams run their work in another order than it was captured, and copies and memsets may
//    differ in number. Every kernel must find its call, and every kernel call its kernel.
Fit Align(const Window& w, const TraceModel& run, const std::vector<uint32_t>& work) {
  Fit f;
  f.call_of.assign(work.size(), -1);
  if (w.calls.size() == work.size()) {
    bool same = true;
    for (size_t j = 0; j < work.size() && same; ++j) same = SameWork(w, j, run, work[j]);
    if (same) {
      for (size_t j = 0; j < work.size(); ++j) f.call_of[j] = static_cast<int32_t>(j);
      f.ok = true;
      return f;
    }
  }
  bool named = true;
  for (size_t j = 0; j < w.calls.size() && named; ++j)
    named = CapturedWork(w.m->name_of(w.calls[j])) != EventKind::kKernel ||
            !CapturedName(w, w.calls[j]).empty();
  auto key = [&](EventKind k, std::string_view name) {
    return fmt::format("{}:{}", static_cast<int>(k), k == EventKind::kKernel && named ? name : "");
  };
  std::map<std::string, std::vector<int32_t>> calls;  // key -> its calls in capture order
  size_t kernel_calls = 0;
  for (size_t j = 0; j < w.calls.size(); ++j) {
    const EventKind k = *CapturedWork(w.m->name_of(w.calls[j]));
    kernel_calls += k == EventKind::kKernel;
    calls[key(k, CapturedName(w, w.calls[j]))].push_back(static_cast<int32_t>(j));
  }
  std::map<std::string, size_t> used;
  size_t kernels = 0;
  const int64_t tolerance = KernelTolerance(kernel_calls);
  for (size_t i = 0; i < work.size(); ++i) {
    const bool kernel = run.kind[work[i]] == EventKind::kKernel;
    const std::string k = key(run.kind[work[i]], run.name_of(work[i]));
    auto it = calls.find(k);
    size_t& n = used[k];
    if (it != calls.end() && n < it->second.size()) {
      f.call_of[i] = it->second[n++];
      kernels += kernel;
    } else if (kernel) {  // a kernel the capture did not launch
      if (++f.missed > tolerance) return f;
      if (f.differed.empty())
        f.differed = fmt::format(
            "the graph ran {} (kernel {} of {}), which the capture did not "
            "launch",
            run.name_of(work[i]), i + 1, work.size());
    }
  }
  const int64_t unrun = static_cast<int64_t>(kernel_calls) - static_cast<int64_t>(kernels);
  f.missed += std::max<int64_t>(unrun, 0);
  if (unrun > 0 && f.differed.empty())
    f.differed = fmt::format(
        "the capture launched {} kernel{} the graph did not run ({} in the "
        "capture, {} in the graph)",
        unrun, unrun == 1 ? "" : "s", kernel_calls, kernels);
  f.ok = f.missed <= tolerance;
  return f;
}

// "3 kernels, 1 memcpy, 2 memsets".
std::string WorkCounts(int64_t kernels, int64_t copies, int64_t memsets) {
  std::string out = fmt::format("{} kernel{}", kernels, kernels == 1 ? "" : "s");
  if (copies > 0) out += fmt::format(", {} memcpy{}", copies, copies == 1 ? "" : "s");
  if (memsets > 0) out += fmt::format(", {} memset{}", memsets, memsets == 1 ? "" : "s");
  return out;
}

// Why no window fits the graph's work, against the window nearest in size: the counts when they
// differ, else the first piece of work that differs.
std::string WhyNoFit(const std::vector<Window>& windows, const TraceModel& run,
                     const std::vector<uint32_t>& work) {
  if (windows.empty()) return "the capture traces hold no capture window";
  auto count = [](auto kind_of, size_t n, EventKind k) {
    int64_t c = 0;
    for (size_t i = 0; i < n; ++i) c += kind_of(i) == k;
    return c;
  };
  const Window* near = &windows.front();
  for (const Window& w : windows)
    if (std::llabs(static_cast<int64_t>(w.calls.size()) - static_cast<int64_t>(work.size())) <
        std::llabs(static_cast<int64_t>(near->calls.size()) - static_cast<int64_t>(work.size())))
      near = &w;
  auto graph = [&](size_t i) { return run.kind[work[i]]; };
  auto cap = [&](size_t j) { return *CapturedWork(near->m->name_of(near->calls[j])); };
  const int64_t gk = count(graph, work.size(), EventKind::kKernel),
                ck = count(cap, near->calls.size(), EventKind::kKernel);
  if (gk != ck) {
    return fmt::format("the graph ran {}; the nearest of {} capture windows launched {}",
                       WorkCounts(gk, count(graph, work.size(), EventKind::kMemcpy),
                                  count(graph, work.size(), EventKind::kMemset)),
                       windows.size(),
                       WorkCounts(ck, count(cap, near->calls.size(), EventKind::kMemcpy),
                                  count(cap, near->calls.size(), EventKind::kMemset)));
  }
  size_t kj = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    if (graph(i) != EventKind::kKernel) continue;
    while (cap(kj) != EventKind::kKernel) ++kj;
    const std::string_view name = CapturedName(*near, near->calls[kj]);
    if (!name.empty() && name != run.name_of(work[i]))
      return fmt::format("kernel {} of {} differs: the graph ran {}, the capture launched {}",
                         i + 1, work.size(), run.name_of(work[i]), name);
    ++kj;
  }
  return "the kernels' order differs from the capture's, and the capture does not name them";
}

// Each graph launch call with its GPU work in start order, launches in start order.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> GraphLaunches(const TraceModel& m) {
  std::map<uint32_t, std::vector<uint32_t>> by_call;
  for (size_t i = 0; i < m.size(); ++i) {
    const int32_t l = m.launcher[i];
    if (IsGpuKind(m.kind[i]) && l >= 0 && IsGraphLaunch(m.name_of(static_cast<size_t>(l))))
      by_call[static_cast<uint32_t>(l)].push_back(static_cast<uint32_t>(i));
  }
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out(by_call.begin(), by_call.end());
  for (auto& [call, work] : out)
    std::ranges::sort(work, [&](uint32_t a, uint32_t b) {
      return m.ts_ns[a] != m.ts_ns[b] ? m.ts_ns[a] < m.ts_ns[b] : a < b;
    });
  std::ranges::sort(
      out, [&](const auto& a, const auto& b) { return m.ts_ns[a.first] < m.ts_ns[b.first]; });
  return out;
}

int64_t GpuNs(const TraceModel& m, const std::vector<uint32_t>& work) {
  int64_t ns = 0;
  for (uint32_t k : work) ns += m.dur_ns[k];
  return ns;
}

// Copies window w's ranges and calls into `run` on `track`, their times mapped into graph launch
// call `call`, and credits the graph's GPU work to the copied calls.
void CopyWindow(TraceModel& run, const Window& w, uint32_t call, const std::vector<uint32_t>& work,
                const Fit& fit, uint32_t track) {
  const TraceModel& cap = *w.m;
  const double scale =
      w.end > w.begin ? static_cast<double>(run.dur_ns[call]) / static_cast<double>(w.end - w.begin)
                      : 0.0;
  auto at = [&](int64_t t) {
    return run.ts_ns[call] + static_cast<int64_t>(static_cast<double>(t - w.begin) * scale);
  };
  auto intern = [&](uint32_t id) {
    return id == kNoName ? kNoName : run.names.Intern(cap.names[id]);
  };
  size_t next_call = 0;
  std::vector<uint32_t> copied(w.calls.size());  // each captured call's copy in `run`
  for (size_t i = 0; i < cap.size(); ++i) {
    const bool is_call = next_call < w.calls.size() && i == w.calls[next_call];
    const bool range = IsHostRange(cap.kind[i]) && cap.track[i] == w.track &&
                       cap.ts_ns[i] >= w.begin && cap.end_ns(i) <= w.end;
    if (!is_call && !range) continue;
    const int64_t ts = at(cap.ts_ns[i]);
    const size_t e = run.Add(cap.kind[i], cap.name_of(i), ts, at(cap.end_ns(i)) - ts, track);
    if (is_call) copied[next_call++] = static_cast<uint32_t>(e);
    run.captured_in.emplace_back(static_cast<uint32_t>(e), call);
    if (const OpInputs* in = cap.InputsOf(i))
      run.AddInputs(static_cast<uint32_t>(e),
                    {intern(in->dims), intern(in->types), intern(in->stack), intern(in->concrete)});
  }
  for (size_t j = 0; j < work.size(); ++j)
    if (fit.call_of[j] >= 0)
      run.captured_launcher.emplace_back(work[j], copied[static_cast<size_t>(fit.call_of[j])]);
}

// A range around an unmatched graph launch call: its GPU work becomes one operator row.
void AddGraphRow(TraceModel& run, uint32_t call, size_t kernels) {
  run.Add(EventKind::kCpuOp,
          fmt::format("{} ({}, {} kernels)", kGraphRowPrefix, run.name_of(call), kernels),
          run.ts_ns[call], run.dur_ns[call], run.track[call]);
}

}  // namespace

GraphMerge MergeGraphCaptures(TraceModel& run, const std::vector<const TraceModel*>& captures) {
  GraphMerge g;
  if (run.launcher.empty()) return g;
  const auto launches = GraphLaunches(run);
  if (launches.empty()) return g;
  std::vector<Window> windows;
  for (const TraceModel* c : captures)
    std::ranges::move(WindowsOf(*c), std::back_inserter(windows));
  std::map<size_t, size_t> uses;       // first matching window -> graph launches given one so far
  std::map<int64_t, uint32_t> tracks;  // pid -> the "captured operators" track
  for (const auto& [call, work] : launches) {
    ++g.graph_launches;
    std::vector<std::pair<size_t, Fit>> fits;
    for (size_t w = 0; w < windows.size(); ++w)
      if (Fit f = Align(windows[w], run, work); f.ok) fits.emplace_back(w, std::move(f));
    if (fits.empty()) {
      if (g.unmapped_ns == 0 && !captures.empty())
        g.first_miss = fmt::format("graph launch {} of {}: {}", g.graph_launches, launches.size(),
                                   WhyNoFit(windows, run, work));
      g.unmapped_ns += GpuNs(run, work);
      AddGraphRow(run, call, work.size());
      continue;
    }
    // Exact fits before those within the tolerance; identical captures (one per layer, or one
    // replayed many times) are used in turn.
    std::ranges::stable_sort(
        fits, [](const auto& a, const auto& b) { return a.second.missed < b.second.missed; });
    std::erase_if(fits,
                  [&](const auto& f) { return f.second.missed > fits.front().second.missed; });
    const auto& [wi, fit] = fits[uses[fits.front().first]++ % fits.size()];
    if (fit.missed > 0 && g.tolerant++ == 0)
      g.first_tolerated =
          fmt::format("graph launch {} of {}: {}", g.graph_launches, launches.size(), fit.differed);
    const Window& w = windows[wi];
    const int64_t pid = run.pid_of(call);
    auto [it, fresh] = tracks.try_emplace(pid, 0);
    if (fresh)
      it->second =
          run.FindOrAddTrack({pid, TraceModel::kStringIdBase + run.names.Intern(kCapturedTrack)});
    CopyWindow(run, w, call, work, fit, it->second);
    ++g.mapped_launches;
    g.mapped_kernels += std::ranges::count_if(fit.call_of, [](int32_t c) { return c >= 0; });
    g.mapped_ns += GpuNs(run, work);
  }
  run.launcher.resize(run.size(), -1);
  std::ranges::sort(run.captured_launcher);
  std::ranges::sort(run.captured_in);
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  if (g.mapped_launches > 0)
    run.AddDiagnostic(
        base::DiagnosticId::kGraphKernelsMapped, g.mapped_kernels,
        fmt::format("{}: {} of {} graph launches ({:.3f} ms of GPU time) credited to "
                    "the operators of their capture trace{}",
                    run.path, g.mapped_launches, g.graph_launches, ms(g.mapped_ns),
                    g.tolerant == 0 ? std::string()
                                    : fmt::format("; {} of them within the tolerance of 0.1 % "
                                                  "of the kernels ({})",
                                                  g.tolerant, g.first_tolerated)));
  if (g.mapped_launches < g.graph_launches)
    run.AddDiagnostic(
        base::DiagnosticId::kGraphKernelsUnmapped, g.graph_launches - g.mapped_launches,
        fmt::format("{}: {} graph launches ({:.3f} ms of GPU time) matched no capture window{}; "
                    "each is one \"{}\" operator row",
                    run.path, g.graph_launches - g.mapped_launches, ms(g.unmapped_ns),
                    captures.empty() ? " (no capture trace: pass --capture-trace)"
                                     : " (" + g.first_miss + ")",
                    kGraphRowPrefix));
  run.graph_capture = {static_cast<int64_t>(captures.size()), g.first_miss};
  return g;
}

const StatusOr<TraceModel>& CaptureCache::Get(const std::string& path) {
  Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<Entry>& slot = entries_[path];
    if (!slot) slot = std::make_unique<Entry>();
    e = slot.get();
  }
  std::call_once(e->once, [&] { e->model.emplace(ReadInput(path, ReadOptions{})); });
  return *e->model;
}

void AttachGraphCaptures(TraceModel& m, const CaptureLister& list_captures, CaptureCache* cache) {
  bool graphs = false;
  for (uint32_t id = 0; id < m.names.size() && !graphs; ++id) graphs = IsGraphLaunch(m.names[id]);
  if (!graphs) return;
  const std::vector<std::string> paths = list_captures(m.path);
  CaptureCache own;  // without a shared cache: read here, for this trace alone
  std::vector<const TraceModel*> ptrs;
  for (const std::string& p : paths) {
    const StatusOr<TraceModel>& c = (cache != nullptr ? *cache : own).Get(p);
    if (c.ok())
      ptrs.push_back(&*c);
    else
      m.AddDiagnostic(base::DiagnosticId::kInputSkipped, 1,
                      fmt::format("capture trace left out: {}", c.status().message()));
  }
  MergeGraphCaptures(m, ptrs);
}

}  // namespace trainprof::trace
