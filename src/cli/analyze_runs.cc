// The runs of `trainprof analyze` (and of `--mpi`'s process 0) from rank summaries: each file
// read and summarised on its reading thread (its model dropped there), the run's summaries
// combined, then its report written, or with --summary-only the summaries themselves.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/analyze.h"
#include "analysis/rank_summary.h"
#include "analysis/ranks/digest.h"
#include "base/atomic_file.h"
#include "base/parallel.h"
#include "cli/analyze_run.h"

namespace trainprof::cli {

ReadProgress::ReadProgress(const AnalyzeFlags& f, size_t files)
    : progress_(f.format == "json" || f.quiet ? "off" : f.progress), files_(files) {}

ReadProgress::~ReadProgress() { End(); }

void ReadProgress::End() {
  if (began_) progress_.End();
  began_ = false;
}

std::function<void(int64_t, int64_t)> ReadProgress::Callback() {
  if (progress_.off()) return {};  // nothing to show: the files are not even sized
  return [this](int64_t done, int64_t total) { Update(done, total); };
}

void ReadProgress::Update(int64_t done, int64_t total) {
  if (total < (int64_t{32} << 20)) return;  // only inputs big enough to wait for
  if (!began_) {
    progress_.Begin(fmt::format("reading {} trace file{}", files_, files_ == 1 ? "" : "s"),
                    total >> 20, "MiB");
    began_ = true;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - last_ns_ < 100'000'000) return;
  last_ns_ = now;
  progress_.Update(done >> 20, "");
}

namespace {

bool MakeDigestFolder(const AnalyzeFlags& f) {
  std::error_code ec;
  std::filesystem::create_directories(f.digest, ec);
  if (!ec) return true;
  fmt::print(stderr, "trainprof: {}: cannot create: {}\n", f.digest, ec.message());
  return false;
}

bool WriteOneDigest(const analysis::RankSummary& s, const AnalyzeFlags& f) {
  Status w = analysis::WriteDigest(
      s, fmt::format("{}/{}", f.digest, analysis::DigestFileName(s.info.rank)));
  if (!w.ok()) fmt::print(stderr, "trainprof: {}\n", w.message());
  return w.ok();
}

}  // namespace

bool WriteDigests(analysis::RankResults& results, const AnalyzeFlags& f) {
  if (f.digest.empty()) return true;
  if (!MakeDigestFolder(f)) return false;
  std::atomic<bool> ok{true};
  base::ParallelFor(results.size(), f.threads, [&](size_t i) {
    if (!results.status(i).ok()) return;
    results.WithSummary(i, [&](analysis::RankSummary& s) {
      if (!WriteOneDigest(s, f)) ok = false;
    });
  });
  return ok;
}

analysis::RankResults SummariseEach(
    const std::vector<std::string>& files, const AnalyzeFlags& f, const std::string& input,
    const std::function<void(size_t, StatusOr<analysis::RankSummary>)>& take,
    const std::function<bool(size_t)>& claim) {
  ReadProgress progress(f, files.size());
  analysis::RunHooks hooks{progress.Callback(), {}, {}, {}, claim};
  if (take) {
    if (!f.digest.empty() && !MakeDigestFolder(f)) DigestFailed().store(true);
    hooks.take = [&](size_t i, StatusOr<analysis::RankSummary> r) {
      if (r.ok() && !f.digest.empty() && !WriteOneDigest(*r, f)) DigestFailed().store(true);
      take(i, std::move(r));
    };
  }
  auto results = analysis::SummariseFiles(files, f, input, hooks);
  if (!take && !WriteDigests(results, f)) DigestFailed().store(true);
  return results;
}

std::atomic<bool>& DigestFailed() {
  static std::atomic<bool> failed{false};
  return failed;
}

Status WriteSummaries(analysis::RankResults& all, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument(fmt::format("{}: cannot create: {}", dir, ec.message()));
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string name = std::filesystem::path(all.info(i).path).filename().string();
    std::string bytes;
    all.WithSummary(i, [&](analysis::RankSummary& s) { bytes = analysis::EncodeSummary(s); });
    TRAINPROF_RETURN_IF_ERROR(base::WriteFileAtomically(
        fmt::format("{}/{}{}", dir, name, analysis::kSummaryExtension), bytes));
  }
  return Status::Ok();
}

namespace {

// The last run is left for the process's exit to reclaim: freeing 1,000 ranks' summaries one
// allocation at a time took 70 ms after the reports were written (5 % of the run). An earlier
// run is freed when the next run takes its place. Still reachable, so leak checkers say nothing.
void KeepUntilExit(std::unique_ptr<analysis::RunResult> run) {
  static analysis::RunResult* kept = nullptr;
  delete kept;
  kept = run.release();
}

}  // namespace

int ReportRun(analysis::RunInputs in, const AnalyzeFlags& f, analysis::RankResults read,
              const Options::Output& out, bool many, std::string* json) {
  auto kept = analysis::KeepRun(in, std::move(read));
  if (!kept.ok()) {
    fmt::print(stderr, "trainprof: {}{}\n", many ? "skipped: " : "", kept.status().message());
    return kRunUnreadable;
  }
  if (f.summary_only) {
    const std::string dir = out.run_dir.empty() ? out.dir : out.run_dir;
    const size_t n = kept->summaries->size();
    Status w = WriteSummaries(*kept->summaries, dir);
    if (w.ok()) {
      fmt::print(stderr, "{} rank summar{} written to {}/ (trainprof merge {} builds the report)\n",
                 n, n == 1 ? "y" : "ies", dir, dir);
      return kExitOk;
    }
    fmt::print(stderr, "trainprof: {}\n", w.message());
    return kExitNoOutput;
  }
  auto run = analysis::ReportRun(std::move(*kept), std::move(in));
  if (!run.ok()) {
    fmt::print(stderr, "trainprof: {}\n", run.status().message());
    return kExitBadInput;
  }
  const int code = EmitRun(**run, f, out, json);
  KeepUntilExit(std::move(*run));
  return code;
}

int AnalyzeRuns(const AnalyzeFlags& f, trace::TraceListing& listing,
                const SummariseRunFn& summarise) {
  const size_t n = listing.runs.size();
  // Each run is read, reported and let go before the next (a log dir may hold many big runs).
  int code = kExitOk;
  size_t emitted = 0;
  std::string json;
  for (size_t i = 0; i < n; ++i) {
    Options::Output out = f.out;
    if (n > 1 && !out.run_dir.empty())
      out.run_dir = fmt::format("{}/run{}", f.out.run_dir, emitted + 1);
    if (n > 1 && f.summary_only) out.dir = fmt::format("{}/run{}", f.out.dir, emitted + 1);
    const trace::TraceRun& run = listing.runs[i];
    auto read = summarise ? summarise(run) : SummariseEach(run.files, f, run.dir);
    int c = ReportRun(analysis::InputsOfListedRun(listing, i, f.path), f, std::move(read), out,
                      n > 1, n > 1 ? &json : nullptr);
    if (c == kRunUnreadable) continue;
    code = std::max(code, c);
    ++emitted;
  }
  if (emitted == 0) return kExitBadInput;
  if (n > 1 && f.format == "json" && !f.summary_only) std::cout << "[" << json << "]\n";
  if (emitted > 1) {
    fmt::print(stderr,
               "trainprof analyze: {} runs in {} (one per folder of traces), each with its "
               "own report\n",
               emitted, f.path);
  }
  return code;
}

}  // namespace trainprof::cli
