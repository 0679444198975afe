#include "session/cuda_time_extension.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "record/cuda_events.h"

namespace trainprof::session {
namespace {

using report::Column;
using report::Unit;
using report::Value;

struct ActionGpu {
  int64_t calls = 0;
  int64_t wall_ns = 0, gpu_ns = 0;
};

// Wall and GPU time of every scope that has both, by action.
std::map<std::string, ActionGpu> ByAction(const FinishContext& ctx,
                                          const std::vector<int64_t>& gpu_ns) {
  std::map<std::string, ActionGpu> out;
  for (const record::ThreadEvents& t : *ctx.threads) {
    for (const record::Event& e : t.events) {
      if (e.cuda_slot == 0 || e.cuda_slot > gpu_ns.size() || gpu_ns[e.cuda_slot - 1] < 0) continue;
      ActionGpu& a = out[e.loc->name];
      ++a.calls;
      a.wall_ns += ctx.Rel(e.end) - ctx.Rel(e.begin);
      a.gpu_ns += gpu_ns[e.cuda_slot - 1];
    }
  }
  return out;
}

void AddGpuTimeSection(const std::map<std::string, ActionGpu>& actions, report::Report& r) {
  report::Section& s = r.AddSection("gpu_time", "GPU time per action");
  std::vector<Column> cols = {{"action", "Action", Unit::kText},
                              {"calls", "Calls", Unit::kCount},
                              {"wall_mean_s", "Wall mean", Unit::kSeconds},
                              {"gpu_mean_s", "GPU mean", Unit::kSeconds},
                              {"gpu_total_s", "GPU total", Unit::kSeconds},
                              {"gpu_per_wall", "GPU / wall", Unit::kNumber}};
  report::Table& t = s.AddTable("gpu_time", "GPU time per action (sorted by GPU total)", cols);
  std::vector<std::pair<std::string, ActionGpu>> rows(actions.begin(), actions.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.gpu_ns > b.second.gpu_ns; });
  for (const auto& [name, a] : rows) {
    const double n = static_cast<double>(a.calls);
    t.rows.push_back({name, a.calls, a.wall_ns * 1e-9 / n, a.gpu_ns * 1e-9 / n, a.gpu_ns * 1e-9,
                      a.wall_ns > 0 ? Value(static_cast<double>(a.gpu_ns) / a.wall_ns) : Value()});
  }
  t.notes.push_back(
      "GPU time: from a CUDA event recorded on the default stream as the scope began to one "
      "recorded as it ended, i.e. the GPU work queued inside the scope plus any the GPU still "
      "had to finish from before it. Wall time stops when the CPU leaves the scope, often "
      "before its kernels run.");
}

}  // namespace

CudaTimeExtension::CudaTimeExtension() : started_(record::StartCudaEvents(kPairs)) {}

CudaTimeExtension::~CudaTimeExtension() {
  if (started_.ok() && !released_) record::ReleaseCudaEvents();
}

void CudaTimeExtension::OnStop() {
  if (started_.ok()) record::StopCudaEvents();
}

Status CudaTimeExtension::OnFinish(FinishContext& ctx) {
  if (!started_.ok()) {
    ctx.report.diagnostics.push_back(
        {report::DiagnosticId::kCudaEventsUnavailable, 1,
         fmt::format("{}: the report has wall-clock time only", started_.message())});
    return Status::Ok();
  }
  const std::vector<int64_t> gpu_ns = record::CudaEventTimes();
  if (const uint64_t lost = record::CudaEventsExhausted(); lost > 0) {
    ctx.report.diagnostics.push_back(
        {report::DiagnosticId::kCudaEventsExhausted, static_cast<int64_t>(lost),
         fmt::format("time.cuda_events: {} scopes found all {} event pairs used and have no GPU "
                     "time",
                     lost, kPairs)});
  }
  if (ctx.threads != nullptr) AddGpuTimeSection(ByAction(ctx, gpu_ns), ctx.report);
  record::ReleaseCudaEvents();
  released_ = true;
  return Status::Ok();
}

}  // namespace trainprof::session
