#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/atomic_file.h"
#include "gpu/correlate.h"
#include "gpu/gpu_trace.h"
#include "operators/operator_report.h"
#include "operators/step_memory_report.h"
#include "session/extension.h"
#include "snapshot/run_snapshot.h"
#include "torch/cuda_allocator.h"
#include "torch/model_summary.h"
#include "torch/op_observer.h"
#include "trainprof/torch.h"
#if TRAINPROF_HAVE_CUPTI
#include "cupti/cupti_collector.h"
#endif

namespace trainprof {
namespace {

// The first of `vars` set to an integer, or `fallback`.
int64_t EnvInt(std::initializer_list<const char*> vars, int64_t fallback) {
  for (const char* var : vars) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long long r = std::strtoll(v, &end, 10);
      if (end != v && *end == '\0') return r;
    }
  }
  return fallback;
}

// The process's rank under torchrun (RANK) or Slurm (SLURM_PROCID); 0 when neither is set.
int64_t ProcessRank() { return EnvInt({"RANK", "SLURM_PROCID"}, 0); }

// The CUDA device a process of a multi-GPU node trains on: its local rank, as `trainprof
// profile`'s job and torchrun scripts choose it (modulo the devices seen).
int LocalDevice() {
  const int64_t n = static_cast<int64_t>(torch::cuda::device_count());
  return n > 0 ? static_cast<int>(EnvInt({"LOCAL_RANK", "SLURM_LOCALID"}, 0) % n) : 0;
}

}  // namespace

// GPU kernels per operator call: a CUPTI collector when the build has one and a driver is there
// (memory.cuda_activity), its hooks given to the operator observer.
class GpuActivity {
 public:
  // Starts the collector as memory.cuda_activity says; a reason it cannot goes in `diags`.
  void Start(const std::string& mode, torchlib::ObserverOptions& oo,
             std::vector<report::Diagnostic>& diags) {
    if (mode == "off") return;
#if TRAINPROF_HAVE_CUPTI
    auto c = cupti::Collector::Start({});
    if (c.ok()) {
      collector_ = std::move(*c);
      oo.on_call_begin = &cupti::Collector::PushCall;
      oo.on_call_end = &cupti::Collector::PopCall;
      return;
    }
    if (mode == "auto" && c.status().code() == StatusCode::kNotFound) return;  // no driver
    const std::string why = c.status().message();
#else
    if (mode == "auto") return;
    const std::string why =
        "this build has no CUPTI collector (configure with TRAINPROF_WITH_CUPTI=ON and the CUDA "
        "toolkit)";
#endif
    diags.push_back({report::DiagnosticId::kCudaActivityUnavailable, 1,
                     fmt::format("memory.cuda_activity is {}, but GPU kernels cannot be recorded: "
                                 "{}; the operator table has no CUDA time columns",
                                 mode, why)});
  }

  // Stops the collector; charges each call's kernels and adds them to the trace.
  void Finish(session::FinishContext& ctx, torchlib::OpData* ops) {
#if TRAINPROF_HAVE_CUPTI
    if (!collector_) return;
    gpu::ActivityData d = collector_->Stop(ctx.t0_ns);
    collector_.reset();
    if (ops != nullptr) gpu::AttributeDeviceTime(d, *ops);
    if (ctx.trace != nullptr) gpu::AddGpuTrace(d, *ctx.trace);
    if (d.dropped > 0) {
      ctx.report.diagnostics.push_back(
          {report::DiagnosticId::kCudaActivityDropped, static_cast<int64_t>(d.dropped),
           "CUPTI dropped GPU activity records (its buffers were full): GPU times are low"});
    }
#else
    (void)ctx, (void)ops;
#endif
  }

 private:
#if TRAINPROF_HAVE_CUPTI
  std::unique_ptr<cupti::Collector> collector_;
#endif
};

// The CUDA allocator through a CUDA LibTorch: its figures at the end of every step
// (memory.enabled) and the memory history of the snapshot.* steps, as the Python package
// records them with torch.cuda.
class CudaAllocatorRecorder {
 public:
  void Start(const Options& o, std::vector<report::Diagnostic>& diags) {
    per_step_ = o.memory.enabled && torchlib::CudaAllocatorInUse();
    device_ = LocalDevice();
    if (!o.snapshot.enabled) return;
    if (!torchlib::CudaAllocatorInUse()) {
      diags.push_back(
          {report::DiagnosticId::kSnapshotNeedsCuda, 1,
           TRAINPROF_TORCH_CUDA
               ? "snapshot.enabled is true, but LibTorch sees no GPU: no memory_snapshot.pickle "
                 "was written"
               : "snapshot.enabled is true, but the CUDA memory snapshot needs trainprof built "
                 "against a CUDA LibTorch and a GPU; this build uses a CPU-only LibTorch, so no "
                 "memory_snapshot.pickle was written"});
      return;
    }
    snapshot_ = {o.snapshot.warmup, o.snapshot.warmup + o.snapshot.steps};
    max_entries_ = o.snapshot.max_entries;
  }

  // Step `step` begins: the last one's figures; the history starts or is dumped at the window's
  // edges.
  void OnStep(int64_t step, std::vector<report::Diagnostic>& diags) {
    if (per_step_ && last_step_ >= 0 && step > last_step_) Record(step - 1, diags);
    last_step_ = step;
    if (step == snapshot_.first && !recording_) {
      Status st = torchlib::StartCudaMemoryHistory(max_entries_);
      recording_ = st.ok();
      if (!st.ok()) diags.push_back({report::DiagnosticId::kSnapshotNeedsCuda, 1, st.message()});
    } else if (step == snapshot_.end && recording_) {
      Dump(diags);
    }
  }

  // The "cuda_memory" section and the snapshot, written into the run folder and analysed.
  void Finish(session::FinishContext& ctx, int64_t rank) {
    if (recording_) Dump(ctx.report.diagnostics);
    if (!cuda_steps_.empty()) torchlib::AddCudaMemorySection(cuda_steps_, ctx.report);
    if (pickle_.empty()) return;
    const bool ranks = EnvInt({"WORLD_SIZE", "SLURM_NTASKS"}, 1) > 1;
    const std::string file =
        ctx.run_dir + (ranks ? fmt::format("/memory_snapshot_rank{}.pickle", rank)
                             : std::string("/memory_snapshot.pickle"));
    base::AtomicFile f;
    Status st = f.Open(file);
    if (st.ok()) f.Write(pickle_), st = f.Commit();
    pickle_.clear();
    if (!st.ok()) {
      ctx.report.diagnostics.push_back({report::DiagnosticId::kSnapshotUnreadable, 1,
                                        fmt::format("{}: {}", file, st.message())});
      return;
    }
    snapshot::AddRunSnapshots({file, std::nullopt}, ctx.report);
  }

 private:
  void Record(int64_t step, std::vector<report::Diagnostic>& diags) {
    auto m = torchlib::TakeCudaMemoryStep(step, device_);
    if (m.ok()) return cuda_steps_.push_back(*m);
    per_step_ = false;
    diags.push_back({report::DiagnosticId::kCudaMemoryWithoutCuda, 1, m.status().message()});
  }
  void Dump(std::vector<report::Diagnostic>& diags) {
    recording_ = false;
    auto p = torchlib::DumpCudaMemoryHistory();
    if (p.ok()) return (void)(pickle_ = std::move(*p));
    diags.push_back({report::DiagnosticId::kSnapshotNeedsCuda, 1, p.status().message()});
  }

  bool per_step_ = false, recording_ = false;
  int device_ = 0;
  int64_t last_step_ = -1, max_entries_ = 0;
  torchlib::StepRange snapshot_{-1, -1};
  std::vector<torchlib::CudaMemoryStep> cuda_steps_;
  std::string pickle_;
};

class TorchProfilerImpl : public session::Extension {
 public:
  Options options;
  torchlib::StepRange window;  // recorded steps
  std::mutex mu;
  std::unique_ptr<torchlib::OpObserver> observer;  // while observing
  std::optional<torchlib::OpData> data;            // once collected (times in ticks)
  std::optional<torchlib::ModelSummary> summary;
  GpuActivity gpu;
  CudaAllocatorRecorder cuda;
  std::vector<report::Diagnostic> diagnostics;
  int64_t rank = 0;
  bool skipped_rank = false;

  void OnStep(int64_t step) override {
    std::lock_guard<std::mutex> lock(mu);
    if (observer) observer->SetStep(step, step < window.end);
    cuda.OnStep(step, diagnostics);
  }

  bool Claims(std::string_view key) const override {
    return key == "memory.enabled" || key == "model_summary.enabled" || key == "snapshot.enabled";
  }

  // Collects what the observer recorded and removes it (on the thread that installed it).
  void StopObserver() {
    std::lock_guard<std::mutex> lock(mu);
    if (!observer) return;
    data = observer->Collect();
    observer.reset();
  }

  Status OnFinish(session::FinishContext& ctx) override {
    StopObserver();
    std::lock_guard<std::mutex> lock(mu);
    report::Report& r = ctx.report;
    for (report::Diagnostic& d : diagnostics) r.diagnostics.push_back(std::move(d));
    diagnostics.clear();
    if (data) torchlib::ToSessionTime(*data, ctx.conv, ctx.t0_ns);
    gpu.Finish(ctx, data ? &*data : nullptr);
    if (data) {
      torchlib::OperatorReportInput in{*data, window, options.memory,
                                       static_cast<int64_t>(ctx.steps.size())};
      torchlib::AddOperatorSection(in, r);
      if (ctx.trace != nullptr) torchlib::AddOperatorTrace(in, *ctx.trace);
    } else if (skipped_rank) {
      r.diagnostics.push_back(
          {report::DiagnosticId::kOperatorsNotOnThisRank, 1,
           fmt::format("memory.trace_rank0_only is true and this is rank {}: operators were not "
                       "observed",
                       rank)});
    }
    Status st = Status::Ok();
    if (options.model_summary.enabled) {
      if (summary) {
        st = torchlib::AddModelSummary(*summary, options.model_summary.depth, ctx.run_dir, r);
      } else {
        r.diagnostics.push_back({report::DiagnosticId::kModelSummaryNotTaken, 1,
                                 "model_summary.enabled is true, but the program never called "
                                 "TorchProfiler::SummarizeModel(): there is no model summary"});
      }
    }
    cuda.Finish(ctx, rank);
    return st;
  }
};

TorchProfiler::TorchProfiler(std::shared_ptr<TorchProfilerImpl> impl) : impl_(std::move(impl)) {}

TorchProfiler::~TorchProfiler() { impl_->StopObserver(); }

StatusOr<std::unique_ptr<TorchProfiler>> TorchProfiler::Attach(Session& session) {
  auto impl = std::make_shared<TorchProfilerImpl>();
  impl->options = session.options();
  const Options::Memory& m = impl->options.memory;
  impl->window = {m.warmup, m.warmup + m.steps};
  impl->rank = ProcessRank();
  if (m.enabled) {
    if (m.trace_rank0_only && impl->rank != 0) {
      impl->skipped_rank = true;
    } else {
      torchlib::ObserverOptions oo;
      oo.record_shapes = m.record_shapes;
      oo.events_per_thread = impl->options.buffer.events_per_thread;
      impl->gpu.Start(m.cuda_activity, oo, impl->diagnostics);
      TRAINPROF_ASSIGN_OR_RETURN(impl->observer, torchlib::OpObserver::Install(oo));
    }
  }
  impl->cuda.Start(impl->options, impl->diagnostics);
  TRAINPROF_RETURN_IF_ERROR(session::AttachExtension(session, impl));
  return std::unique_ptr<TorchProfiler>(new TorchProfiler(std::move(impl)));
}

Status TorchProfiler::SummarizeModule(torch::nn::Module& module, std::vector<torch::Tensor> inputs,
                                      const std::function<torch::Tensor()>& forward) {
  TorchProfilerImpl& p = *impl_;
  if (!p.options.model_summary.enabled) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.observer) p.observer->Suspend(true);
  }
  torchlib::ModelSummary s;
  Status st = torchlib::SummarizeModule(module, inputs, forward, &s);
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.observer) p.observer->Suspend(false);
  p.summary = std::move(s);
  if (!st.ok()) {
    p.diagnostics.push_back({report::DiagnosticId::kModelSummaryWithoutShapes, 1, st.message()});
  }
  return st;
}

}  // namespace trainprof
