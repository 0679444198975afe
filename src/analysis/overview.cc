#include "analysis/overview.h"

#include <unordered_set>

#include "analysis/intervals.h"
#include "analysis/kernel_class.h"

namespace trainprof::analysis {

using trace::EventKind;

const char* CategoryTitle(int c) {
  static constexpr const char* kTitles[] = {"Kernel",  "Memcpy",     "Memset",   "Communication",
                                            "Runtime", "DataLoader", "CPU Exec", "Other"};
  return kTitles[c];
}

const char* CategoryKey(int c) {
  static constexpr const char* kKeys[] = {"kernel",  "memcpy",     "memset",   "communication",
                                          "runtime", "dataloader", "cpu_exec", "other"};
  return kKeys[c];
}

Overview ComputeOverview(const trace::TraceModel& m, const StepsResult& steps) {
  Overview ov;
  // Collective CPU ops, and the external ids through which kernels belong to them.
  std::vector<int8_t> comm_op(m.names.size(), -1), comm_kernel(m.names.size(), -1),
      loader(m.names.size(), -1);
  std::unordered_set<int64_t> comm_external;
  for (size_t i = 0; i < m.size(); ++i) {
    EventKind k = m.kind[i];
    if (k != EventKind::kCpuOp && k != EventKind::kUserAnnotation) continue;
    int8_t& c = comm_op[m.name[i]];
    if (c < 0) c = IsCommunicationOp(m.name_of(i)) ? 1 : 0;
    if (c && m.external_id[i] != trace::kNone) comm_external.insert(m.external_id[i]);
  }
  std::array<Intervals, kNumCategories> roles;
  for (size_t i = 0; i < m.size(); ++i) {
    Interval iv{m.ts_ns[i], m.end_ns(i)};
    uint32_t nm = m.name[i];
    switch (m.kind[i]) {
      case EventKind::kKernel: {
        int8_t& c = comm_kernel[nm];
        if (c < 0) c = IsCommunicationKernel(m.name_of(i)) ? 1 : 0;
        bool comm =
            c || (m.external_id[i] != trace::kNone && comm_external.count(m.external_id[i]));
        roles[comm ? kCommunication : kKernel].push_back(iv);
        break;
      }
      case EventKind::kMemcpy:
        roles[kMemcpy].push_back(iv);
        break;
      case EventKind::kMemset:
        roles[kMemset].push_back(iv);
        break;
      case EventKind::kRuntime:
      case EventKind::kDriver:
        roles[kRuntime].push_back(iv);
        break;
      case EventKind::kCpuOp:
      case EventKind::kUserAnnotation:
      case EventKind::kPythonFunction: {
        if (ProfilerStepNumber(m.name_of(i)) >= 0) break;
        int8_t& l = loader[nm];
        if (l < 0) l = IsDataLoaderOp(m.name_of(i)) ? 1 : 0;
        if (l && m.kind[i] != EventKind::kPythonFunction) {
          roles[kDataLoader].push_back(iv);
        } else {
          int8_t& c = comm_op[nm];
          if (c < 0) c = IsCommunicationOp(m.name_of(i)) ? 1 : 0;
          roles[c ? kCommunication : kCpuExec].push_back(iv);
        }
        break;
      }
      default:
        break;
    }
  }
  ov.any_communication = !roles[kCommunication].empty();

  Intervals step_ranges;
  for (const Step& s : steps.steps) step_ranges.push_back({s.begin_ns, s.end_ns});
  Intervals slots = Union(step_ranges);
  ov.steps.resize(steps.steps.size());
  for (size_t s = 0; s < steps.steps.size(); ++s) {
    ov.steps[s].step = steps.steps[s].name;
    ov.steps[s].total_ns = steps.steps[s].dur_ns();
  }
  for (int c = 0; c < kNumCategories; ++c) {
    Intervals claimed;
    if (c == kOtherTime) {
      claimed = slots;
    } else {
      claimed = Intersect(Union(std::move(roles[c])), slots);
      slots = Subtract(slots, claimed);
    }
    for (size_t s = 0; s < steps.steps.size(); ++s)
      ov.steps[s].ns[c] = LengthWithin(claimed, steps.steps[s].begin_ns, steps.steps[s].end_ns);
  }
  if (!ov.steps.empty()) {
    for (const StepBreakdown& b : ov.steps) {
      ov.avg_total_ns += static_cast<double>(b.total_ns);
      for (int c = 0; c < kNumCategories; ++c) ov.avg_ns[c] += static_cast<double>(b.ns[c]);
    }
    double n = static_cast<double>(ov.steps.size());
    ov.avg_total_ns /= n;
    for (double& v : ov.avg_ns) v /= n;
  }
  return ov;
}

}  // namespace trainprof::analysis
