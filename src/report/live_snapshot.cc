#include "report/live_snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/stats.h"

namespace trainprof::report {

namespace {

std::string LiveMs(const std::optional<double>& s) {
  return s ? fmt::format("{:.1f}", *s * 1e3) : "n/a";
}

std::string LiveRate(const std::optional<double>& r) {
  return r ? fmt::format("{:.1f}", *r) : "n/a";
}

// f(key, field) for each figure that may be unmeasured, by its live.json key: one list for the
// writer and the reader.
template <class S, class F>
void ForEachMeasured(S& s, F f) {
  f("step_last_s", s.step_last_s);
  f("step_median_s", s.step_median_s);
  f("step_p95_s", s.step_p95_s);
  f("steps_per_s", s.steps_per_s);
  f("samples_per_s", s.samples_per_s);
  f("batch_size", s.batch_size);
  f("rss_bytes", s.rss_bytes);
  f("cpu_pct", s.cpu_pct);
}

}  // namespace

LiveSnapshot BuildLiveSnapshot(int64_t steps, const std::vector<int64_t>& boundaries_ns,
                               const std::vector<int64_t>& batches, int64_t now_ns,
                               int64_t batch_size) {
  LiveSnapshot s;
  s.step = steps;
  s.elapsed_s = static_cast<double>(now_ns) * 1e-9;
  if (batch_size > 0) s.batch_size = batch_size;
  if (boundaries_ns.size() < 2) return s;
  std::vector<double> times;
  for (size_t i = 1; i < boundaries_ns.size(); ++i)
    times.push_back(static_cast<double>(boundaries_ns[i] - boundaries_ns[i - 1]) * 1e-9);
  s.step_last_s = times.back();
  s.step_median_s = base::Quantile(times, 0.5);
  s.step_p95_s = base::Quantile(times, 0.95);
  const double span = static_cast<double>(boundaries_ns.back() - boundaries_ns.front()) * 1e-9;
  if (span > 0) {
    s.steps_per_s = static_cast<double>(times.size()) / span;
    int64_t samples = 0;
    bool known = batches.size() == boundaries_ns.size();
    for (size_t i = 1; known && i < batches.size(); ++i) {
      known = batches[i] > 0;
      samples += batches[i];
    }
    if (known) s.samples_per_s = static_cast<double>(samples) / span;
  }
  return s;
}

std::string LiveJson(const LiveSnapshot& s) {
  nlohmann::json j = {{"step", s.step}, {"elapsed_s", s.elapsed_s}, {"finished", s.finished}};
  ForEachMeasured(s, [&](const char* key, const auto& v) {
    if (v) j[key] = *v;
  });
  return j.dump() + "\n";
}

StatusOr<LiveSnapshot> ParseLiveJson(const std::string& text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number())
    return InvalidArgument(fmt::format("{}: not a trainprof live.json (no \"step\")", where));
  LiveSnapshot s;
  s.step = j["step"].get<int64_t>();
  s.elapsed_s = j.value("elapsed_s", 0.0);
  s.finished = j.value("finished", false);
  ForEachMeasured(s, [&](const char* key, auto& field) {
    if (j.contains(key) && j[key].is_number())
      field = j[key].get<typename std::decay_t<decltype(field)>::value_type>();
  });
  return s;
}

std::string LiveLine(const LiveSnapshot& s) {
  std::string rss = s.rss_bytes ? fmt::format("{:.0f} MiB", *s.rss_bytes / (1 << 20)) : "n/a";
  std::string cpu = s.cpu_pct ? fmt::format("{:.0f} %", *s.cpu_pct) : "n/a";
  return fmt::format(
      "trainprof live: step {}{} | {} ms/step (median {}, p95 {}) | {} steps/s, {} samples/s | "
      "RSS {}, CPU {} | {:.0f} s",
      s.step, s.finished ? " (finished)" : "", LiveMs(s.step_last_s), LiveMs(s.step_median_s),
      LiveMs(s.step_p95_s), LiveRate(s.steps_per_s), LiveRate(s.samples_per_s), rss, cpu,
      s.elapsed_s);
}

}  // namespace trainprof::report
