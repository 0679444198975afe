#include "trace/trace_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "base/atomic_file.h"
#include "base/parallel.h"
#include "trace/graph_capture.h"
#include "trace/input_kind.h"
#include "trace/stream_overlap.h"

namespace trainprof::trace {
namespace fs = std::filesystem;

namespace {
// "PATH: no such file or folder", or what else stops fs::status (a loop of symbolic links, a
// dangling one, permission denied), in words.
Status Unreachable(const std::string& path, const std::error_code& ec) {
  if (!ec || ec.value() == ENOENT) {
    std::error_code e2;
    if (!fs::is_symlink(fs::symlink_status(path, e2)))
      return NotFound(fmt::format("{}: no such file or folder", path));
  }
  const int err = ec ? ec.value() : ENOENT;
  return base::ErrnoStatus("", err).code() == StatusCode::kNotFound
             ? NotFound(fmt::format("{}: {}", path, base::FileProblem(path, err)))
             : InvalidArgument(fmt::format("{}: {}", path, base::FileProblem(path, err)));
}

bool IsTraceName(const std::string& n) {
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.ends_with(s); };
  return ends(".json") || ends(".json.gz") || IsNsysReport(n);
}

// A folder entry's inputs: a trace by its bytes (a timeline kind of input_kind.h, whatever its
// name; a file of several ranks, one input per rank), or by a trace's name (*.json, *.json.gz,
// an Nsight report) when its bytes are no kind (an empty or broken file, whose read error is
// then said); nullopt for anything else. trainprof's own report.json is left out, and so is a
// file whose kind's reader cannot tell its parts: the SQLite header is every SQLite file's, and
// a run history (runs/trainprof.db) beside the traces is not an input.
std::optional<std::vector<std::string>> ListedInputs(const fs::path& p,
                                                     TraceListing* listing = nullptr) {
  const std::string name = p.filename().string();
  if (name == "report.json") return std::nullopt;
  const InputKind kind = SniffInput(p.string());
  std::vector<std::string>* said = listing == nullptr ? nullptr : &listing->skipped;
  if (IsMemorySnapshotKind(kind)) {
    if (listing != nullptr) listing->snapshots.push_back(p.string());
    return std::nullopt;
  }
  if (kind == InputKind::kUnknown) {
    if (!IsTraceName(name)) return std::nullopt;
    return std::vector<std::string>{p.string()};
  }
  if (kind == InputKind::kOtherSqlite) {  // a run history beside the traces: named, not read
    if (said != nullptr)
      said->push_back(fmt::format("{}: a {}: not read", p.string(), FindInputFormat(kind)->name));
    return std::nullopt;
  }
  if (FindInputFormat(kind)->read == nullptr) return std::nullopt;
  StatusOr<std::vector<std::string>> inputs = InputsOfFile(p.string(), kind);
  if (!inputs.ok()) {  // an SQLite database that is no Nsight export: named, not read
    if (said != nullptr) said->push_back(fmt::format("{}: not read", inputs.status().message()));
    return std::nullopt;
  }
  return std::move(*inputs);
}

// A folder's files (each with its inputs), sorted by path, as one list of inputs.
using FileInputs = std::pair<std::string, std::vector<std::string>>;
std::vector<std::string> SortedInputs(std::vector<FileInputs> files) {
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  out.reserve(files.size());
  for (auto& [path, inputs] : files)
    for (std::string& in : inputs) out.push_back(std::move(in));
  return out;
}

constexpr std::string_view kLookedFor =
    "looked for PyTorch profiler traces (JSON, plain or gzip) and Nsight Systems SQLite exports "
    "by their contents";
}  // namespace

StatusOr<std::vector<std::string>> ListTraceFiles(const std::string& path) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Unreachable(path, ec);
  if (!fs::is_directory(st)) return ExpandInputParts({path});
  std::vector<FileInputs> found;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (!e.is_regular_file(ec)) continue;
    if (auto inputs = ListedInputs(e.path())) found.emplace_back(e.path().string(), *inputs);
  }
  if (ec) return InvalidArgument(fmt::format("{}: cannot list: {}", path, ec.message()));
  if (found.empty())
    return InvalidArgument(fmt::format("{}: no trace files in this folder ({})", path, kLookedFor));
  return SortedInputs(std::move(found));
}

namespace {

// A "capture_traces" folder whose parent folder holds a trace file.
bool IsCaptureFolderOfARun(const fs::path& dir) {
  if (dir.filename() != "capture_traces") return false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.parent_path(), ec))
    if (e.is_regular_file(ec) && ListedInputs(e.path())) return true;
  return false;
}

}  // namespace

StatusOr<TraceListing> ListTraceRuns(const std::string& path) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Unreachable(path, ec);
  TraceListing out;
  if (!fs::is_directory(st)) {
    out.runs.push_back({path, ExpandInputParts({path})});
    return out;
  }
  std::map<std::string, std::vector<FileInputs>> by_dir;
  auto it =
      fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code e2;
    // The type the listing gave (no stat but for a link, whose target's type is asked: a
    // dangling one or a loop fails here).
    const bool folder = it->is_directory(e2);
    const bool file = !e2 && !folder && it->is_regular_file(e2);
    if (e2) {
      out.skipped.push_back(fmt::format("{}: skipped: {}", p.string(), e2.message()));
      continue;
    }
    if (folder && IsCaptureFolderOfARun(p)) {
      // vLLM's and SGLang's capture_traces/ beside a run's trace: data of that run (its graphs'
      // operators), read with it (graph_capture.h), not a run of its own.
      it.disable_recursion_pending();
      out.skipped.push_back(fmt::format(
          "{}: not a run: the graph capture traces of the run in {}, read with its traces",
          p.string(), p.parent_path().string()));
      continue;
    }
    if (folder && fs::exists(p.parent_path() / "report.json", e2)) {
      // A trainprof run folder: its own trace.json is the run; rank<N>/, traces/ and session/
      // below it are parts of that run, not runs of their own.
      it.disable_recursion_pending();
      out.skipped.push_back(fmt::format("{}: not searched: a part of the trainprof run folder {}",
                                        p.string(), p.parent_path().string()));
      continue;
    }
    std::optional<std::vector<std::string>> inputs;
    if (file) inputs = ListedInputs(p, &out);
    if (inputs) by_dir[p.parent_path().string()].emplace_back(p.string(), std::move(*inputs));
  }
  if (ec) out.skipped.push_back(fmt::format("{}: not listed in full: {}", path, ec.message()));
  for (auto& [dir, files] : by_dir) {
    out.runs.push_back({dir, SortedInputs(std::move(files))});
  }
  std::sort(out.snapshots.begin(), out.snapshots.end());
  if (out.runs.empty() && out.snapshots.empty()) {
    return InvalidArgument(
        fmt::format("{}: no trace files in this folder or below it ({})", path, kLookedFor));
  }
  return out;
}

namespace {
// The trace files of a capture folder (without vLLM's execution_details.json), or the file.
std::vector<std::string> CaptureFilesIn(const std::string& path) {
  auto files = ListTraceFiles(path);
  if (!files.ok()) return {};
  std::erase_if(*files, [](const std::string& f) {
    return fs::path(f).filename() == "execution_details.json";
  });
  return *files;
}
}  // namespace

std::vector<std::string> CaptureTracesBeside(const std::string& trace_path) {
  std::error_code ec;
  const fs::path dir = fs::path(trace_path).parent_path() / "capture_traces";
  return fs::is_directory(dir, ec) ? CaptureFilesIn(dir.string()) : std::vector<std::string>{};
}

std::vector<std::string> CaptureFilesFor(const std::vector<std::string>& given,
                                         const std::string& trace_path) {
  if (given.empty()) return CaptureTracesBeside(trace_path);
  std::vector<std::string> out;
  for (const std::string& c : given) std::ranges::move(CaptureFilesIn(c), std::back_inserter(out));
  return out;
}

StatusOr<TraceModel> ReadModel(const std::string& input, const ReadOptions& ro,
                               const std::vector<std::string>& capture_traces,
                               CaptureCache* captures) {
  StatusOr<TraceModel> m = ReadInput(input, ro);
  if (!m.ok()) return m;
  AttachGraphCaptures(
      *m, [&](const std::string& path) { return CaptureFilesFor(capture_traces, path); }, captures);
  NoteStreamOverlaps(*m);
  return m;
}

void ForEachTraceFile(const std::vector<std::string>& files, const ReadManyOptions& options,
                      const std::function<void(size_t, StatusOr<TraceModel>)>& fn) {
  std::vector<int64_t> sizes(files.size(), 0), done(files.size(), 0);
  int64_t total = 0;
  for (size_t i = 0; options.progress && i < files.size(); ++i) {  // sizes only for the line
    std::error_code ec;
    sizes[i] = static_cast<int64_t>(fs::file_size(SplitInputPart(files[i]).first, ec));
    if (ec) sizes[i] = 0;
    total += sizes[i];
  }
  std::mutex progress_mu;
  int64_t sum = 0;  // of done
  // File i's bytes read so far; a file another reader claimed counts whole when it is passed,
  // so the line shows the run's progress whoever reads it.
  auto advance = [&](size_t i, int64_t bytes) {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(progress_mu);
    sum += bytes - done[i];
    done[i] = bytes;
    options.progress(sum, total);
  };
  CaptureCache captures;
  // Cores left over when there are fewer files than cores read parts of one big file.
  const int cores = options.threads > 0
                        ? options.threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / static_cast<int>(std::max<size_t>(1, files.size())));
  base::ParallelFor(files.size(), options.threads, [&](size_t i) {
    if (options.claim && !options.claim(i)) return advance(i, sizes[i]);
    if (options.cancelled && options.cancelled()) {
      fn(i, Status(StatusCode::kCancelled, files[i] + ": cancelled"));
      return;
    }
    ReadOptions ro;
    ro.threads = threads;
    ro.cancelled = options.cancelled;
    if (options.progress) ro.progress = [&, i](int64_t bytes) { advance(i, bytes); };
    fn(i, ReadModel(files[i], ro, options.capture_traces, &captures));
  });
}

StatusOr<std::vector<TraceModel>> ReadTraceFiles(const std::vector<std::string>& files,
                                                 const ReadManyOptions& options) {
  std::vector<std::optional<StatusOr<TraceModel>>> results(files.size());
  ForEachTraceFile(files, options,
                   [&](size_t i, StatusOr<TraceModel> m) { results[i].emplace(std::move(m)); });

  std::vector<TraceModel> out;
  out.reserve(files.size());
  Status first = Status::Ok();
  for (auto& r : results) {
    if (r->ok()) {
      out.push_back(std::move(**r));
      continue;
    }
    if (options.skipped == nullptr) return r->status();
    if (first.ok()) first = r->status();
    options.skipped->push_back(fmt::format("{} (file skipped)", r->status().message()));
  }
  if (out.empty() && !first.ok()) return first;
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceModel& a, const TraceModel& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < out.size(); ++i) {
    for (size_t j = 0; j < out.size(); ++j) {
      if (i == j || out[i].rank != out[j].rank) continue;
      out[i].AddDiagnostic(base::DiagnosticId::kDuplicateRank, 1,
                           fmt::format("{}: rank {} also comes from {}; each file is analysed "
                                       "as its own span",
                                       out[i].path, out[i].rank, out[j].path));
      break;
    }
  }
  return out;
}

}  // namespace trainprof::trace
