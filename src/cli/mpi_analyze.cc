// `trainprof analyze --mpi PATH` under mpirun: MPI process k reads and summarises the rank files
// k, k + N, k + 2N, ... of each run; the summaries (the .tpsum bytes) are gathered to process 0,
// which writes the report, identical to a run without MPI. Built only when CMake finds MPI
// (TRAINPROF_HAVE_MPI); otherwise --mpi is an error that says so.
#include <fmt/format.h>

#include "cli/analyze_run.h"

#ifdef TRAINPROF_HAVE_MPI
#include <mpi.h>

#include <climits>
#include <cstring>
#endif

namespace trainprof::cli {

#ifndef TRAINPROF_HAVE_MPI
int RunAnalyzeMpi(const AnalyzeFlags&, const trace::TraceListing&) {
  fmt::print(stderr,
             "trainprof: --mpi: this trainprof was built without MPI (install libopenmpi-dev "
             "and build again; CMake finds it with find_package(MPI))\n");
  return kExitBadInput;
}
#else
namespace {

void PutU64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}

bool GetU64(std::string_view in, size_t* pos, uint64_t* v) {
  if (in.size() - *pos < 8) return false;
  std::memcpy(v, in.data() + *pos, 8);
  *pos += 8;
  return true;
}

// One process's results for a run: per file it read, its index in the run, 1 and the summary's
// bytes, or 0 and the error message.
std::string Pack(const std::vector<size_t>& index,
                 std::vector<StatusOr<analysis::RankSummary> >& results) {
  std::string out;
  for (size_t k = 0; k < index.size(); ++k) {
    const bool ok = results[k].ok();
    const std::string bytes =
        ok ? analysis::EncodeSummary(*results[k]) : std::string(results[k].status().message());
    PutU64(out, index[k]);
    PutU64(out, ok ? 1 : 0);
    PutU64(out, bytes.size());
    out += bytes;
  }
  return out;
}

// Every process's results, back in the run's file order.
std::vector<StatusOr<analysis::RankSummary> > Unpack(std::string_view all, size_t files) {
  std::vector<StatusOr<analysis::RankSummary> > out;
  for (size_t i = 0; i < files; ++i)
    out.emplace_back(InvalidArgument(fmt::format("file {}: no result from its MPI process", i)));
  size_t pos = 0;
  uint64_t index = 0, ok = 0, len = 0;
  while (GetU64(all, &pos, &index) && GetU64(all, &pos, &ok) && GetU64(all, &pos, &len)) {
    if (index >= files || all.size() - pos < len) break;
    std::string_view bytes = all.substr(pos, len);
    pos += len;
    out[index] = ok ? analysis::DecodeSummary(bytes)
                    : StatusOr<analysis::RankSummary>(InvalidArgument(std::string(bytes)));
  }
  return out;
}

// Each process's bytes, concatenated in process order at process 0 ("" elsewhere).
std::string GatherAtRoot(const std::string& mine, int rank, int size) {
  int len = mine.size() > INT_MAX ? -1 : static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), at(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int64_t total = 0;
  for (int i = 0; i < size; ++i) {
    at[static_cast<size_t>(i)] = static_cast<int>(total);
    total += std::max(lens[static_cast<size_t>(i)], 0);
  }
  if (rank == 0 && total > INT_MAX) total = 0;  // MPI counts are ints: said as missing results
  std::string all(rank == 0 ? static_cast<size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), std::max(len, 0), MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR,
              0, MPI_COMM_WORLD);
  return all;
}

// This process's share of a run (files rank, rank + size, ...), summarised and sent to process
// 0, which gets every file's result.
std::vector<StatusOr<analysis::RankSummary> > ShareOfRun(const trace::TraceRun& run,
                                                         const AnalyzeFlags& f, int rank,
                                                         int size) {
  std::vector<std::string> mine;
  std::vector<size_t> index;
  for (size_t i = static_cast<size_t>(rank); i < run.files.size(); i += static_cast<size_t>(size))
    mine.push_back(run.files[i]), index.push_back(i);
  std::string packed;
  {
    // Only the bytes travel: the summaries are let go before the gather, so that process 0
    // does not hold its share three times (summaries, their bytes, and all the bytes).
    std::vector<StatusOr<analysis::RankSummary> > results = SummariseEach(mine, f, run.dir);
    packed = Pack(index, results);
  }
  std::string all = GatherAtRoot(packed, rank, size);
  std::string().swap(packed);
  if (rank != 0) return {};
  return Unpack(all, run.files.size());
}

}  // namespace

int RunAnalyzeMpi(const AnalyzeFlags& f, const trace::TraceListing& listing) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = kExitOk;
  if (rank == 0) {
    code = AnalyzeRuns(f, listing,
                       [&](const trace::TraceRun& run) { return ShareOfRun(run, f, rank, size); });
  } else {
    for (const trace::TraceRun& run : listing.runs) ShareOfRun(run, f, rank, size);
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);  // every process exits as process 0 does
  MPI_Finalize();
  return code;
}
#endif

}  // namespace trainprof::cli
