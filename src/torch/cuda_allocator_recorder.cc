#include "torch/cuda_allocator_recorder.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>

#include "base/atomic_file.h"
#include "snapshot/run_snapshot.h"
#include "torch/cuda_allocator.h"

namespace trainprof::torchlib {
namespace {

// Events the history keeps when snapshot.max_entries is 0: the Python package sizes the ring
// from the step before recording; here, as it does when recording starts at step 0.
constexpr int64_t kDefaultMaxEntries = 1000000;

}  // namespace

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

void CudaAllocatorRecorder::Start(const Options& o, std::vector<report::Diagnostic>& diags) {
  per_step_ = o.memory.enabled && CudaAllocatorInUse();
  if (!o.snapshot.enabled) return;
  if (!CudaAllocatorInUse()) {
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
  snapshot_ = true;
  window_ = {o.snapshot.warmup, o.snapshot.warmup + o.snapshot.steps};
  stacks_ = o.snapshot.stacks;
  max_entries_ = o.snapshot.max_entries > 0 ? o.snapshot.max_entries : kDefaultMaxEntries;
}

void CudaAllocatorRecorder::OnStep(int64_t step, std::vector<report::Diagnostic>& diags) {
  if (per_step_ && last_step_ >= 0 && step > last_step_) Record(step - 1, diags);
  last_step_ = step;
  if (!snapshot_) return;
  if (step == window_.first && !recording_ && pickle_.empty()) {
    Status st = StartCudaMemoryHistory(stacks_, max_entries_);
    recording_ = st.ok();
    recorded_from_ = step;
    if (!st.ok()) diags.push_back({report::DiagnosticId::kSnapshotNeedsCuda, 1, st.message()});
  } else if (step == window_.end && recording_) {
    Dump(diags);
  }
  if (recording_) MarkStep(step);
}

void CudaAllocatorRecorder::MarkStep(int64_t step) {
  step_mark_.reset();  // its destructor ends the range
  step_mark_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (step_mark_->isActive()) step_mark_->before(fmt::format("ProfilerStep#{}", step));
}

void CudaAllocatorRecorder::Record(int64_t step, std::vector<report::Diagnostic>& diags) {
  auto m = TakeCudaMemoryStep(step);
  if (m.ok()) return cuda_steps_.push_back(*m);
  per_step_ = false;
  diags.push_back({report::DiagnosticId::kCudaMemoryWithoutCuda, 1, m.status().message()});
}

void CudaAllocatorRecorder::Dump(std::vector<report::Diagnostic>& diags) {
  step_mark_.reset();
  recording_ = false;
  auto p = DumpCudaMemoryHistory();
  if (p.ok()) return (void)(pickle_ = std::move(*p));
  diags.push_back({report::DiagnosticId::kSnapshotNeedsCuda, 1, p.status().message()});
}

void CudaAllocatorRecorder::Finish(session::FinishContext& ctx, int64_t rank) {
  std::vector<report::Diagnostic>& diags = ctx.report.diagnostics;
  if (recording_) {
    diags.push_back({report::DiagnosticId::kSnapshotHistory, 1,
                     fmt::format("the run ended inside snapshot.* steps {} to {}: the history "
                                 "covers steps {} to {}",
                                 window_.first, window_.end - 1, recorded_from_, last_step_)});
    Dump(diags);
  } else if (snapshot_ && recorded_from_ < 0) {
    diags.push_back({report::DiagnosticId::kSnapshotHistory, 1,
                     fmt::format("snapshot.warmup is {}, but the run ended at step {}: no "
                                 "allocator history was recorded",
                                 window_.first, last_step_)});
  }
  if (!cuda_steps_.empty()) AddCudaMemorySection(cuda_steps_, ctx.report);
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
    diags.push_back(
        {report::DiagnosticId::kSnapshotUnreadable, 1, fmt::format("{}: {}", file, st.message())});
    return;
  }
  snapshot::AddRunSnapshots({file, std::nullopt}, ctx.report);
}

}  // namespace trainprof::torchlib
