// A generated world of ranks (util/trace_gen.h) for the straggler at scale: each step every rank
// computes (a GEMM), all-reduces in its tensor-parallel group ("tp0", "tp1", ... of `tp` ranks;
// none when tp is 0), computes again and all-reduces in the data-parallel group ("dp", every
// rank). A collective ends at the same true moment on every rank of its group (the last arrival
// plus the transfer), so the others absorb the culprit's lateness and every step takes the same
// time. Compute has a deterministic jitter of +-0.5 % per rank and step; the culprit's is
// `slow_pct` longer. Each rank's clock is off by up to +-clock_ns.
//
//   auto ranks = GenerateWorld({.ranks = 8, .tp = 4, .culprit = 5});
//   AnalysedRanks r = AnalyseGeneratedRanks(ranks);
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "util/trace_gen.h"

namespace trainprof::testutil {

struct WorldSpec {
  int64_t ranks = 8;
  int64_t tp = 4;         // tensor-parallel group size; 0: data parallel only
  int64_t culprit = 5;    // -1: no slow rank (the control)
  int64_t slow_pct = 25;  // how much longer the culprit computes
  int64_t clock_ns = 50'000'000;
  bool seq = true;  // the collectives carry "Seq"
  int steps = 4;
};

// Per rank, its trace and its clock, in rank order.
std::vector<std::pair<GenTrace, GenRank>> GenerateWorld(const WorldSpec& w);

}  // namespace trainprof::testutil
