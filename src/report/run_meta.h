// The header of a Session's report: version, time, run folder, host, process and clock, in
// the order every renderer shows them.
//
//   report::AddRunMeta({.start_wall_ns = t, .run_dir = dir, ...}, report);
#pragma once

#include <cstdint>
#include <string>

#include "report/report.h"

namespace trainprof::report {

struct RunMetaInput {
  int64_t start_wall_ns = 0;    // system clock at the start (created_utc)
  int64_t start_steady_ns = 0;  // the steady-clock instant trace.json counts from
  int64_t end_ns = 0;           // the session's length
  std::string run_dir;
  int64_t steps = 0;           // Step() calls; -1: not a loop (trainprof run), not shown
  int64_t warmup_dropped = 0;  // scopes of warm-up steps, discarded
  double peak_rss_bytes = -1;  // the run's peak RSS; -1: this process's (getrusage)
};

void AddRunMeta(const RunMetaInput& in, Report& r);

// The meta every report written from traces carries: trainprof_version and created_utc (from
// `unix_ns`), each added when the report has none yet, so a report stamped when it was analysed
// keeps that time when it is written later.
void StampMeta(Report& r, int64_t unix_ns);

}  // namespace trainprof::report
