#include "jobs/live_channel.h"

#include <fmt/format.h>

namespace trainprof::jobs {

void StoreLiveChannel::Put(const std::string& digest) {
  (void)dist_->Set(fmt::format("live/{}", dist_->rank()), digest);  // the view is best effort
}

std::vector<std::string> StoreLiveChannel::GatherAll() {
  std::vector<std::string> out(static_cast<size_t>(dist_->world_size()));
  for (int64_t r = 0; r < dist_->world_size(); ++r) {
    const std::string key = fmt::format("live/{}", r);
    StatusOr<bool> set = dist_->Check(key);
    if (!set.ok() || !*set) continue;
    StatusOr<std::string> v = dist_->Get(key, std::chrono::milliseconds(1000));
    if (v.ok()) out[static_cast<size_t>(r)] = std::move(*v);
  }
  return out;
}

}  // namespace trainprof::jobs
