// The report of `trainprof profile --repeat N`: the job ran N times, each in its own process and
// run folder (repeat1/ ... repeatN/), and the steps are pooled. Run-to-run variance is what
// dominates on a shared machine, and one run cannot show it; N runs can, and the pooled report
// records it, so `trainprof compare` can widen its confidence interval by it.
//
//   std::vector<report::Report> reps = ...;   // each repeat's report.json, in order
//   TRAINPROF_ASSIGN_OR_RETURN(report::Report r, session::PoolRepeats(reps, "runs/x"));
#pragma once

#include <string>
#include <vector>

#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::session {

// Repeat 1's report, with: speed.training_rate holding every repeat's steps and a `repeat`
// column (1..N); the training row of speed.speed_report and the training speed metrics computed
// over the pooled steps after each repeat's warm-up; a "repeats" section with one row per
// repeat (its median and mean step, throughput, data wait) and the run-to-run spread of the
// median step (coefficient of variation, range). Other sections stay repeat 1's, as a note
// says. Errors: fewer than two repeats, or a repeat without speed.training_rate
// (InvalidArgument naming the repeat).
StatusOr<report::Report> PoolRepeats(const std::vector<report::Report>& repeats,
                                     const std::string& run_dir);

}  // namespace trainprof::session
