#include "analysis/findings.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "analysis/dataloader_advice.h"
#include "analysis/op_tree.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/ranks/distributed.h"
#include "analysis/units.h"
#include "report/format.h"

namespace trainprof::analysis {
namespace {

using report::Severity;
using report::Unit;

// What turns matrix cores on for this hardware: on NVIDIA fp16 only before Ampere (7.x: Volta,
// Turing), bf16 and TF32 from 8.0 (Ampere) on; on AMD CDNA bf16 (full rate from CDNA2).
std::string TensorCoreAdvice(const trace::DeviceInfo& d) {
  if (d.vendor == "AMD") {
    return "Enable Automatic Mixed Precision with bfloat16 (torch.autocast(\"cuda\", "
           "dtype=torch.bfloat16)): the matrix cores (MFMA) of CDNA2 and later run bf16 and "
           "fp16 at full rate.";
  }
  if (d.compute_major < 8) {
    return "Enable Automatic Mixed Precision with float16 (torch.autocast(\"cuda\", "
           "dtype=torch.float16) and a GradScaler): this GPU's Tensor Cores take fp16 only; "
           "bf16 and TF32 need compute capability 8.0 or higher.";
  }
  return "Enable Automatic Mixed Precision (torch.autocast with bfloat16 or float16), or TF32 "
         "for float32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True).";
}

// Volta and later; AMD's CDNA (MI100 on) and RDNA3's WMMA.
bool HasMatrixCores(const trace::DeviceInfo& d) {
  if (d.vendor == "AMD")
    return d.arch.starts_with("gfx9") ? d.arch >= "gfx908"
                                      : d.arch.starts_with("gfx11") || d.arch.starts_with("gfx12");
  return d.compute_major >= 7;
}

// Whether the matmuls and convolutions ran in float32: with shapes recorded, some did; without,
// it cannot be told and the kernels' names decide alone.
bool MatmulsInFp32(const RankAnalysis& a) {
  if (!a.tables->flops.has_shapes) return true;
  return std::ranges::any_of(a.lists->flops_operators, [](const FlopsRow& r) {
    return r.precision == Precision::kFp32 && r.device_ns > 0;
  });
}

// The share of the launched GPU time that ran in CUDA / HIP graphs, in percent.
double GraphShare(const LaunchStats& l) {
  return l.gpu_ns > 0 ? 100.0 * static_cast<double>(l.graph_gpu_ns) / l.gpu_ns : 0;
}

// Idle-time advice for a program without PyTorch: its own host code between GPU work, and the tools
// that show it (Nsight Systems' CPU sampling and backtraces, NVTX ranges).
std::string NativeIdleAdvice(int cause) {
  if (cause == kIdleSync)
    return "The host blocks on synchronisations (cudaDeviceSynchronize, cudaStreamSynchronize, "
           "blocking cudaMemcpy) while the GPU has nothing queued: synchronise less often, use "
           "cudaMemcpyAsync with pinned buffers and events, and queue the next work before "
           "waiting.";
  return "The GPU waits for the program's own CPU work between its kernels and copies. Find "
         "that code with Nsight Systems' CPU sampling and backtraces (nsys profile "
         "--sample=cpu --backtrace=dwarf) or NVTX ranges around its phases; then overlap it with "
         "GPU work (streams, asynchronous copies), move it to the GPU, or launch fewer, larger "
         "kernels (fusion, CUDA graphs for repeated launch sequences).";
}

Candidate Make(RuleKey key, int64_t rank, double saves_ns, double figure) {
  Candidate c;
  c.key = std::string(key.key());
  c.rank = rank;
  c.saves_ns = saves_ns;
  c.figure = figure;
  return c;
}

// The data loader's wait pattern (dataloader_advice.h), worked out once per rank and only when a
// finding asks for it: both the DataLoader and the idle-time findings may.
const LoaderWait& LoaderWaitOf(const trace::TraceModel& m, const Overview& ov,
                               std::optional<LoaderWait>& cache) {
  if (!cache) cache = DescribeLoaderWait(ov, FindLoaderWorkers(m));
  return *cache;
}

void StepCandidates(const trace::TraceModel& m, const Overview& ov,
                    std::optional<LoaderWait>& loader, std::vector<Candidate>* out) {
  double step = ov.avg_total_ns;
  if (step <= 0) return;
  double dl_ns = ov.avg_ns[kDataLoader], dl = 100 * dl_ns / step;
  if (dl > kDataLoaderPct) {
    Candidate c = Make("dataloader", m.rank, dl_ns, dl);
    c.root_cause = true;
    c.headline = fmt::format("{{fig}} of the step time is in the DataLoader (threshold {}%)",
                             kDataLoaderPct);
    c.detail = fmt::format("{:.3f} ms of {:.3f} ms", Ms(dl_ns), Ms(step));
    const LoaderWait& w = LoaderWaitOf(m, ov, loader);
    if (!w.detail.empty()) c.detail += "; " + w.detail;
    c.advice = w.advice;
    out->push_back(std::move(c));
  }
  double comm_ns = ov.avg_ns[kCommunication], comm = 100 * comm_ns / step;
  if (comm > kCommunicationPct) {
    Candidate c = Make("communication", m.rank, comm_ns, comm);
    c.root_cause = true;
    c.headline = fmt::format(
        "{{fig}} of the step time is communication not hidden behind computation "
        "(threshold {}%)",
        kCommunicationPct);
    c.detail = fmt::format("{:.3f} ms per step", Ms(comm_ns));
    c.advice =
        "Overlap it (DDP bucket size, FSDP prefetch), compress gradients, accumulate gradients "
        "over more micro-batches, or raise the batch size.";
    out->push_back(std::move(c));
  }
}

// fp32 GEMMs on the CUDA cores of a GPU whose Tensor Cores take TF32 (NVIDIA 8.0 and later).
bool SimtGemmsCouldUseTf32(const trace::DeviceInfo& d, const GpuSummary& g) {
  return d.vendor != "AMD" && d.compute_major >= 8 && g.simt_gemm_pct >= kSimtGemmPct;
}

Candidate SimtGemmCandidate(int64_t rank, const trace::DeviceInfo& d, const GpuSummary& g) {
  Candidate c = Make("tensor_cores", rank, 0, g.simt_gemm_pct);
  c.root_cause = true;
  c.headline = fmt::format(
      "GPU {} ({}) spent {{fig}} of its kernel time in fp32 GEMMs on the CUDA cores (SIMT "
      "kernels: sgemm, ffma or simt in their names), not on the Tensor Cores",
      g.device, g.arch.empty() ? d.name : g.arch);
  c.detail = fmt::format("{:.1f}% of kernel time on Tensor Cores", g.tensor_core_pct);
  c.advice =
      "Let float32 matmuls use TF32 (torch.set_float32_matmul_precision(\"high\"), or "
      "torch.backends.cuda.matmul.allow_tf32 = True), or run them in bf16 under "
      "torch.autocast(\"cuda\", dtype=torch.bfloat16).";
  return c;
}

void GpuCandidates(const trace::TraceModel& m, const RankAnalysis& a, bool training,
                   std::vector<Candidate>* out) {
  bool eligible_ops = false;
  for (size_t i = 0; i < m.size() && !eligible_ops; ++i)
    eligible_ops = m.kind[i] == trace::EventKind::kCpuOp && IsTensorCoreEligibleOp(m.name_of(i));
  for (const GpuSummary& g : a.tables->gpus) {
    if (g.utilization_pct < kLowUtilizationPct) {
      Candidate c =
          Make("low_utilization", m.rank, (100 - g.utilization_pct) / 100 * a.overview.avg_total_ns,
               g.utilization_pct);
      c.headline = fmt::format("GPU {} is busy only {{fig}} of the step time (threshold {}%)",
                               g.device, kLowUtilizationPct);
      c.advice = training ? "Raise the batch size, or find what the GPU waits for in the "
                            "idle-time breakdown below."
                          : "Find what the GPU waits for in the idle-time breakdown below.";
      // Host work with the GPU idle is outside the kernels' span, which the idle-time
      // breakdown covers: say so, or the two read as a contradiction.
      const double alone = a.overview.avg_ns[kCpuExec], step = a.overview.avg_total_ns;
      if (step > 0 && alone > 0.3 * step) {
        c.detail =
            fmt::format("the CPU works alone {:.1f} ms of the {:.1f} ms step", Ms(alone), Ms(step));
        c.advice = ProfilesPyTorch(m)
                       ? "The GPU waits for host work (CPU Exec in the step breakdown), before or "
                         "between its kernels: prepare inputs ahead (DataLoader workers, pinned "
                         "memory, non_blocking copies) or overlap that work with the GPU's."
                       : NativeIdleAdvice(kIdleCpuOps);
      }
      out->push_back(std::move(c));
    }
    const trace::DeviceInfo* d = m.FindDevice(g.device);
    if (d && SimtGemmsCouldUseTf32(*d, g)) {
      out->push_back(SimtGemmCandidate(m.rank, *d, g));
      continue;
    }
    if (d && HasMatrixCores(*d) && g.kernel_ns > 0 && g.tensor_core_pct == 0 && eligible_ops &&
        MatmulsInFp32(a)) {
      Candidate c = Make("tensor_cores", m.rank, 0, static_cast<double>(g.kernel_ns) / 1e6);
      c.root_cause = true;
      c.figure_format = "{:.3f} ms";
      c.headline = fmt::format(
          "GPU {} ({}) ran {{fig}} of kernels with none on {}, although matmul/convolution "
          "operators ran{}",
          g.device, g.arch, d->vendor == "AMD" ? "matrix cores" : "Tensor Cores",
          a.tables->flops.has_shapes ? " in fp32" : "");
      c.advice = TensorCoreAdvice(*d);
      out->push_back(std::move(c));
    }
  }
}

// "HtoD: 23.7 GiB in 1,210 copies at 25.8 GiB/s, 97% of their time pageable" per direction
// that copied, largest first.
std::string CopyDetail(const std::vector<MemcpyBandwidth>& rows) {
  std::string out;
  for (const MemcpyBandwidth& b : rows) {
    if (b.copy_ns <= 0) continue;
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: {} copies, {:.1f} ms", b.direction, b.copies, Ms(b.copy_ns));
    if (b.bytes > 0)
      out +=
          fmt::format(", {} at {}", report::FormatHuman(report::Value(b.bytes), Unit::kBytes),
                      report::FormatHuman(report::Value(b.bytes_per_s()), Unit::kBytesPerSecond));
    if (b.pageable_ns > 0)
      out += fmt::format(", {:.0f}% of the time pageable", 100.0 * b.pageable_ns / b.copy_ns);
  }
  return out;
}

// What fits the copies that dominate: pinned memory first where they are pageable, then the
// direction's own remedies.
std::string CopyAdvice(const std::vector<MemcpyBandwidth>& rows) {
  const MemcpyBandwidth* top = nullptr;
  int64_t pageable = 0, all = 0;
  for (const MemcpyBandwidth& b : rows) {
    if (!top || b.copy_ns > top->copy_ns) top = &b;
    pageable += b.pageable_ns;
    all += b.copy_ns;
  }
  std::string out;
  if (pageable * 2 > all)
    out =
        "Most copy time is from or to pageable host memory: pin it (DataLoader(pin_memory=True), "
        "tensor.pin_memory()) so copies run at full bus speed and can be asynchronous. ";
  const std::string d = top ? top->direction : "";
  if (d == "HtoD")
    return out +
           "Copy once and keep the data on the device (weights, constant inputs, the dataset "
           "when it fits), copy with non_blocking=True and overlap the copies with compute on "
           "another stream, and move fewer bytes (smaller dtypes, transfers of what changed).";
  if (d == "DtoH")
    return out +
           "Keep results on the device: move .cpu(), .item(), .tolist() and logging out of the "
           "step or batch them, and copy with non_blocking=True into pinned buffers.";
  if (d == "DtoD")
    return out +
           "Avoid device copies: .contiguous(), .clone() and dtype conversions of large tensors, "
           "or fuse them away (torch.compile).";
  return out + "Overlap the copies with compute on another stream, and move fewer bytes.";
}

// Copies with no kernel beside them take much of the step: the step is spent copying.
void CopyCandidates(const trace::TraceModel& m, const RankAnalysis& a,
                    std::vector<Candidate>* out) {
  const double step = a.overview.avg_total_ns, copy = a.overview.avg_ns[kMemcpy];
  if (step <= 0 || 100 * copy / step < kCopyPct || copy < a.overview.avg_ns[kKernel]) return;
  Candidate c = Make("copies", m.rank, copy, 100 * copy / step);
  c.root_cause = true;
  c.headline = fmt::format(
      "{{fig}} of the step is memory copies with no kernel running, more than kernels take "
      "(threshold {}%)",
      kCopyPct);
  c.detail = fmt::format("{:.1f} of {:.1f} ms per step; over the trace {}", Ms(copy), Ms(step),
                         CopyDetail(a.tables->memcpy));
  c.advice = CopyAdvice(a.tables->memcpy);
  out->push_back(std::move(c));
}

void MemoryCandidates(const trace::TraceModel& m, bool training, std::vector<Candidate>* out) {
  for (const auto& [dev, peak] : m.peak_allocated_bytes) {
    const trace::DeviceInfo* d = m.FindDevice(dev);
    if (!d || d->total_memory_bytes <= 0) continue;
    double pct = 100.0 * static_cast<double>(peak) / static_cast<double>(d->total_memory_bytes);
    if (pct <= kMemoryNearLimitPct) continue;
    Candidate c = Make("memory_near_limit", m.rank, 0, pct);
    c.root_cause = true;
    c.headline =
        fmt::format("GPU {} memory peaked at {{fig}} of its {:.1f} GiB (threshold {}%)", dev,
                    static_cast<double>(d->total_memory_bytes) / (1 << 30), kMemoryNearLimitPct);
    c.advice = training
                   ? "Use activation checkpointing, mixed precision or a smaller batch before it "
                     "runs out."
                   : "Serving engines take most of the memory on purpose (the KV cache: vLLM's "
                     "gpu_memory_utilization, SGLang's mem_fraction_static); lower that only if "
                     "other processes need memory.";
    out->push_back(std::move(c));
  }
}

// What to do about idle time whose largest cause is `cause` (idle_causes.h).
std::string IdleCauseAdvice(int cause, const LaunchStats& launch, const LoaderWait& loader,
                            bool pytorch) {
  if (!pytorch) return NativeIdleAdvice(cause);
  switch (cause) {
    case kIdleDataLoader:
      return "The GPU waits for the data loader" +
             (loader.detail.empty() ? std::string(". ") : " (" + loader.detail + "). ") +
             loader.advice;
    case kIdleSync:
      return "The host blocks on synchronisations while the GPU has nothing queued. Move "
             ".item(), .cpu(), .tolist() and prints out of the step, copy with "
             "non_blocking=True, and synchronise at most once per step.";
    case kIdleCpuOps:
      return "The CPU is busy running operators between launches (framework overhead per "
             "operator). Launch fewer, larger operators: torch.compile, fused optimizers "
             "(fused=True / foreach=True), a larger batch, or CUDA graphs.";
    case kIdleElsewhere:
      return "The host is between operators while the GPU waits (Python, or a thread the trace "
             "did not record): the loop is CPU bound. CUDA graphs or torch.compile take Python "
             "out of the loop; record with with_stack=True to see which Python it is.";
    default:
      return GraphShare(launch) > 50
                 ? "The CPU does not launch work fast enough, though most GPU time already runs "
                   "in graphs: the gaps are between graph replays (scheduling, sampling, "
                   "synchronisations). Look at the host work between launches."
                 : "The CPU does not launch work fast enough (CPU or launch bound). Use CUDA "
                   "graphs or torch.compile, larger kernels, and keep synchronisations "
                   "(.item(), .cpu()) out of the loop.";
  }
}

// One gap that is most of the idle time is not a slow loop: a warm-up, a compilation, a
// checkpoint, a barrier or a wait for requests.
bool OneLongGap(const IdleCauses& c) {
  return !c.largest.empty() && c.largest[0].dur_ns() * 2 >= c.idle_ns;
}

// The idle time's cause in figures: "491.2 of 512.0 ms of GPU idle time lie in the data
// loader", and one gap that is most of it, named with where it starts.
std::string IdleCauseDetail(const IdleCauses& c) {
  const int cause = c.Largest();
  std::string out =
      fmt::format("{:.1f} of {:.1f} ms of GPU idle time lie {}{}", Ms(c.ns[cause]), Ms(c.idle_ns),
                  cause == kIdleElsewhere ? "" : "in ", IdleCauseName(cause));
  if (OneLongGap(c)) {
    out += fmt::format("; one gap of {:.1f} ms is {:.0f}% of it (the next is {:.2f} ms)",
                       Ms(c.largest[0].dur_ns()),
                       100.0 * c.largest[0].dur_ns() / std::max<int64_t>(1, c.idle_ns),
                       c.largest.size() > 1 ? Ms(c.largest[1].dur_ns()) : 0.0);
  }
  return out;
}

// The advice for one gap that is most of the idle time, naming the host range it lies in.
std::string LongGapAdvice(const IdleGap& g, bool pytorch) {
  const std::string where = g.host.empty()
                                ? std::string("in no profiled range")
                                : fmt::format("in {} ({})", g.host, IdleCauseName(g.cause));
  return fmt::format(
      "Most of the idle time is one gap, not a slow loop: the host was {} for it. A first call "
      "that loads or compiles kernels, a warm-up, a checkpoint, a barrier or a wait for work "
      "looks like this: profile after warm-up ({}), or look at what the host does there (the "
      "gaps table gives its start).",
      where,
      pytorch ? "the schedule's wait and warmup steps"
              : "nsys profile --delay, or cudaProfilerStart/Stop around the steady state");
}

void LaunchCandidates(const trace::TraceModel& m, const RankAnalysis& a, const AnalyzeOptions& o,
                      std::optional<LoaderWait>& loader, std::vector<Candidate>* out) {
  const HtaResult& h = a.tables->hta;
  int64_t host = 0, idle = 0;
  for (const StreamIdle& s : h.idle) {
    host += s.ns[kHostWait];
    for (int64_t v : s.ns) idle += v;
  }
  size_t steps = std::max<size_t>(a.overview.steps.size(), 1);
  if (idle > 0 && h.temporal.span_ns > 0 && h.temporal.idle_ns * 10 > h.temporal.span_ns &&
      100.0 * host / idle > kHostWaitShareOfIdlePct) {
    // The GPU's idle time (not the streams' summed: they overlap) in the host-wait share,
    // per step, and never more than a step.
    const double host_idle_ns = static_cast<double>(h.temporal.idle_ns) * host / idle;
    double saves = host_idle_ns / static_cast<double>(steps);
    if (a.overview.avg_total_ns > 0) saves = std::min(saves, a.overview.avg_total_ns);
    Candidate c = Make("host_wait", m.rank, saves, h.temporal.pct(h.temporal.idle_ns));
    c.root_cause = true;
    c.headline = "The GPU is idle {fig} of its busy span";
    c.detail = fmt::format("{:.1f}% of the idle time is host wait", 100.0 * host / idle);
    if (a.tables->idle.idle_ns > 0) c.detail += "; " + IdleCauseDetail(a.tables->idle);
    c.advice =
        OneLongGap(a.tables->idle)
            ? LongGapAdvice(a.tables->idle.largest[0], ProfilesPyTorch(m))
            : IdleCauseAdvice(a.tables->idle.idle_ns > 0 ? a.tables->idle.Largest() : kIdleLaunch,
                              h.launch, LoaderWaitOf(m, a.overview, loader), ProfilesPyTorch(m));
    out->push_back(std::move(c));
  }
  if (h.launch.graph_launches > 0) {
    Candidate c = Make("graphs", m.rank, 0, GraphShare(h.launch));
    c.severity = Severity::kInfo;
    c.headline = "{fig} of the launched GPU time runs in CUDA/HIP graphs";
    c.detail = fmt::format("{} graph launch{}, {} kernels", h.launch.graph_launches,
                           h.launch.graph_launches == 1 ? "" : "es", h.launch.graph_kernels);
    const auto mapped = static_cast<int64_t>(m.captured_launcher.size());
    c.advice =
        mapped >= h.launch.graph_kernels
            ? "Each graph kernel is credited to the operator that launched it in the graph's "
              "capture trace, so the operator, category and roofline views cover graphed time."
        : mapped > 0 ? fmt::format(
                           "{} of the {} graph kernels are credited to the operators of their "
                           "capture trace; the rest form one \"graph replay\" operator row per "
                           "graph launch.",
                           mapped, h.launch.graph_kernels)
        : m.graph_capture.captures > 0
            ? fmt::format(
                  "No graph launch matched the capture trace given ({}), so each "
                  "graph's kernels form one \"graph replay\" operator row. Capture and "
                  "profile the same graphs (the same batch sizes, one capture trace per "
                  "run).",
                  m.graph_capture.why)
            : "Each graph's kernels form one \"graph replay\" operator row: pass the trace "
              "taken while the graphs were captured (--capture-trace, or a capture_traces/ "
              "folder beside the trace) to credit them to their operators.";
    out->push_back(std::move(c));
  }
  if (h.launch.launches == 0) return;
  double short_pct = 100.0 * h.launch.short_kernels / h.launch.launches;
  // Most GPU time in graphs: the few launches outside them are not where the time goes.
  if (short_pct > kShortKernelPct && GraphShare(h.launch) <= 50) {
    Candidate c = Make("short_kernels", m.rank, 0, short_pct);
    c.headline = fmt::format(
        "{{fig}} of kernels run shorter than the call that launched them (threshold {}%)",
        kShortKernelPct);
    c.detail = fmt::format("{} of {}", h.launch.short_kernels, h.launch.launches);
    c.advice = ProfilesPyTorch(m) ? "Fuse them (torch.compile) or capture them in a CUDA graph."
                                  : "Fuse them into fewer, larger kernels, or capture the repeated "
                                    "launch sequence in a CUDA graph (cudaStreamBeginCapture).";
    out->push_back(std::move(c));
  }
  // A long queue in front of a busy GPU is a well-fed GPU: the delay costs time only when the
  // GPU idles a tenth of its busy span or more.
  const bool gpu_idles = h.temporal.span_ns > 0 && h.temporal.idle_ns * 10 >= h.temporal.span_ns;
  double delay_pct = 100.0 * h.launch.launch_delay_outliers / h.launch.launches;
  if (delay_pct > kLaunchDelayOutlierPct && gpu_idles) {
    Candidate c = Make("launch_delay", m.rank, 0, delay_pct);
    c.headline = fmt::format("{{fig}} of launches wait more than {} µs before the GPU starts them",
                             o.hta.launch_delay_cutoff_ns / 1000);
    // In the tables' units ("209 ms", "12.3 µs"), not always µs.
    c.detail = fmt::format(
        "median {}, p95 {}",
        report::FormatHuman(report::Value(h.launch.median_delay_ns / 1e9), Unit::kSeconds),
        report::FormatHuman(report::Value(h.launch.p95_delay_ns / 1e9), Unit::kSeconds));
    c.advice =
        "The GPU queue is long or blocked. Look for synchronisations and for streams waiting on "
        "each other.";
    out->push_back(std::move(c));
  }
}

void CutCandidates(const trace::TraceModel& m, const RankAnalysis& a, std::vector<Candidate>* out) {
  if (!m.truncated) return;
  Candidate c = Make("truncated", m.rank, 0, 0);
  c.severity = Severity::kError;
  c.headline = a.steps.gpu_data_cut
                   ? "The trace file is cut short and part of its GPU events is lost (Kineto "
                     "writes them last): no GPU figure is given, and no recommendation rests on "
                     "one"
                   : "The trace file is cut short: the figures cover only the events before the "
                     "cut";
  c.advice = "Profile again and let the profiler finish writing the file.";
  out->push_back(std::move(c));
}

std::string Fig(const Candidate& c, double v) {
  return fmt::vformat(c.figure_format, fmt::make_format_args(v));
}

// The candidates of each rule (a straggler is its own rule) as they come, in the order each rule
// first came: what its finding needs (the worst candidate, the range of the figure, the ranks),
// not every candidate, so that the findings of many ranks read each rank's candidates once
// and keep none of them.
class RuleGroups {
 public:
  void Add(const Candidate& c) {
    auto [it, fresh] = index_.try_emplace(c.key, groups_.size());
    if (fresh)
      groups_.push_back({.worst = c,
                         .lo = c.figure,
                         .hi = c.figure,
                         .severity = c.severity,
                         .root_cause = c.root_cause});
    Group& g = groups_[it->second];
    if (c.saves_ns > g.worst.saves_ns ||
        (c.saves_ns == g.worst.saves_ns && c.figure > g.worst.figure))
      g.worst = c;
    g.lo = std::min(g.lo, c.figure);
    g.hi = std::max(g.hi, c.figure);
    g.cost = std::max(g.cost, c.saves_ns);
    g.ranks.push_back(c.rank);
  }

  // One finding per rule: errors first, then root causes that save time, the symptoms that do,
  // those without an estimate, and what the trace is; the largest saving first within a tier,
  // else the order the rules came in.
  std::vector<report::Finding> Findings(bool many_ranks) const {
    std::vector<const Group*> order;
    for (const Group& g : groups_) order.push_back(&g);
    std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
      const int ta = Tier(*a), tb = Tier(*b);
      return ta != tb ? ta < tb : a->cost > b->cost;
    });
    std::vector<report::Finding> out;
    for (const Group* g : order) out.push_back(Merge(*g, many_ranks));
    return out;
  }

 private:
  struct Group {
    Candidate worst;  // the most time saved, then the largest figure; the first of equals
    double lo = 0, hi = 0, cost = 0;
    Severity severity = Severity::kWarning;  // the first candidate's
    bool root_cause = false;                 // the first candidate's
    std::vector<int64_t> ranks;              // one per candidate
  };

  static int Tier(const Group& g) {
    if (g.severity == Severity::kError) return 0;
    if (g.severity == Severity::kInfo) return 4;  // what the trace is, after what to fix
    if (g.cost > 0) return g.root_cause ? 1 : 2;
    return 3;
  }

  // One finding from the same rule's candidates on one or more ranks; `worst` leads the detail.
  static report::Finding Merge(const Group& g, bool many_ranks) {
    const Candidate& worst = g.worst;
    std::string fig = Fig(worst, g.lo) == Fig(worst, g.hi)
                          ? Fig(worst, g.lo)
                          : fmt::format("{}–{}", Fig(worst, g.lo), Fig(worst, g.hi));
    std::string headline = worst.headline;
    if (size_t at = headline.find("{fig}"); at != std::string::npos) headline.replace(at, 5, fig);
    std::string who;
    if (many_ranks)
      who = fmt::format("{} {}: ", g.ranks.size() > 1 ? "Ranks" : "Rank", RankRanges(g.ranks));
    std::string detail = worst.detail;
    if (!detail.empty() && g.ranks.size() > 1)
      detail = fmt::format("rank {}: {}", worst.rank, detail);
    report::Finding f{worst.severity,
                      fmt::format("{}{}{}. {}", who, headline,
                                  detail.empty() ? "" : " (" + detail + ")", worst.advice)};
    f.rule = worst.key;
    std::vector<int64_t> ranks = g.ranks;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    f.ranks = std::move(ranks);
    if (worst.saves_ns > 0) f.saves_s = worst.saves_ns / 1e9;
    return f;
  }

  std::vector<Group> groups_;
  std::unordered_map<std::string, size_t> index_;
};

// Every candidate in order (those across ranks, then each rank's, read back alone when it is
// spilled: ranks/detail_store.h), with the straggler's victims named.
void ForEachCandidate(const std::vector<RankAnalysis>& an, const std::vector<Candidate>& across,
                      const Victims* victims, const std::function<void(const Candidate&)>& f) {
  for (const Candidate& k : across) f(k);
  std::vector<Candidate> scratch, mine;
  for (const RankAnalysis& a : an) {
    mine = CandidatesOf(a, scratch);
    for (Candidate& k : mine) {
      if (victims != nullptr) victims->Name(k);
      f(k);
    }
  }
}

// What a rank's other candidates say against one: a measured host wait outweighs the launch
// delay statistic ("the CPU does not launch fast enough" and "the GPU queue is long" cannot both
// hold), and a symptom (low utilization) with causes listed points at them.
struct Contradictions {
  std::set<int64_t> host_wait, has_cause;  // ranks
  void Add(const Candidate& c) {
    if (c.key == "host_wait") host_wait.insert(c.rank);
    if (c.root_cause && c.saves_ns > 0) has_cause.insert(c.rank);
  }
  // False: `c` is dropped.
  bool Reconcile(Candidate& c) const {
    if (c.key == "launch_delay" && host_wait.contains(c.rank)) return false;
    if (c.key == "low_utilization" && has_cause.contains(c.rank))
      c.advice = "It follows from the causes listed above it; fix those first.";
    return true;
  }
};

}  // namespace

std::string RankRanges(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}–{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

bool HasTrainingLoop(const RankAnalysis& a) {
  for (const PhaseRow& r : a.phases.rows)
    if (r.phase == "backward" || r.phase == "optimizer") return true;
  std::vector<OperatorRow> scratch;  // a spilled rank's read back (ranks/detail_store.h)
  for (const OperatorRow& o : OperatorsOf(a, scratch))
    if (o.name.find("Backward") != std::string::npos || o.name.starts_with("autograd::engine"))
      return true;
  return false;
}

std::vector<Candidate> RankCandidates(const trace::TraceModel& m, const RankAnalysis& a,
                                      const AnalyzeOptions& o) {
  std::vector<Candidate> out;
  CutCandidates(m, a, &out);
  if (a.steps.gpu_data_cut) return out;  // no figure here can be trusted
  // Without a training loop (inference, serving) there is no batch size or activation memory
  // to advise on.
  const bool training = HasTrainingLoop(a);
  std::optional<LoaderWait> loader;
  StepCandidates(m, a.overview, loader, &out);
  GpuCandidates(m, a, training, &out);
  CopyCandidates(m, a, &out);
  MemoryCandidates(m, training, &out);
  LaunchCandidates(m, a, o, loader, &out);
  return out;
}

// True when some trace says it is a rank of a multi-rank job (distributedInfo.world_size > 1);
// files without it (three models' traces in one folder) are only compared side by side.
bool OneDistributedJob(const std::vector<RankInfo>& models) {
  return std::any_of(models.begin(), models.end(),
                     [](const RankInfo& r) { return r.world_size > 1; });
}

std::vector<Candidate> ImbalanceCandidates(const std::vector<RankInfo>& models,
                                           const std::vector<RankAnalysis>& an) {
  if (!OneDistributedJob(models)) return {};
  std::vector<std::pair<double, size_t>> steps;
  for (size_t i = 0; i < an.size(); ++i)
    if (an[i].overview.avg_total_ns > 0) steps.push_back({an[i].overview.avg_total_ns, i});
  if (steps.size() < 2) return {};
  std::sort(steps.begin(), steps.end());
  double median = steps.size() % 2
                      ? steps[steps.size() / 2].first
                      : (steps[steps.size() / 2 - 1].first + steps[steps.size() / 2].first) / 2;
  auto [slowest, i] = steps.back();
  double pct = 100 * (slowest / median - 1);
  if (median <= 0 || pct <= kRankImbalancePct) return {};
  Candidate c = Make("rank_imbalance", models[i].rank, slowest - median, pct);
  c.root_cause = true;
  c.headline = fmt::format(
      "rank {} is the straggler: its steps take {{fig}} longer than the median rank's "
      "(threshold {}%)",
      models[i].rank, kRankImbalancePct);
  c.detail = fmt::format("{:.3f} ms per step against {:.3f} ms", Ms(slowest), Ms(median));
  c.advice =
      "The other ranks wait for it wherever they synchronise (collectives, barriers). Look at "
      "what differs there: its data loading, its GPU (clocks, another process) or more work "
      "(uneven sequence lengths).";
  return {c};
}

void AddFindings(const std::vector<RankInfo>& models, const std::vector<RankAnalysis>& an,
                 const AnalyzeOptions& o, report::Section& rec, const CollectivesResult& c,
                 const CrossRankPath& path) {
  std::vector<Candidate> across = StragglerCandidates(models, an, c, path);
  std::optional<Victims> victims;
  if (!across.empty()) {
    victims.emplace(models, an, c, across.front().rank);
    for (Candidate& k : across) victims->Name(k);
  } else {
    across = ImbalanceCandidates(models, an);
  }
  const Victims* named = victims ? &*victims : nullptr;
  Contradictions against;
  ForEachCandidate(an, across, named, [&](const Candidate& k) { against.Add(k); });
  RuleGroups groups;
  ForEachCandidate(an, across, named, [&](const Candidate& k) {
    Candidate mine = k;
    if (against.Reconcile(mine)) groups.Add(mine);
  });
  for (report::Finding& f : groups.Findings(an.size() > 1)) rec.findings.push_back(std::move(f));
  if (rec.findings.empty())
    rec.findings.push_back({Severity::kInfo, "No recommendation: no threshold was crossed."});
  if (models.size() > 1 && !OneDistributedJob(models)) {
    rec.notes.push_back(fmt::format(
        "The {} traces carry no distributedInfo with a world size above 1: they are compared "
        "side by side, not as ranks of one job, so no straggler or imbalance is named.",
        models.size()));
  }
}

}  // namespace trainprof::analysis
