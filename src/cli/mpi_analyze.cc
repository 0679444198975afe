// `trainprof analyze --mpi PATH` under mpirun: MPI process k reads and summarises its share of
// each run's rank files where they lie (its own ranks' when the file names say which rank each
// is, else files k, k + N, ...); only the summaries (the .tpsum bytes) travel to process 0, a
// few MB at a time, and it writes the report, identical to a run without MPI whatever N. Built
// only when CMake finds MPI (TRAINPROF_HAVE_MPI); otherwise --mpi is an error that says so.
#include <fmt/format.h>

#include "cli/analyze_run.h"

#ifdef TRAINPROF_HAVE_MPI
#include <mpi.h>

#include <algorithm>
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

// One process's results for a run, in messages of about kChunkBytes: per file it read, its
// index in the run, 1 and the summary's bytes, or 0 and the error message. Each result is let go
// as it is packed.
constexpr size_t kChunkBytes = size_t{4} << 20;

std::vector<std::string> Pack(const std::vector<size_t>& index,
                              std::vector<StatusOr<analysis::RankSummary> >& results) {
  std::vector<std::string> chunks(1);
  for (size_t k = 0; k < index.size(); ++k) {
    const bool ok = results[k].ok();
    const std::string bytes =
        ok ? analysis::EncodeSummary(*results[k]) : std::string(results[k].status().message());
    results[k] = InvalidArgument("sent");
    if (chunks.back().size() + bytes.size() > kChunkBytes && !chunks.back().empty())
      chunks.emplace_back();
    std::string& out = chunks.back();
    PutU64(out, index[k]);
    PutU64(out, ok ? 1 : 0);
    PutU64(out, bytes.size());
    out += bytes;
  }
  return chunks;
}

// Decodes one process's packed results into their places in `out` (the run's file order).
void UnpackInto(std::string_view all, std::vector<StatusOr<analysis::RankSummary> >& out) {
  size_t pos = 0;
  uint64_t index = 0, ok = 0, len = 0;
  while (GetU64(all, &pos, &index) && GetU64(all, &pos, &ok) && GetU64(all, &pos, &len)) {
    if (index >= out.size() || all.size() - pos < len) break;
    std::string_view bytes = all.substr(pos, len);
    pos += len;
    out[index] = ok ? analysis::DecodeSummary(bytes)
                    : StatusOr<analysis::RankSummary>(InvalidArgument(std::string(bytes)));
  }
}

constexpr int kResultsTag = 17;

// Process `from`'s packed results, received whole ("" when it sent none it could count in an int).
std::string ReceiveFrom(int from) {
  MPI_Status st;
  MPI_Probe(from, kResultsTag, MPI_COMM_WORLD, &st);
  int len = 0;
  MPI_Get_count(&st, MPI_CHAR, &len);
  std::string bytes(static_cast<size_t>(std::max(len, 0)), '\0');
  MPI_Recv(bytes.data(), len, MPI_CHAR, from, kResultsTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return bytes;
}

// This process's share of a run (trace::ShareOfFiles: its own ranks' files when the names say
// which rank each is), summarised. Process 0 keeps its
// own results as they are and decodes the others' one message at a time (a few MB), letting each
// one's bytes go before the next arrives, so it never holds more than one message's bytes; it
// returns every file's result. The others send theirs and return nothing.
std::vector<StatusOr<analysis::RankSummary> > ShareOfRun(const trace::TraceRun& run,
                                                         const AnalyzeFlags& f, int rank,
                                                         int size) {
  const std::vector<size_t> index = trace::ShareOfFiles(run.files, rank, size);
  std::vector<std::string> mine;
  for (size_t i : index) mine.push_back(run.files[i]);
  std::vector<StatusOr<analysis::RankSummary> > results = SummariseEach(mine, f, run.dir);
  if (rank != 0) {
    std::vector<std::string> chunks = Pack(index, results);
    results.clear();
    // Then an empty message: the end. One over INT_MAX bytes (a single summary that large)
    // cannot be counted in a message: it ends the results early, said as missing ones.
    chunks.emplace_back();
    for (std::string& chunk : chunks) {
      const int len = chunk.size() > INT_MAX ? 0 : static_cast<int>(chunk.size());
      MPI_Send(chunk.data(), len, MPI_CHAR, 0, kResultsTag, MPI_COMM_WORLD);
      std::string().swap(chunk);
      if (len == 0) break;
    }
    return {};
  }
  std::vector<StatusOr<analysis::RankSummary> > out;
  out.reserve(run.files.size());
  for (size_t i = 0; i < run.files.size(); ++i)
    out.emplace_back(InvalidArgument(fmt::format("file {}: no result from its MPI process", i)));
  for (size_t k = 0; k < index.size(); ++k) out[index[k]] = std::move(results[k]);
  results.clear();
  for (int from = 1; from < size; ++from)
    for (std::string chunk = ReceiveFrom(from); !chunk.empty(); chunk = ReceiveFrom(from))
      UnpackInto(chunk, out);
  return out;
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
  // Every process exits with the worst code: process 0's, or a digest another could not write.
  if (DigestFailed().load()) code = std::max(code, kExitNoOutput);
  int worst = code;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  code = worst;
  MPI_Finalize();
  return code;
}
#endif

}  // namespace trainprof::cli
