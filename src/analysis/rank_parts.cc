#include "analysis/rank_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace trainprof::analysis {

namespace {

auto KeyOf(const trace::DeviceInfo& d) {
  return std::tie(d.id, d.name, d.total_memory_bytes, d.compute_major, d.compute_minor, d.num_sms,
                  d.max_threads_per_sm, d.vendor, d.arch);
}

struct DevicesLess {
  bool operator()(const std::vector<trace::DeviceInfo>& a,
                  const std::vector<trace::DeviceInfo>& b) const {
    return std::ranges::lexicographical_compare(
        a, b,
        [](const trace::DeviceInfo& x, const trace::DeviceInfo& y) { return KeyOf(x) < KeyOf(y); });
  }
};

}  // namespace

SharedDevices::SharedDevices(const std::vector<trace::DeviceInfo>& devices) {
  if (devices.empty()) return;
  // Every distinct list this process has seen, kept for its life (a handful).
  static std::mutex mu;
  static std::map<std::vector<trace::DeviceInfo>,
                  std::shared_ptr<const std::vector<trace::DeviceInfo>>, DevicesLess>
      seen;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = seen.try_emplace(devices);
  if (fresh) it->second = std::make_shared<const std::vector<trace::DeviceInfo>>(devices);
  p_ = it->second;
}

const std::vector<trace::DeviceInfo>& SharedDevices::list() const {
  static const std::vector<trace::DeviceInfo> kNone;
  return p_ != nullptr ? *p_ : kNone;
}

bool ProfilesPyTorch(const trace::TraceModel& m) {
  if (m.source == "kineto") return true;
  for (size_t id = 0; id < m.names.size(); ++id) {
    const std::string& n = m.names[static_cast<uint32_t>(id)];
    if (n.starts_with("aten::") || n.starts_with("autograd::") || n.starts_with("ProfilerStep#") ||
        n.starts_with("c10d::") || n.starts_with("torch::"))
      return true;
  }
  return false;
}

RankInfo InfoOf(const trace::TraceModel& m) {
  RankInfo r;
  r.path = m.path;
  r.source = m.source;
  r.rank = m.rank;
  r.world_size = m.world_size;
  r.host_name = m.host_name;
  r.truncated = m.truncated;
  r.json_bytes = m.json_bytes;
  r.events = static_cast<int64_t>(m.size());
  r.devices = m.devices;
  r.peak_allocated_bytes = m.peak_allocated_bytes;
  r.diagnostics = m.diagnostics;
  r.pytorch = ProfilesPyTorch(m);
  return r;
}

std::vector<RankInfo> InfosOf(const std::vector<trace::TraceModel>& models) {
  std::vector<RankInfo> out;
  out.reserve(models.size());
  for (const trace::TraceModel& m : models) out.push_back(InfoOf(m));
  return out;
}

std::string CommKeyText(const RankCommOp& o, const CommNames& names) {
  switch (o.key_kind) {
    case CommKey::kSeq:
      return fmt::format("seq {}", o.key);
    case CommKey::kCommsId:
      return fmt::format("comms id {}", names.at(static_cast<size_t>(o.key)));
    case CommKey::kIssue:
      break;
  }
  return fmt::format("issue {}", o.key);
}

}  // namespace trainprof::analysis
