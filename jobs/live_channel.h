// The live view's channel in a multi-rank `trainprof profile` run: the c10d store the ranks
// already share (jobs/distributed.h). Each rank sets live/<rank> to its digest every tick;
// rank 0 reads every rank's key. No new server, and a rank that died only stops updating its
// key, which rank 0's view names.
//
//   session::SetLiveChannel(std::make_shared<jobs::StoreLiveChannel>(dist));
#pragma once

#include <string>
#include <vector>

#include "jobs/distributed.h"
#include "session/live.h"

namespace trainprof::jobs {

class StoreLiveChannel : public session::LiveChannel {
 public:
  explicit StoreLiveChannel(Distributed* dist) : dist_(dist) {}
  int64_t rank() const override { return dist_->rank(); }
  int64_t world_size() const override { return dist_->world_size(); }
  void Put(const std::string& digest) override;
  std::vector<std::string> GatherAll() override;

 private:
  Distributed* dist_;  // outlives the channel: the job clears it before the group goes
};

}  // namespace trainprof::jobs
