// Rank digests: one small SQLite file per rank (`analyze --digest DIR`) holding what the
// multi-rank questions need, so a second question over the same ranks (another step window,
// `trainprof merge DIR --step-range 10-19`) reads digests, not traces. Tables for pandas and
// DuckDB (meta, steps, collectives, kernels, operators) and the rank's summary (rank_summary.h)
// as blobs, whole and cut to what the questions across ranks read, from which merge rebuilds
// the report. docs/trace-analysis.md
// ("Rank digests") documents every table and column.
//
//   TRAINPROF_RETURN_IF_ERROR(WriteDigest(summary, "digests/rank_00005.digest.sqlite"));
//   StatusOr<RankSummary> s = ReadDigest("digests/rank_00005.digest.sqlite");
//   WindowSummary(*s, 10, 19);  // steps 10 to 19 only
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/rank_summary.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

inline constexpr std::string_view kDigestSuffix = ".digest.sqlite";
inline constexpr int kDigestVersion = 2;  // 2: the SQLite application_id says a digest
// Rows of the kernels and operators tables: the rank's longest, by total (device) time.
inline constexpr size_t kDigestTopRows = 50;

// "rank_00005.digest.sqlite".
std::string DigestFileName(int64_t rank);

// Written under a temporary name and renamed into place. Errors: the file cannot be written
// (naming it and SQLite's words).
Status WriteDigest(const RankSummary& s, const std::string& path);

// What of the rank's summary to read: all of it, or only what the questions across ranks read
// (KeepAcrossRanks), a few KB a rank to decode instead of tens.
enum class DigestPart { kWhole, kAcrossRanks };

// The summary the digest holds. Errors: not SQLite, not a digest, another digest version or
// summary version (the message names the file).
StatusOr<RankSummary> ReadDigest(const std::string& path, DigestPart part = DigestPart::kWhole);

// Keeps only what the views across ranks read (ReportViews::kAcrossRanks): the steps, the
// overview per step, the communication kernels, the distributed view's figures and the path
// marks. Per-rank findings, kernel totals and critical paths, judged over the whole trace, go.
void KeepAcrossRanks(RankAnalysis& a);

// Keeps steps numbered `first` to `last` (ProfilerStep numbers), with their per-step figures,
// and the communication kernels that started within them, then KeepAcrossRanks. Returns the
// steps kept.
size_t WindowSummary(RankSummary& s, int64_t first, int64_t last);

}  // namespace trainprof::analysis
