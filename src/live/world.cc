#include "live/world.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/stats.h"

namespace trainprof::live {

namespace {

struct Digest {
  LiveRank r;
  int64_t wall_ms = 0;
  bool finished = false;
};

std::optional<Digest> ReadDigest(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("rank")) return std::nullopt;
  Digest d;
  d.r.rank = j.value("rank", int64_t{0});
  d.r.step = j.value("step", int64_t{0});
  d.wall_ms = j.value("wall_ms", int64_t{0});
  d.finished = j.value("finished", false);
  auto opt = [&](const char* key, std::optional<double>& v) {
    if (j.contains(key) && j[key].is_number()) v = j[key].get<double>();
  };
  opt("step_median_s", d.r.step_median_s);
  opt("samples_per_s", d.r.samples_per_s);
  opt("communication", d.r.communication);
  if (d.r.step_median_s && d.r.communication)
    d.r.compute_s = *d.r.step_median_s * (1 - *d.r.communication);
  return d;
}

constexpr double kNoise = 0.05;  // shares of the loop closer than this are the same

// The culprit arrives last at the collectives, so it waits in them least; the ranks that wait
// longer than the median are victims of someone else's lateness.
void NameRoles(std::vector<LiveRank>& ranks) {
  std::vector<double> comm;
  for (const LiveRank& r : ranks)
    if (r.communication) comm.push_back(*r.communication);
  if (comm.size() < 2) return;
  const double median = base::Quantile(comm, 0.5);
  const double least = *std::min_element(comm.begin(), comm.end());
  for (LiveRank& r : ranks) {
    if (!r.communication) continue;
    if (*r.communication <= least + kNoise && *r.communication < median - kNoise)
      r.role = "late in collectives";
    else if (*r.communication > median - kNoise && *r.communication > least + kNoise)
      r.role = "waiting in collectives";
  }
}

}  // namespace

std::string LiveRankDigest(const LiveSnapshot& s, int64_t rank, int64_t wall_ms) {
  nlohmann::json j = {
      {"rank", rank}, {"step", s.step}, {"wall_ms", wall_ms}, {"finished", s.finished}};
  if (s.step_median_s) j["step_median_s"] = *s.step_median_s;
  if (s.samples_per_s) j["samples_per_s"] = *s.samples_per_s;
  if (s.split) j["communication"] = s.split->communication;
  return j.dump();
}

LiveWorld BuildLiveWorld(const std::vector<std::string>& digests, int64_t world_size,
                         int64_t now_ms, double interval_s) {
  LiveWorld w;
  w.world_size = world_size;
  const int64_t quiet_ms = std::max<int64_t>(5000, static_cast<int64_t>(5000 * interval_s));
  std::vector<LiveRank> ranks;
  std::optional<double> fastest, slowest;
  for (size_t i = 0; i < static_cast<size_t>(world_size); ++i) {
    const std::optional<Digest> d = ReadDigest(i < digests.size() ? digests[i] : std::string());
    if (!d) {
      w.missing.push_back(fmt::format("rank {}: no snapshot yet", i));
      continue;
    }
    if (!d->finished && now_ms - d->wall_ms > quiet_ms) {
      w.missing.push_back(fmt::format("rank {}: no snapshot for {:.0f} s (last at step {})", i,
                                      (now_ms - d->wall_ms) / 1e3, d->r.step));
      continue;
    }
    ++w.reporting;
    if (d->r.samples_per_s) w.samples_per_s = w.samples_per_s.value_or(0) + *d->r.samples_per_s;
    if (d->r.step_median_s) {
      fastest = std::min(fastest.value_or(*d->r.step_median_s), *d->r.step_median_s);
      slowest = std::max(slowest.value_or(0), *d->r.step_median_s);
    }
    ranks.push_back(d->r);
  }
  if (fastest && *fastest > 0) w.step_skew = *slowest / *fastest;
  NameRoles(ranks);
  auto work = [](const LiveRank& r) { return r.compute_s.value_or(r.step_median_s.value_or(0)); };
  std::sort(ranks.begin(), ranks.end(),
            [&](const LiveRank& a, const LiveRank& b) { return work(a) > work(b); });
  ranks.resize(std::min<size_t>(ranks.size(), 3));
  w.slowest = std::move(ranks);
  return w;
}

}  // namespace trainprof::live
