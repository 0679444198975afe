#include "live/snapshot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/stats.h"

namespace trainprof::live {

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
  f("epoch", s.epoch);
  f("rss_growth_bytes_per_min", s.rss_growth_bytes_per_min);
  f("roles_step", s.roles_step);
  f("parameter_bytes", s.parameter_bytes);
  f("gradient_bytes", s.gradient_bytes);
  f("optimizer_state_bytes", s.optimizer_state_bytes);
  f("other_bytes", s.other_bytes);
}

std::string Mib(const std::optional<double>& bytes) {
  return bytes ? fmt::format("{:.0f} MiB", *bytes / (1 << 20)) : "n/a";
}

// "weights 13 MiB, gradients 13 MiB, optimizer state 26 MiB, other n/a (step 40)"; the view
// has the row only where roles are measured (an optimizer was given to the in-loop sampler).
std::string RolesText(const LiveSnapshot& s) {
  return fmt::format("weights {}, gradients {}, optimizer state {}, other {} (step {})",
                     Mib(s.parameter_bytes), Mib(s.gradient_bytes), Mib(s.optimizer_state_bytes),
                     Mib(s.other_bytes), *s.roles_step);
}

// f(key, field) for the split's shares.
template <class S, class F>
void ForEachShare(S& s, F f) {
  f("data_wait", s.data_wait);
  f("forward", s.forward);
  f("backward", s.backward);
  f("optimizer", s.optimizer);
  f("communication", s.communication);
  f("other", s.other);
}

template <class D, class F>
void ForEachDeviceFigure(D& d, F f) {
  f("util_pct", d.util_pct);
  f("memory_bytes", d.memory_bytes);
  f("memory_pct", d.memory_pct);
  f("power_w", d.power_w);
}

template <class T>
void ReadOptional(const nlohmann::json& j, const char* key, std::optional<T>& field) {
  if (j.contains(key) && j[key].is_number()) field = j[key].get<T>();
}

std::string Pct(double share) { return fmt::format("{:.0f} %", share * 100); }

std::string SplitText(const LiveSplit& p) {
  return fmt::format("data {}, fwd {}, bwd {}, opt {}, comm {}, other {}",
                     p.data_measured ? Pct(p.data_wait) : "n/a", Pct(p.forward), Pct(p.backward),
                     Pct(p.optimizer), Pct(p.communication), Pct(p.other));
}

std::string Gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1 << 30)); }

std::string DeviceText(const LiveDevice& d) {
  auto or_na = [](const std::optional<double>& v, auto fmt_fn) {
    return v ? fmt_fn(*v) : std::string("n/a");
  };
  return fmt::format("GPU {}: util {}, memory {}{}, power {}", d.index,
                     or_na(d.util_pct, [](double v) { return fmt::format("{:.0f} %", v); }),
                     or_na(d.memory_bytes, Gib),
                     d.memory_pct ? fmt::format(" ({:.0f} %)", *d.memory_pct) : std::string(),
                     or_na(d.power_w, [](double v) { return fmt::format("{:.0f} W", v); }));
}

std::string RankText(const LiveRank& r) {
  return fmt::format("rank {} {} ms{}", r.rank, LiveMs(r.step_median_s),
                     r.role.empty() ? "" : " (" + r.role + ")");
}

std::string WorldText(const LiveWorld& w) {
  std::string text = fmt::format("{} of {} ranks, {} samples/s, skew {}", w.reporting, w.world_size,
                                 LiveRate(w.samples_per_s),
                                 w.step_skew ? fmt::format("{:.2f}x", *w.step_skew) : "n/a");
  for (size_t i = 0; i < w.slowest.size(); ++i)
    text += (i == 0 ? "; slowest: " : ", ") + RankText(w.slowest[i]);
  return text;
}

nlohmann::json WorldJson(const LiveWorld& w) {
  nlohmann::json j = {{"world_size", w.world_size},
                      {"reporting", w.reporting},
                      {"missing", w.missing},
                      {"slowest", nlohmann::json::array()}};
  if (w.samples_per_s) j["samples_per_s"] = *w.samples_per_s;
  if (w.step_skew) j["step_skew"] = *w.step_skew;
  for (const LiveRank& r : w.slowest) {
    nlohmann::json rj = {{"rank", r.rank}, {"step", r.step}, {"role", r.role}};
    if (r.step_median_s) rj["step_median_s"] = *r.step_median_s;
    if (r.communication) rj["communication"] = *r.communication;
    j["slowest"].push_back(rj);
  }
  return j;
}

LiveWorld ParseWorld(const nlohmann::json& j) {
  LiveWorld w;
  w.world_size = j.value("world_size", int64_t{0});
  w.reporting = j.value("reporting", int64_t{0});
  ReadOptional(j, "samples_per_s", w.samples_per_s);
  ReadOptional(j, "step_skew", w.step_skew);
  if (j.contains("missing") && j["missing"].is_array())
    for (const auto& m : j["missing"])
      if (m.is_string()) w.missing.push_back(m.get<std::string>());
  if (j.contains("slowest") && j["slowest"].is_array())
    for (const auto& rj : j["slowest"]) {
      if (!rj.is_object()) continue;
      LiveRank& r = w.slowest.emplace_back();
      r.rank = rj.value("rank", int64_t{0});
      r.step = rj.value("step", int64_t{0});
      r.role = rj.value("role", "");
      ReadOptional(rj, "step_median_s", r.step_median_s);
      ReadOptional(rj, "communication", r.communication);
    }
  return w;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// " | split data 12 %, ... | GPU 0: util 93 %, ... | INPUT-BOUND: ..." for what is known.
std::string LineTail(const LiveSnapshot& s) {
  std::string tail;
  if (s.split) tail += " | split " + SplitText(*s.split);
  for (const LiveDevice& d : s.devices) tail += " | " + DeviceText(d);
  if (!s.verdict.empty()) tail += " | " + Upper(s.verdict) + ": " + s.finding;
  if (s.world) {
    tail += " | world " + WorldText(*s.world);
    for (const std::string& m : s.world->missing) tail += " | " + m;
  }
  return tail;
}

// Eight heights, scaled from the shortest to the longest step shown.
std::string Sparkline(const std::vector<double>& v) {
  static const char* kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  std::string out;
  for (double x : v) {
    const double f = *hi > *lo ? (x - *lo) / (*hi - *lo) : 0;
    out += kBars[std::clamp(static_cast<int>(f * 7.999), 0, 7)];
  }
  return out + fmt::format("  {:.1f}–{:.1f} ms, last {} steps", *lo * 1e3, *hi * 1e3, v.size());
}

// 40 cells: D data wait, F forward, B backward, O optimizer, C communication, . other.
std::string SplitBar(const LiveSplit& p) {
  std::string bar;
  auto put = [&](double share, char c) {
    bar.append(static_cast<size_t>(std::lround(std::clamp(share, 0.0, 1.0) * 40)), c);
  };
  put(p.data_wait, 'D');
  put(p.forward, 'F');
  put(p.backward, 'B');
  put(p.optimizer, 'O');
  put(p.communication, 'C');
  bar.resize(40, '.');
  return "[" + bar + "]";
}

// Cuts a line to `width` display columns (UTF-8 continuation bytes take none).
std::string FitWidth(const std::string& line, int width) {
  int cols = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++cols > width)
      return line.substr(0, i);
  }
  return line;
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
  // In time order, before the quantiles below reorder `times`.
  s.recent_step_s.assign(times.end() - static_cast<ptrdiff_t>(std::min(times.size(), kLiveSpark)),
                         times.end());
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

void AddLiveVerdict(LiveSnapshot& s) {
  std::optional<double> busiest;
  for (const LiveDevice& d : s.devices)
    if (d.util_pct) busiest = std::max(busiest.value_or(0), *d.util_pct);
  const LiveSplit* p = s.split ? &*s.split : nullptr;
  if (p != nullptr && p->data_wait >= 0.25) {
    s.verdict = "input-bound";
    s.finding = fmt::format(
        "the loop waits for data {} of its time: more DataLoader workers, pin_memory, prefetch",
        Pct(p->data_wait));
  } else if (p != nullptr && p->communication >= 0.25) {
    s.verdict = "communication-bound";
    s.finding = fmt::format(
        "collectives take {} of the loop: overlap them with backward, or a larger batch per rank",
        Pct(p->communication));
  } else if (busiest && *busiest >= 80) {
    s.verdict = "GPU-bound";
    s.finding = fmt::format(
        "the busiest GPU is {:.0f} % utilised: the kernels set the pace; see the report's "
        "operators",
        *busiest);
  } else if (busiest && *busiest < 50) {
    s.verdict = "host-bound";
    s.finding = fmt::format(
        "the GPUs are at most {:.0f} % utilised: the host does not keep them fed (Python "
        "overhead, small kernels: torch.compile or CUDA graphs)",
        *busiest);
  } else if (p != nullptr && s.devices.empty()) {
    s.verdict = "compute-bound (CPU)";
    s.finding = fmt::format("forward, backward and the optimizer take {} of the loop on the CPU",
                            Pct(p->forward + p->backward + p->optimizer));
  }
  constexpr double kCreepBytesPerMin = 64.0 * (1 << 20);
  if (s.rss_growth_bytes_per_min && *s.rss_growth_bytes_per_min >= kCreepBytesPerMin) {
    const std::string creep = fmt::format("memory creeps: RSS grows {:.0f} MiB a minute",
                                          *s.rss_growth_bytes_per_min / (1 << 20));
    s.finding = s.finding.empty() ? creep : s.finding + "; " + creep;
  }
}

std::string LiveJson(const LiveSnapshot& s) {
  nlohmann::json j = {{"step", s.step}, {"elapsed_s", s.elapsed_s}, {"finished", s.finished}};
  ForEachMeasured(s, [&](const char* key, const auto& v) {
    if (v) j[key] = *v;
  });
  if (!s.recent_step_s.empty()) j["recent_step_s"] = s.recent_step_s;
  if (s.split) {
    nlohmann::json split = nlohmann::json::object();
    ForEachShare(*s.split, [&](const char* key, double v) {
      if (s.split->data_measured || std::string_view(key) != "data_wait") split[key] = v;
    });
    j["split"] = split;
  }
  for (const LiveDevice& d : s.devices) {
    nlohmann::json dev = {{"index", d.index}};
    ForEachDeviceFigure(d, [&](const char* key, const auto& v) {
      if (v) dev[key] = *v;
    });
    j["devices"].push_back(dev);
  }
  if (!s.verdict.empty()) j["verdict"] = s.verdict;
  if (!s.finding.empty()) j["finding"] = s.finding;
  if (s.world) j["world"] = WorldJson(*s.world);
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
  ForEachMeasured(s, [&](const char* key, auto& field) { ReadOptional(j, key, field); });
  if (j.contains("recent_step_s") && j["recent_step_s"].is_array())
    for (const auto& v : j["recent_step_s"])
      if (v.is_number()) s.recent_step_s.push_back(v.get<double>());
  if (j.contains("split") && j["split"].is_object()) {
    s.split.emplace();
    ForEachShare(*s.split, [&](const char* key, double& v) { v = j["split"].value(key, 0.0); });
    s.split->data_measured = j["split"].contains("data_wait");
  }
  if (j.contains("devices") && j["devices"].is_array())
    for (const auto& dj : j["devices"]) {
      if (!dj.is_object()) continue;
      LiveDevice& d = s.devices.emplace_back();
      d.index = dj.value("index", int64_t{0});
      ForEachDeviceFigure(d, [&](const char* key, auto& field) { ReadOptional(dj, key, field); });
    }
  s.verdict = j.value("verdict", "");
  s.finding = j.value("finding", "");
  if (j.contains("world") && j["world"].is_object()) s.world = ParseWorld(j["world"]);
  return s;
}

std::string LiveLine(const LiveSnapshot& s) {
  std::string rss = s.rss_bytes ? fmt::format("{:.0f} MiB", *s.rss_bytes / (1 << 20)) : "n/a";
  std::string cpu = s.cpu_pct ? fmt::format("{:.0f} %", *s.cpu_pct) : "n/a";
  return fmt::format(
             "trainprof live: step {}{} | {} ms/step (median {}, p95 {}) | {} steps/s, {} "
             "samples/s | "
             "RSS {}, CPU {} | {:.0f} s",
             s.step, s.finished ? " (finished)" : "", LiveMs(s.step_last_s),
             LiveMs(s.step_median_s), LiveMs(s.step_p95_s), LiveRate(s.steps_per_s),
             LiveRate(s.samples_per_s), rss, cpu, s.elapsed_s) +
         LineTail(s);
}

std::vector<std::pair<std::string, double>> LiveScalars(const LiveSnapshot& s) {
  std::vector<std::pair<std::string, double>> out;
  auto put = [&](std::string tag, const std::optional<double>& v) {
    if (v) out.emplace_back(std::move(tag), *v);
  };
  put("live/step_time_s", s.step_median_s);
  put("live/steps_per_s", s.steps_per_s);
  put("live/samples_per_s", s.samples_per_s);
  put("training_rate", s.samples_per_s);
  put("live/rss_bytes", s.rss_bytes);
  put("live/cpu_pct", s.cpu_pct);
  put("live/parameter_bytes", s.parameter_bytes);
  put("live/gradient_bytes", s.gradient_bytes);
  put("live/optimizer_state_bytes", s.optimizer_state_bytes);
  put("live/other_bytes", s.other_bytes);
  if (s.split)
    ForEachShare(*s.split, [&](const char* key, double v) {
      if (s.split->data_measured || std::string_view(key) != "data_wait")
        out.emplace_back(fmt::format("live/{}_share", key), v);
    });
  for (const LiveDevice& d : s.devices) {
    const std::string gpu = fmt::format("system/gpu_{}_", d.index);
    put(gpu + "utilization_percentage", d.util_pct);
    if (d.memory_bytes) out.emplace_back(gpu + "memory_usage_megabytes", *d.memory_bytes / 1e6);
    put(gpu + "power_usage_watts", d.power_w);
  }
  return out;
}

std::vector<std::string> LiveView(const LiveSnapshot& s, int width) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "trainprof live | step {}{}{} | {} ms/step (median {}, p95 {}) | {} steps/s, {} samples/s "
      "| {:.0f} s",
      s.step, s.epoch ? fmt::format(", epoch {}", *s.epoch) : "", s.finished ? " (finished)" : "",
      LiveMs(s.step_last_s), LiveMs(s.step_median_s), LiveMs(s.step_p95_s), LiveRate(s.steps_per_s),
      LiveRate(s.samples_per_s), s.elapsed_s));
  lines.push_back("step time  " +
                  (s.recent_step_s.empty() ? std::string("n/a") : Sparkline(s.recent_step_s)));
  lines.push_back("split      " + (s.split ? SplitBar(*s.split) + " " + SplitText(*s.split)
                                           : std::string("n/a (no forward/backward/data scopes "
                                                         "recorded in the last second)")));
  lines.push_back(fmt::format(
      "host       CPU {}, RSS {}{}", s.cpu_pct ? fmt::format("{:.0f} %", *s.cpu_pct) : "n/a",
      s.rss_bytes ? fmt::format("{:.0f} MiB", *s.rss_bytes / (1 << 20)) : "n/a",
      s.rss_growth_bytes_per_min
          ? fmt::format(" ({:+.0f} MiB/min)", *s.rss_growth_bytes_per_min / (1 << 20))
          : ""));
  if (s.roles_step) lines.push_back("memory     " + RolesText(s));
  for (const LiveDevice& d : s.devices) lines.push_back("device     " + DeviceText(d));
  if (s.devices.empty()) lines.push_back("device     n/a (no GPU sampled)");
  if (s.world) {
    lines.push_back("world      " + WorldText(*s.world));
    for (const std::string& m : s.world->missing) lines.push_back("missing    " + m);
  }
  lines.push_back("verdict    " +
                  (s.verdict.empty() ? std::string("n/a") : Upper(s.verdict) + ": " + s.finding));
  for (std::string& l : lines) l = FitWidth(l, width);
  return lines;
}

}  // namespace trainprof::live
