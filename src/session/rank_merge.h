// The merged report of a multi-rank run, built by rank 0 from every rank's report.json and
// trace.json (sent through the process group's store, so ranks on other nodes need no shared
// folder): a per-rank table (throughput, step time min/median/max, data-loader wait,
// communication, peak memory, clock offset) naming the slowest rank and its gap to the median,
// and one trace with a process per rank on rank 0's clock.
//
//   session::MergeInput in{.world_size = 2, .launcher = "torchrun", .name = "fashion-mnist"};
//   in.ranks.push_back({.rank = 0, .report_json = ..., .trace_json = ...});
//   in.missing.push_back({1, "sent no report within 300 s"});
//   TRAINPROF_ASSIGN_OR_RETURN(report::Report r, session::MergeRankReports(in));
//   TRAINPROF_RETURN_IF_ERROR(session::WriteMergedTrace(in, "run/trace.json"));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "report/report.h"
#include "trainprof/options.h"
#include "trainprof/status.h"

namespace trainprof::session {

struct RankResult {
  int64_t rank = 0;
  std::string status = "ok";  // "ok", or why the rank's training ended early
  // Rank 0's steady clock = this rank's + clock_offset_ns, within +-clock_error_ns.
  int64_t clock_offset_ns = 0, clock_error_ns = 0;
  std::string report_json;  // the rank's report.json
  std::string trace_json;   // its trace.json; empty when it wrote none
};

struct MergeInput {
  int64_t world_size = 1;
  std::string launcher;  // "torchrun", "slurm"
  std::string name;      // output.name
  std::string run_dir;
  // How the clock offsets were measured, for the report and the trace.
  std::string clock_method =
      "Cristian's algorithm over the process group, shortest of 16 round trips";
  std::vector<RankResult> ranks;                         // those that reported, any order
  std::vector<std::pair<int64_t, std::string>> missing;  // rank, why it has no report
};

// A rank is a straggler finding when its median training step is this much slower than the
// median over ranks.
inline constexpr double kStragglerFindingPct = 5.0;

// Errors: a rank's report.json that does not parse (InvalidArgument naming the rank).
StatusOr<report::Report> MergeRankReports(const MergeInput& in);
// The merged run folder: MergeRankReports(), then its report files (report/run_folder.h) and,
// with `trace`, WriteMergedTrace() into in.run_dir. *summary gets the terminal text once the
// report is built (it stays empty when the merge itself failed). Errors: the first of those.
Status WriteMergedRun(const MergeInput& in, const Options::Output& output, std::string* summary);

// Writes the ranks' traces as one (pid = rank, "rank N" processes, timestamps shifted onto
// rank 0's clock). Errors: a trace that does not parse (naming the rank), the file not written.
Status WriteMergedTrace(const MergeInput& in, const std::string& path);

}  // namespace trainprof::session
