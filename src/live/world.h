// The live view's world of ranks (issue 57): every rank puts a digest of its snapshot (a few
// hundred bytes of JSON) on the channel its ranks share; rank 0 builds the world from the
// latest digest of each: throughput summed, the step-time skew, the slowest ranks with their
// role (late in collectives: the culprit; waiting in them: a victim) and the ranks that went
// quiet. Rank 0 keeps digests, not events, so 1,000 ranks cost what 8 do, give or take
// kilobytes.
//
//   channel.Put(LiveRankDigest(snapshot, rank, now_ms));
//   LiveWorld w = BuildLiveWorld(channel.GatherAll(), world_size, now_ms, interval_s);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "live/snapshot.h"

namespace trainprof::live {

std::string LiveRankDigest(const LiveSnapshot& s, int64_t rank, int64_t wall_ms);
// `digests[r]`: rank r's latest ("" none yet). A rank is missing when it sent nothing, or sent
// nothing for max(5 s, 5 ticks) and had not finished.
LiveWorld BuildLiveWorld(const std::vector<std::string>& digests, int64_t world_size,
                         int64_t now_ms, double interval_s);

}  // namespace trainprof::live
