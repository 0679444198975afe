#include "record/statistics.h"

#include <algorithm>
#include <unordered_map>

#include "base/stats.h"

namespace trainprof::record {
namespace {

constexpr double kNs = 1e-9;

}  // namespace

DurationSummary Summarize(std::vector<int64_t>& ns) {
  DurationSummary s;
  if (ns.empty()) return s;
  std::sort(ns.begin(), ns.end());
  s.count = static_cast<int64_t>(ns.size());
  long double total = 0;
  for (int64_t v : ns) total += v;
  s.total_s = static_cast<double>(total) * kNs;
  s.mean_s = s.total_s / static_cast<double>(s.count);
  s.min_s = static_cast<double>(ns.front()) * kNs;
  s.max_s = static_cast<double>(ns.back()) * kNs;
  s.median_s = base::QuantileOfSorted(ns, 0.5) * kNs;
  s.p95_s = base::QuantileOfSorted(ns, 0.95) * kNs;
  return s;
}

std::string_view CategoryOf(std::string_view action) {
  if (action.size() < 2 || action[0] != '[') return {};
  size_t close = action.find(']');
  if (close == std::string_view::npos) return {};
  return action.substr(1, close - 1);
}

std::vector<ActionStats> ComputeActionStats(const std::vector<TimedEvent>& events) {
  struct Acc {
    ActionKind kind;
    uint32_t min_depth;
    std::vector<int64_t> durations;
  };
  std::unordered_map<std::string_view, Acc> by_name;
  for (const TimedEvent& e : events) {
    auto [it, inserted] = by_name.try_emplace(e.loc->name, Acc{e.loc->kind, e.depth, {}});
    Acc& a = it->second;
    a.min_depth = std::min(a.min_depth, e.depth);
    if (a.kind == ActionKind::kOther) a.kind = e.loc->kind;
    a.durations.push_back(e.dur_ns);
  }
  std::vector<ActionStats> out;
  out.reserve(by_name.size());
  for (auto& [name, acc] : by_name) {
    ActionStats s;
    s.name = std::string(name);
    s.category = std::string(CategoryOf(name));
    s.kind = acc.kind;
    s.min_depth = acc.min_depth;
    s.time = Summarize(acc.durations);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const ActionStats& a, const ActionStats& b) {
    if (a.time.total_s != b.time.total_s) return a.time.total_s > b.time.total_s;
    return a.name < b.name;
  });
  return out;
}

bool InConciseSet(const ActionStats& a) { return a.kind != ActionKind::kOther || a.min_depth == 0; }

namespace {

// Per step mark: nanoseconds of data-loader fetches and of collectives inside it.
struct StepTimes {
  std::vector<int64_t> wait_ns, comm_ns;
};

StageSpeed StageSpeedOf(const std::vector<StepMark>& all, const std::vector<int64_t>& stage_steps,
                        const StepTimes& st, int64_t warmup) {
  StageSpeed s;
  s.steps = static_cast<int64_t>(stage_steps.size());
  int64_t total_ns = 0, samples = 0, wait_ns = 0, comm_ns = 0;
  std::vector<int64_t> durations;
  for (int64_t i : stage_steps) {
    const StepMark& m = all[static_cast<size_t>(i)];
    if (m.index_in_stage < warmup) continue;
    ++s.measured_steps;
    durations.push_back(m.end_ns - m.begin_ns);
    total_ns += m.end_ns - m.begin_ns;
    samples += m.batch_size;
    wait_ns += st.wait_ns[static_cast<size_t>(i)];
    comm_ns += st.comm_ns[static_cast<size_t>(i)];
  }
  if (s.measured_steps > 0 && total_ns > 0) {
    double total_s = static_cast<double>(total_ns) * kNs;
    s.mean_step_s = total_s / static_cast<double>(s.measured_steps);
    DurationSummary d = Summarize(durations);
    s.median_step_s = d.median_s;
    s.min_step_s = d.min_s;
    s.max_step_s = d.max_s;
    s.batches_per_s = static_cast<double>(s.measured_steps) / total_s;
    s.samples_per_s = static_cast<double>(samples) / total_s;
    s.data_wait_s = static_cast<double>(wait_ns) * kNs;
    s.data_wait_pct = 100.0 * static_cast<double>(wait_ns) / static_cast<double>(total_ns);
    s.communication_s = static_cast<double>(comm_ns) * kNs;
    s.communication_pct = 100.0 * static_cast<double>(comm_ns) / static_cast<double>(total_ns);
  }
  return s;
}

LoaderSpeed LoaderSpeedOf(const std::vector<StepScope>& scopes, Stage stage) {
  LoaderSpeed l;
  int64_t total_ns = 0, samples = 0;
  for (const StepScope& f : scopes) {
    if (f.kind != ActionKind::kDataLoader || f.stage != stage) continue;
    ++l.fetches;
    total_ns += f.dur_ns;
    samples += f.batch_size;
  }
  if (l.fetches > 0 && total_ns > 0) {
    double n = static_cast<double>(l.fetches);
    l.mean_fetch_s = static_cast<double>(total_ns) * kNs / n;
    l.batches_per_s = 1.0 / l.mean_fetch_s;
    l.samples_per_s = (static_cast<double>(samples) / n) / l.mean_fetch_s;
  }
  return l;
}

std::vector<RatePoint> RateSeries(const std::vector<StepMark>& all,
                                  const std::vector<int64_t>& stage_steps, const StepTimes& st) {
  std::vector<RatePoint> out;
  out.reserve(stage_steps.size());
  for (int64_t i : stage_steps) {
    const StepMark& m = all[static_cast<size_t>(i)];
    int64_t d = m.end_ns - m.begin_ns;
    if (d <= 0) continue;
    double s = static_cast<double>(d) * kNs;
    out.push_back({m.index_in_stage, m.epoch, static_cast<double>(m.end_ns) * kNs, 1.0 / s,
                   static_cast<double>(m.batch_size) / s,
                   static_cast<double>(st.wait_ns[static_cast<size_t>(i)]) * kNs});
  }
  return out;
}

}  // namespace

SpeedStats ComputeSpeed(const std::vector<StepMark>& steps, const std::vector<StepScope>& scopes,
                        int64_t warmup_batches) {
  std::vector<int64_t> train, val;
  for (size_t i = 0; i < steps.size(); ++i) {
    (steps[i].stage == Stage::kTrain ? train : val).push_back(static_cast<int64_t>(i));
  }
  StepTimes st{std::vector<int64_t>(steps.size()), std::vector<int64_t>(steps.size())};
  for (const StepScope& sc : scopes) {
    if (sc.step < 0 || sc.step >= static_cast<int64_t>(steps.size())) continue;
    if (sc.kind == ActionKind::kDataLoader) st.wait_ns[static_cast<size_t>(sc.step)] += sc.dur_ns;
    if (sc.kind == ActionKind::kCommunication) {
      st.comm_ns[static_cast<size_t>(sc.step)] += sc.dur_ns;
    }
  }
  SpeedStats s;
  s.train = StageSpeedOf(steps, train, st, warmup_batches);
  s.validation = StageSpeedOf(steps, val, st, warmup_batches);
  s.train_loader = LoaderSpeedOf(scopes, Stage::kTrain);
  s.validation_loader = LoaderSpeedOf(scopes, Stage::kValidation);
  s.training_rate = RateSeries(steps, train, st);
  s.validation_rate = RateSeries(steps, val, st);
  return s;
}

}  // namespace trainprof::record
