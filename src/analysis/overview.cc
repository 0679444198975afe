#include "analysis/overview.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "analysis/intervals.h"
#include "analysis/kernel_class.h"
#include "analysis/phase_view.h"

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

namespace {

// The category each event's time counts for, or -1 (steps, spans, other events).
std::vector<int8_t> RolesOf(const trace::TraceModel& m,
                            const std::vector<std::string>& dataloader_patterns,
                            const std::vector<std::string>& steps_from) {
  // Collective CPU ops, and the external ids through which kernels belong to them.
  std::vector<int8_t> comm_op(m.names.size(), -1), comm_kernel(m.names.size(), -1),
      loader(m.names.size(), -1);
  auto is_comm_op = [&](size_t i) {
    int8_t& c = comm_op[m.name[i]];
    if (c < 0) c = IsCommunicationOp(m.name_of(i)) ? 1 : 0;
    return c == 1;
  };
  std::unordered_set<int64_t> comm_external;
  for (size_t i = 0; i < m.size(); ++i) {
    EventKind k = m.kind[i];
    if ((k == EventKind::kCpuOp || k == EventKind::kUserAnnotation) && is_comm_op(i) &&
        m.external_id[i] != trace::kNone)
      comm_external.insert(m.external_id[i]);
  }
  std::vector<int8_t> role(m.size(), -1);
  for (size_t i = 0; i < m.size(); ++i) {
    uint32_t nm = m.name[i];
    switch (m.kind[i]) {
      case EventKind::kKernel: {
        int8_t& c = comm_kernel[nm];
        if (c < 0) c = IsCommunicationKernel(m.name_of(i)) ? 1 : 0;
        bool comm =
            c || (m.external_id[i] != trace::kNone && comm_external.count(m.external_id[i]));
        role[i] = comm ? kCommunication : kKernel;
        break;
      }
      case EventKind::kMemcpy:
        role[i] = kMemcpy;
        break;
      case EventKind::kMemset:
        role[i] = kMemset;
        break;
      case EventKind::kRuntime:
      case EventKind::kDriver:
        role[i] = kRuntime;
        break;
      case EventKind::kCpuOp:
      case EventKind::kUserAnnotation:
      case EventKind::kPythonFunction: {
        if (StepNumber(m.name_of(i), steps_from, 0) >= 0) break;
        int8_t& l = loader[nm];
        if (l < 0) l = IsDataLoaderName(m.name_of(i), dataloader_patterns) ? 1 : 0;
        if (l && m.kind[i] != EventKind::kPythonFunction)
          role[i] = kDataLoader;
        else
          role[i] = is_comm_op(i) ? kCommunication : kCpuExec;
        break;
      }
      default:
        break;
    }
  }
  return role;
}

}  // namespace

// One category at a time, so only one category's intervals are held at once.
Overview ComputeOverview(const trace::TraceModel& m, const StepsResult& steps,
                         const std::vector<std::string>& dataloader_patterns,
                         const std::vector<std::string>& steps_from) {
  Overview ov;
  std::vector<int8_t> role = RolesOf(m, dataloader_patterns, steps_from);
  ov.any_communication = std::find(role.begin(), role.end(), kCommunication) != role.end();
  std::array<size_t, kNumCategories> events{};  // per category: room for its intervals, made once
  for (int8_t r : role)
    if (r >= 0) ++events[static_cast<size_t>(r)];
  auto intervals_of = [&](int c) {
    Intervals v;
    v.reserve(events[static_cast<size_t>(c)]);
    for (size_t i = 0; i < m.size(); ++i)
      if (role[i] == c) AppendForUnion(v, {m.ts_ns[i], m.end_ns(i)});
    return v;
  };

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
      claimed = Intersect(Union(intervals_of(c)), slots);
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
