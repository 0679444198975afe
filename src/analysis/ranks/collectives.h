// Collectives across ranks: each rank's communication kernels (NCCL, RCCL, MSCCL, HCCL, by name
// pattern) matched into one collective by process group and sequence number ("Process Group
// Name" + "Seq", else "Comms Id"), falling back to the order of issue within the group; per
// collective its size, each rank's start and end, the transfer time (the shortest duration
// across ranks: the last rank to arrive does not wait) and each rank's wait (the rest), algbw and
// busbw with NCCL's factor; and the clock offsets between ranks, estimated from collective ends
// (a collective ends at the same moment on every rank), with their residual error.
// docs/trace-analysis.md defines every figure.
//
//   CollectivesResult c = MatchCollectives(models);
//   for (const Collective& x : c.collectives) use(x.transfer_ns, x.ops[x.late].rank);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/rank_parts.h"
#include "trace/trace_model.h"

namespace trainprof::analysis {

// One rank's part of a collective.
struct CommOp {
  size_t model = 0;  // index into the ranks
  int64_t rank = 0;
  uint32_t event = 0;                // index into the rank's RankCommOps
  int64_t start_ns = 0, end_ns = 0;  // on the rank's own clock
  int64_t dur_ns() const { return end_ns - start_ns; }
};

struct Collective {
  std::string group;        // the process group's name; "" when the trace names none
  std::string match;        // how it was matched: "seq 12", "comms id 7", "issue 3"
  std::string type;         // "allreduce", "allgather", "reducescatter", "alltoall", ...
  int64_t bytes = -1;       // message size; -1 when the trace does not give it
  int64_t group_size = 0;   // ranks in the group (the "Group size" arg, else the world size)
  std::vector<CommOp> ops;  // one per rank that ran it, by rank
  int64_t transfer_ns = 0;  // the shortest duration across ranks
  size_t late = 0;          // index in ops of the last rank to arrive (the shortest duration)
  bool inter_node = false;  // its ranks ran on more than one host (host names known)
  int64_t wait_ns(size_t i) const { return ops[i].dur_ns() - transfer_ns; }
  // The sum of the other ranks' waits: what the late rank cost them.
  int64_t caused_wait_ns() const;
  // NCCL's bus-bandwidth factor for this type and group size (nccl-tests' PERFORMANCE.md).
  double BusFactor() const;
  double algbw() const;  // bytes per second of transfer; 0 when the size is unknown
  double busbw() const { return algbw() * BusFactor(); }
};

// A rank's clock against the reference rank (the first model): the median over shared
// collectives of (its end - the reference's end); the residual is what that offset leaves.
struct ClockOffset {
  int64_t rank = 0;
  int64_t offset_ns = 0;
  double residual_rms_ns = 0;
  int64_t residual_max_ns = 0;
  int64_t samples = 0;  // collectives shared with the reference rank
};

struct CollectivesResult {
  std::vector<Collective> collectives;  // seen on at least two ranks, in order of first issue
  std::vector<ClockOffset> offsets;     // one per model, the reference first with offset 0
  int64_t unmatched = 0;                // communication kernels seen on one rank only
  bool by_sequence = false;             // matched by Seq / Comms Id (else by order of issue)
};

// The collective type from the "Collective name" arg or the kernel's name
// ("ncclDevKernel_AllGather_RING_LL" -> "allgather"); "" when neither tells.
std::string CollectiveType(std::string_view arg, std::string_view kernel_name);
// Bytes of one element of a PyTorch dtype name, as collectives' "dtype" or a cpu_op's "Input
// type" write it ("Float" 4, "long int" 8, "BFloat16" 2, "c10::Half" 2); 0 if unknown.
int64_t DtypeBytes(std::string_view dtype);

// Per name id of `m`, whether it is a communication kernel's name: one pattern match per
// distinct kernel name instead of one per event (other names, such as the interned Input Dims,
// are false).
std::vector<bool> CommunicationNames(const trace::TraceModel& m);

// One rank's communication kernels, described, in order of issue (its launch call's start),
// their names added to `names` (RankAnalysis::comm_names).
std::vector<RankCommOp> RankCommOps(const trace::TraceModel& m, CommNames& names);

// Each rank's communication kernels and their names, by pointer: matching reads them where
// they lie (RankAnalysis::comm_ops and comm_names; analyze.h's overload takes the analyses).
struct RankComms {
  const std::vector<RankCommOp>* ops;
  const CommNames* names;
};
using CommOpsOf = std::vector<RankComms>;

// Matches the ranks' RankCommOps (comm_ops[i] of `ranks[i]`), or straight from the models.
// Errors: none; ranks without communication kernels contribute nothing.
CollectivesResult MatchCollectives(const std::vector<RankInfo>& ranks, const CommOpsOf& comm_ops);
CollectivesResult MatchCollectives(const std::vector<trace::TraceModel>& models);

// Whether the clock residual exceeds the median transfer: then the kernels matched are probably
// not the same collectives, so neither the waits nor the offsets are to be used.
bool MatchDoubtful(const CollectivesResult& c);

}  // namespace trainprof::analysis
