#include "operators/step_memory_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace trainprof::torchlib {
namespace {

using report::Unit;

int64_t MaxOf(const std::vector<CudaMemoryStep>& steps, int64_t CudaMemoryStep::*field) {
  int64_t m = 0;
  for (const CudaMemoryStep& s : steps) m = std::max(m, s.*field);
  return m;
}

void AddRetryWarnings(const std::vector<CudaMemoryStep>& steps, report::Report& report) {
  const CudaMemoryStep& last = steps.back();
  if (last.ooms > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kCudaOutOfMemory, last.ooms,
         fmt::format("the CUDA caching allocator ran out of memory {} time(s) (num_ooms); see "
                     "the cuda_memory table for the step and the snapshot digest for the stacks",
                     last.ooms)});
  }
  if (last.alloc_retries > 0) {
    report.diagnostics.push_back(
        {report::DiagnosticId::kCudaAllocRetries, last.alloc_retries,
         fmt::format("the CUDA caching allocator freed its cache and retried {} allocation(s) "
                     "(num_alloc_retries): memory pressure or fragmentation slows those steps; "
                     "see reserved vs allocated",
                     last.alloc_retries)});
  }
}

}  // namespace

void AddCudaMemorySection(const std::vector<CudaMemoryStep>& steps, report::Report& report) {
  if (steps.empty()) return;
  report::Section& s = report.AddSection("cuda_memory", "CUDA memory per step");
  s.AddMetric("peak_allocated_bytes", "Peak allocated",
              MaxOf(steps, &CudaMemoryStep::allocated_peak), Unit::kBytes);
  s.AddMetric("peak_reserved_bytes", "Peak reserved", MaxOf(steps, &CudaMemoryStep::reserved_peak),
              Unit::kBytes);
  s.AddMetric("peak_active_bytes", "Peak active", MaxOf(steps, &CudaMemoryStep::active_peak),
              Unit::kBytes);
  s.AddMetric("num_alloc_retries", "Allocation retries", steps.back().alloc_retries, Unit::kCount);
  s.AddMetric("num_ooms", "Out-of-memory errors", steps.back().ooms, Unit::kCount);
  report::Table& t = s.AddTable("cuda_memory", "torch.cuda.memory_stats() after each step",
                                {{"step", "Step", Unit::kCount},
                                 {"allocated_bytes", "Allocated", Unit::kBytes},
                                 {"allocated_peak_bytes", "Allocated peak", Unit::kBytes},
                                 {"reserved_bytes", "Reserved", Unit::kBytes},
                                 {"reserved_peak_bytes", "Reserved peak", Unit::kBytes},
                                 {"active_bytes", "Active", Unit::kBytes},
                                 {"active_peak_bytes", "Active peak", Unit::kBytes},
                                 {"alloc_retries", "Alloc retries", Unit::kCount},
                                 {"ooms", "OOMs", Unit::kCount}},
                                report::TableKind::kSeries);
  for (const CudaMemoryStep& m : steps) {
    t.rows.push_back({m.step, m.allocated, m.allocated_peak, m.reserved, m.reserved_peak, m.active,
                      m.active_peak, m.alloc_retries, m.ooms});
  }
  t.notes.push_back(
      "Peaks are per step (the allocator's peak statistics are reset after each step). "
      "Reserved minus allocated is memory the caching allocator holds but no tensor uses.");
  AddRetryWarnings(steps, report);
}

namespace {

constexpr size_t kTopActivationModules = 20;

// The modules by mean bytes saved per step, largest first: the top kTopActivationModules, then
// one row for the rest.
void AddActivationModules(const std::map<std::string, std::pair<int64_t, int64_t>>& modules,
                          int64_t steps, report::Section& s) {
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows(modules.begin(),
                                                                        modules.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  report::Table& m =
      s.AddTable("activation_modules", "Saved for backward, by the innermost module running",
                 {{"module", "Module", Unit::kText},
                  {"mean_bytes", "Mean per step", Unit::kBytes},
                  {"max_bytes", "Max per step", Unit::kBytes}});
  int64_t rest_sum = 0, rest_max = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [name, sm] = rows[i];
    if (i < kTopActivationModules) {
      m.rows.push_back({name, sm.first / steps, sm.second});
    } else {
      rest_sum += sm.first;
      rest_max += sm.second;
    }
  }
  if (rows.size() > kTopActivationModules)
    m.rows.push_back({fmt::format("({} more modules)", rows.size() - kTopActivationModules),
                      rest_sum / steps, rest_max});
  m.notes.push_back(
      "Each saved tensor goes to the innermost module whose forward was running when autograd "
      "saved it (a block called from an nn.ModuleList loop is its own row); \"(Model.forward "
      "itself)\" is the model's own forward between its children. The rest row's max is the sum "
      "of its modules' maxima.");
}

}  // namespace

void AddActivationSection(const std::vector<ActivationStep>& steps, report::Report& report) {
  if (steps.empty()) return;
  report::Section& s = report.AddSection("activation_memory", "Activation memory");
  std::vector<int64_t> bytes;
  std::map<std::string, std::pair<int64_t, int64_t>> modules;  // name -> (sum, max)
  report::Table& t = s.AddTable("activation_steps", "Saved for backward, per step",
                                {{"step", "Step", Unit::kCount},
                                 {"bytes", "Activation memory", Unit::kBytes},
                                 {"tensors", "Tensors", Unit::kCount}},
                                report::TableKind::kSeries);
  for (const ActivationStep& a : steps) {
    t.rows.push_back({a.step, a.bytes, a.tensors});
    bytes.push_back(a.bytes);
    for (const auto& [name, b] : a.by_module) {
      auto& [sum, max] = modules[name];
      sum += b;
      max = std::max(max, b);
    }
  }
  std::sort(bytes.begin(), bytes.end());
  s.AddMetric("activation_peak_bytes", "Peak activation memory", bytes.back(), Unit::kBytes);
  s.AddMetric("activation_median_bytes", "Median activation memory", bytes[bytes.size() / 2],
              Unit::kBytes);
  t.notes.push_back(
      "Exact: the storages of the tensors autograd saved for backward "
      "(torch.autograd.graph.saved_tensors_hooks), parameters excluded, each storage counted "
      "once per step.");
  if (modules.empty()) return;
  AddActivationModules(modules, static_cast<int64_t>(steps.size()), s);
}

}  // namespace trainprof::torchlib
