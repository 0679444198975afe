#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/clock.h"
#include "gpu/gpu_trace.h"
#include "operators/operator_report.h"
#include "session/extension.h"
#include "session/live.h"
#include "torch/cuda_allocator_recorder.h"
#include "torch/model_summary.h"
#include "torch/op_observer.h"
#include "torch/role_sampler.h"
#include "trace/inprocess/inprocess_reader.h"
#include "trainprof/torch.h"
#if TRAINPROF_HAVE_CUPTI
#include "cupti/cupti_collector.h"
#endif

namespace trainprof {
namespace {

// The process's rank under torchrun (RANK) or Slurm (SLURM_PROCID); 0 when neither is set.
int64_t ProcessRank() { return torchlib::EnvInt({"RANK", "SLURM_PROCID"}, 0); }

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

  // What the collector recorded, once Finish stopped it; null without a collector.
  const gpu::ActivityData* data() const { return data_ ? &*data_ : nullptr; }

  // Stops the collector and adds what it recorded to the trace.
  void Finish(session::FinishContext& ctx) {
#if TRAINPROF_HAVE_CUPTI
    if (!collector_) return;
    gpu::ActivityData& d = data_.emplace(collector_->Stop(ctx.t0_ns));
    collector_.reset();
    if (ctx.trace != nullptr) gpu::AddGpuTrace(d, *ctx.trace);
    if (d.dropped > 0) {
      ctx.report.diagnostics.push_back(
          {report::DiagnosticId::kCudaActivityDropped, static_cast<int64_t>(d.dropped),
           "CUPTI dropped GPU activity records (its buffers were full): GPU times are low"});
    }
#else
    (void)ctx;
#endif
  }

 private:
  std::optional<gpu::ActivityData> data_;
#if TRAINPROF_HAVE_CUPTI
  std::unique_ptr<cupti::Collector> collector_;
#endif
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
  torchlib::CudaAllocatorRecorder cuda;
  std::vector<report::Diagnostic> diagnostics;
  int64_t rank = 0;
  bool skipped_rank = false;
  std::optional<torchlib::RoleSampler> roles;  // TrackRoles()'s model and optimizer
  std::vector<torchlib::RoleSample> role_samples;
  std::vector<torchlib::RoleModule> role_modules;  // at the last sample
  std::optional<int64_t> live_roles_ns;            // when the live view last got memory by role

  void OnStep(int64_t step) override {
    std::lock_guard<std::mutex> lock(mu);
    if (observer) observer->SetStep(step, step < window.end);
    cuda.OnStep(step, diagnostics);
    if (roles && step >= 1) SampleRoles(step - 1);
  }

  // Memory by role at the end of `step`: one sample for the report when the step is recorded,
  // and for the live view at most once a live.interval_s.
  void SampleRoles(int64_t step) {
    const bool record = options.memory.enabled && !skipped_rank && window.Contains(step);
    const int64_t now = base::SteadyNowNs();
    const bool live = session::LiveViewOn(options) &&
                      (!live_roles_ns ||
                       now - *live_roles_ns >= static_cast<int64_t>(options.live.interval_s * 1e9));
    if (!record && !live) return;
    torchlib::RoleSample r = roles->Sample(step, "end of step");
    if (live) {
      live_roles_ns = now;
      session::SetLiveRoles(torchlib::LiveFiguresOf(r));
    }
    if (record) {
      role_samples.push_back(std::move(r));
      role_modules = roles->ByModule();
    }
  }

  void AddRoles(report::Report& r) {
    if (role_samples.empty()) return;
    torchlib::AddRoleSection(role_samples, role_modules, r);
    r.sections.back().notes.push_back(
        "From LibTorch's C++ API at the end of each recorded step, when activations are "
        "freed: what a step holds when its backward begins is the operators section's "
        "activation_memory table. On one GPU the rest of the allocator's total is "
        "temporaries and other.");
  }

  // The recording (trace/inprocess/): the observed calls and the allocator's reports, and the
  // collector's GPU activity.
  trace::InProcessRecording Recording(const session::FinishContext& ctx) const {
    trace::InProcessRecording rec;
    rec.label = ctx.run_dir;
    rec.base_time_ns = base::WallNowNs() - (base::SteadyNowNs() - ctx.t0_ns);
    rec.pid = static_cast<int64_t>(getpid());
    rec.rank = rank;
    rec.world_size = torchlib::EnvInt({"WORLD_SIZE", "SLURM_NTASKS"}, 0);
    rec.ops = &*data;
    rec.gpu = gpu.data();
    for (const record::StepMark& s : ctx.steps)
      if (window.Contains(s.profiler_step))
        rec.steps.push_back({s.profiler_step, s.begin_ns, s.end_ns, s.tid});
    if (!rec.steps.empty()) {
      rec.from_ns = std::ranges::min(rec.steps, {}, &trace::InProcessStep::begin_ns).begin_ns;
      rec.to_ns = std::ranges::max(rec.steps, {}, &trace::InProcessStep::end_ns).end_ns;
    }
    return rec;
  }

  // The calls the operator table counts, by event of `m` (ReadInProcess(rec)): the operator
  // and runtime calls that began in the recorded steps' span (between two steps too). The model
  // has every call that overlaps it, so a call keeps its children whatever step they began in.
  static std::vector<bool> CountedCalls(const trace::InProcessRecording& rec,
                                        const trace::TraceModel& m) {
    std::vector<bool> counted(m.size(), false);
    if (rec.steps.empty()) return counted;
    for (size_t i = 0; i < m.size(); ++i) {
      if (m.kind[i] == trace::EventKind::kUserAnnotation || trace::IsGpuKind(m.kind[i])) continue;
      const int64_t t = m.ts_ns[i] - rec.base_time_ns;
      counted[i] = t >= rec.from_ns && t < rec.to_ns;
    }
    return counted;
  }

  // The recording read as a model gives the operator section (PyTorch's key_averages() on the
  // op tree `trainprof analyze` builds) and the sections analyze gives a trace of these steps
  // (memory; with GPU activity the overview, GPU kernels, HTA's views...), by the same code.
  void AddOperatorSections(session::FinishContext& ctx, report::Report& r) {
    const trace::InProcessRecording rec = Recording(ctx);
    std::vector<trace::TraceModel> models;
    models.push_back(trace::ReadInProcess(rec));
    const std::vector<bool> counted = CountedCalls(rec, models[0]);
    torchlib::OperatorReportInput in{window, options.memory,
                                     static_cast<int64_t>(ctx.steps.size())};
    in.counted = &counted;
    in.data = &*data;
    const analysis::LoadedRun run =
        analysis::AnalyzeModels(std::move(models), torchlib::RecordingRequest());
    torchlib::AddRecordingSections(run, in, ctx.run_dir, "in-process recording: ", r);
    if (ctx.trace != nullptr) torchlib::AddOperatorTrace(*data, window, *ctx.trace);
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
    gpu.Finish(ctx);
    if (data) {
      AddOperatorSections(ctx, r);
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
    AddRoles(r);
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

void TorchProfiler::TrackRoles(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Options& o = impl_->options;
  if ((o.memory.enabled && !impl_->skipped_rank) || session::LiveViewOn(o))
    impl_->roles.emplace(model, optimizer);
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
