#include "analysis/ranks/digest.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "analysis/overview.h"
#include "analysis/ranks/detail_store.h"
#include "trace/input_kind.h"
#include "trace/sqlite_db.h"

namespace trainprof::analysis {
namespace {

using DbPtr = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;

// Opens `path` for one thread's use. SQLite's allocation statistics take a global mutex on
// every allocation: with two threads reading digests they spent most of merge's time waiting on
// it, so they are turned off before SQLite's first use (a no-op if it is already in use).
int OpenDb(const std::string& path, sqlite3** db, int flags) {
  static const int kConfigured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)kConfigured;
  return sqlite3_open_v2(path.c_str(), db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
}

// The steps table's columns after number, name, begin_ns and end_ns: the Overview's categories,
// the distributed view's four, then the path marks at the step's begin and end.
std::string StepColumns() {
  std::string cols;
  for (int c = 0; c < kNumCategories; ++c) cols += fmt::format(", {}_ns INTEGER", CategoryKey(c));
  return cols +
         ", computation_ns INTEGER, overlap_ns INTEGER, comm_exposed_ns INTEGER, idle_ns INTEGER"
         ", compute_mark_begin_ns INTEGER, data_mark_begin_ns INTEGER"
         ", compute_mark_end_ns INTEGER, data_mark_end_ns INTEGER";
}

std::string Schema() {
  return "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
         "CREATE TABLE steps(number INTEGER, name TEXT, begin_ns INTEGER, end_ns INTEGER" +
         StepColumns() +
         ");"
         "CREATE TABLE collectives(issue INTEGER, process_group TEXT, match_key TEXT, "
         "by_seq INTEGER, type TEXT, bytes INTEGER, group_size INTEGER, start_ns INTEGER, "
         "end_ns INTEGER, compute_mark_start_ns INTEGER, data_mark_start_ns INTEGER, "
         "compute_mark_end_ns INTEGER, data_mark_end_ns INTEGER);"
         "CREATE TABLE kernels(name TEXT, calls INTEGER, total_ns INTEGER, min_ns INTEGER, "
         "max_ns INTEGER);"
         "CREATE TABLE operators(name TEXT, calls INTEGER, host_self_ns INTEGER, "
         "host_total_ns INTEGER, device_self_ns INTEGER, device_total_ns INTEGER);"
         "CREATE TABLE summary(part TEXT, version INTEGER, bytes BLOB);";
}

// One prepared statement, its values bound in order, run once per row.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) {
    sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& Int(int64_t v) { return Ok(sqlite3_bind_int64(s_, ++col_, v)); }
  Statement& Text(std::string_view v) {
    return Ok(
        sqlite3_bind_text(s_, ++col_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Statement& Blob(std::string_view v) {
    return Ok(sqlite3_bind_blob(s_, ++col_, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
  }
  // Runs the row; false on any error since the statement was prepared.
  bool Run() {
    ok_ = ok_ && s_ != nullptr && sqlite3_step(s_) == SQLITE_DONE;
    sqlite3_reset(s_);
    col_ = 0;
    return ok_;
  }

 private:
  Statement& Ok(int rc) {
    ok_ = ok_ && rc == SQLITE_OK;
    return *this;
  }
  sqlite3_stmt* s_ = nullptr;
  int col_ = 0;
  bool ok_ = true;
};

bool WriteMeta(sqlite3* db, const RankSummary& s) {
  Statement st(db, "INSERT INTO meta VALUES(?, ?)");
  const RankInfo& i = s.info;
  const std::pair<const char*, std::string> rows[] = {{"format", "trainprof digest"},
                                                      {"version", std::to_string(kDigestVersion)},
                                                      {"rank", std::to_string(i.rank)},
                                                      {"world_size", std::to_string(i.world_size)},
                                                      {"host", i.host_name},
                                                      {"trace", i.path},
                                                      {"source", i.source},
                                                      {"events", std::to_string(i.events)},
                                                      {"trace_bytes", std::to_string(i.json_bytes)},
                                                      {"input", s.input}};
  bool ok = true;
  for (const auto& [k, v] : rows) ok = st.Text(k).Text(v).Run() && ok;
  return ok;
}

bool WriteSteps(sqlite3* db, const RankAnalysis& a) {
  std::string marks(kNumCategories + 8, '?');
  std::string sql = "INSERT INTO steps VALUES(?, ?, ?, ?";
  for (size_t k = 0; k < marks.size(); ++k) sql += ", ?";
  Statement st(db, sql + ")");
  bool ok = true;
  const std::vector<Step>& steps = a.steps.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    st.Int(steps[i].number).Text(steps[i].name).Int(steps[i].begin_ns).Int(steps[i].end_ns);
    const StepBreakdown b = i < a.overview.steps.size() ? a.overview.steps[i] : StepBreakdown{};
    for (int64_t v : b.ns) st.Int(v);
    const CommBreakdown c = i < a.comm_breakdowns.size() ? a.comm_breakdowns[i] : CommBreakdown{};
    st.Int(c.computation_ns).Int(c.overlap_ns).Int(c.communication_ns).Int(c.other_ns);
    const StepMarks m = i < a.step_marks.size() ? a.step_marks[i] : StepMarks{};
    st.Int(m.begin.compute_ns).Int(m.begin.data_ns).Int(m.end.compute_ns).Int(m.end.data_ns);
    ok = st.Run() && ok;
  }
  return ok;
}

bool WriteCollectives(sqlite3* db, const RankAnalysis& a) {
  Statement st(db, "INSERT INTO collectives VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  bool ok = true;
  for (size_t i = 0; i < a.comm_ops.size(); ++i) {
    const RankCommOp& o = a.comm_ops[i];
    ok = st.Int(static_cast<int64_t>(i))
             .Text(a.comm_names[o.group])
             .Text(CommKeyText(o, a.comm_names))
             .Int(o.by_seq())
             .Text(a.comm_names[o.type])
             .Int(o.bytes)
             .Int(o.group_size)
             .Int(o.start_ns)
             .Int(o.end_ns)
             .Int(o.at_start.compute_ns)
             .Int(o.at_start.data_ns)
             .Int(o.at_end.compute_ns)
             .Int(o.at_end.data_ns)
             .Run() &&
         ok;
  }
  return ok;
}

bool WriteTops(sqlite3* db, const RankAnalysis& a) {
  Statement k(db, "INSERT INTO kernels VALUES(?, ?, ?, ?, ?)");
  bool ok = true;
  for (size_t i = 0; i < a.lists->kernels.size() && i < kDigestTopRows; ++i) {  // by total already
    const KernelRow& r = a.lists->kernels[i];
    ok = k.Text(r.name).Int(r.calls).Int(r.total_ns).Int(r.min_ns).Int(r.max_ns).Run() && ok;
  }
  std::vector<const OperatorRow*> ops;
  for (const OperatorRow& r : a.lists->operators) ops.push_back(&r);
  const size_t n = std::min(ops.size(), kDigestTopRows);
  std::partial_sort(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(n), ops.end(),
                    [](const OperatorRow* x, const OperatorRow* y) {
                      return std::tie(x->device_self_ns, x->host_self_ns) >
                             std::tie(y->device_self_ns, y->host_self_ns);
                    });
  Statement o(db, "INSERT INTO operators VALUES(?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < n; ++i) {
    const OperatorRow& r = *ops[i];
    ok = o.Text(r.name)
             .Int(r.calls)
             .Int(r.host_self_ns)
             .Int(r.host_total_ns)
             .Int(r.device_self_ns)
             .Int(r.device_total_ns)
             .Run() &&
         ok;
  }
  return ok;
}

bool WriteBlobs(sqlite3* db, const RankSummary& s) {
  RankSummary lean = s;
  KeepAcrossRanks(lean.analysis);
  const std::string whole = EncodeSummary(s), window = EncodeSummary(lean);
  Statement st(db, "INSERT INTO summary VALUES(?, ?, ?)");
  return st.Text("whole").Int(kSummaryVersion).Blob(whole).Run() &&
         st.Text("across_ranks").Int(kSummaryVersion).Blob(window).Run();
}

Status Fail(sqlite3* db, const std::string& path) {
  return PermissionDenied(fmt::format("{}: cannot write the digest: {}", path,
                                      db ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

std::string DigestFileName(int64_t rank) {
  return fmt::format("rank_{:05}{}", rank, kDigestSuffix);
}

Status WriteDigest(const RankSummary& s, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  std::filesystem::remove(tmp, ec);
  sqlite3* raw = nullptr;
  const int rc = OpenDb(tmp, &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  DbPtr db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return Fail(raw, path);
  const std::string setup = fmt::format(
      "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA application_id={}; BEGIN;{}",
      trace::kRankDigestApplicationId, Schema());
  bool ok = sqlite3_exec(raw, setup.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
  DetailHold hold(s.analysis);  // the top kernels and operators of a spilled rank
  ok = ok && WriteMeta(raw, s) && WriteSteps(raw, s.analysis) &&
       WriteCollectives(raw, s.analysis) && WriteTops(raw, s.analysis) && WriteBlobs(raw, s);
  ok = ok && sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
  if (!ok) {
    Status st = Fail(raw, path);
    db.reset();
    std::filesystem::remove(tmp, ec);
    return st;
  }
  db.reset();
  std::filesystem::rename(tmp, path, ec);
  if (ec) return PermissionDenied(fmt::format("{}: {}", path, ec.message()));
  return Status::Ok();
}

namespace {

// The digest's format, version and one summary blob, read with one statement (each statement
// prepared costs as much as reading the blob). Empty cells when there is no such row.
struct DigestHead {
  std::string format, version, blob;
};

std::optional<DigestHead> ReadHead(sqlite3* db, DigestPart part) {
  const char* sql =
      "SELECT (SELECT value FROM meta WHERE key = 'format'), "
      "(SELECT value FROM meta WHERE key = 'version'), "
      "(SELECT bytes FROM summary WHERE part = ?)";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) return std::nullopt;
  sqlite3_bind_text(st, 1, part == DigestPart::kWhole ? "whole" : "across_ranks", -1,
                    SQLITE_STATIC);
  std::optional<DigestHead> out;
  if (sqlite3_step(st) == SQLITE_ROW) {
    auto cell = [&](int col) {
      const void* p = sqlite3_column_blob(st, col);
      return p ? std::string(static_cast<const char*>(p),
                             static_cast<size_t>(sqlite3_column_bytes(st, col)))
               : std::string();
    };
    out = DigestHead{cell(0), cell(1), cell(2)};
  }
  sqlite3_finalize(st);
  return out;
}

Status NotADigest(const std::string& path, std::string_view why) {
  return InvalidArgument(fmt::format("{}: not a trainprof rank digest ({})", path, why));
}

}  // namespace

StatusOr<RankSummary> ReadDigest(const std::string& path, DigestPart part) {
  sqlite3* raw = nullptr;
  const int rc = OpenDb(trace::ImmutableUri(path), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  DbPtr db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return NotADigest(path, raw ? sqlite3_errmsg(raw) : "cannot open");
  const std::optional<DigestHead> head = ReadHead(raw, part);
  if (!head) return NotADigest(path, sqlite3_errmsg(raw));
  if (head->format != "trainprof digest") return NotADigest(path, "its meta names another format");
  if (head->version != std::to_string(kDigestVersion))
    return InvalidArgument(fmt::format("{}: digest version {}, this trainprof reads {}", path,
                                       head->version, kDigestVersion));
  if (head->blob.empty()) return NotADigest(path, "no summary row");
  StatusOr<RankSummary> s = DecodeSummary(head->blob);
  if (!s.ok()) return InvalidArgument(fmt::format("{}: {}", path, s.status().message()));
  return s;
}

namespace {

// Keeps the elements of `v` at `keep`; clears `v` when it is not one per step.
template <class T>
void KeepAt(std::vector<T>& v, const std::vector<size_t>& keep, size_t steps) {
  if (v.size() != steps) return v.clear();
  std::vector<T> out;
  out.reserve(keep.size());
  for (size_t k : keep) out.push_back(std::move(v[k]));
  v = std::move(out);
}

void Reaverage(Overview& o) {
  o.avg_ns.fill(0);
  o.avg_total_ns = 0;
  if (o.steps.empty()) return;
  const double n = static_cast<double>(o.steps.size());
  for (const StepBreakdown& b : o.steps) {
    o.avg_total_ns += static_cast<double>(b.total_ns) / n;
    for (int c = 0; c < kNumCategories; ++c) o.avg_ns[c] += static_cast<double>(b.ns[c]) / n;
  }
}

}  // namespace

void KeepAcrossRanks(RankAnalysis& a) {
  RankAnalysis kept;
  kept.steps = std::move(a.steps);
  kept.overview = std::move(a.overview);
  kept.comm_ops = std::move(a.comm_ops);
  kept.comm_names = std::move(a.comm_names);
  kept.comm_breakdowns = std::move(a.comm_breakdowns);
  kept.step_marks = std::move(a.step_marks);
  kept.gpu_ns = a.gpu_ns;
  a = std::move(kept);
}

size_t WindowSummary(RankSummary& s, int64_t first, int64_t last) {
  RankAnalysis& a = s.analysis;
  std::vector<Step>& steps = a.steps.steps;
  std::vector<size_t> keep;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].number >= first && steps[i].number <= last) keep.push_back(i);
  const int64_t begin = keep.empty() ? 0 : steps[keep.front()].begin_ns;
  const int64_t end = keep.empty() ? 0 : steps[keep.back()].end_ns;
  const size_t n = steps.size();
  KeepAt(a.overview.steps, keep, n);
  KeepAt(a.comm_breakdowns, keep, n);
  KeepAt(a.step_marks, keep, n);
  KeepAt(steps, keep, n);
  Reaverage(a.overview);
  std::erase_if(a.comm_ops,
                [&](const RankCommOp& o) { return o.start_ns < begin || o.start_ns >= end; });
  KeepAcrossRanks(a);
  return keep.size();
}

}  // namespace trainprof::analysis
