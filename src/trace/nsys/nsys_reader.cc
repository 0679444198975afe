#include "trace/nsys/nsys_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "trace/model_finish.h"
#include "trace/nsys/nsys_names.h"
#include "trace/sqlite_db.h"

namespace trainprof::trace {
namespace {

constexpr std::string_view kKernels = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view kMemcpys = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr std::string_view kMemsets = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr std::string_view kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr std::string_view kNvtx = "NVTX_EVENTS";
constexpr int64_t kPushPopRange = 59, kStartEndRange = 60;  // ENUM_NSYS_EVENT_TYPE
constexpr int64_t kDriverClass = 1;                         // ENUM_NSYS_EVENT_CLASS

// A global id's process and thread: Nsight packs them as (pid << 24 | tid) above a host id.
int64_t PidOf(int64_t global) { return (global >> 24) & 0xFFFFFF; }
int64_t TidOf(int64_t global) { return global & 0xFFFFFF; }
// A process's input part, as the listing names it ("pid=144").
std::string PartOf(int64_t global_pid) { return fmt::format("pid={}", PidOf(global_pid)); }

// `c` when the table has that column, else NULL: older exports lack some.
std::string Col(const std::set<std::string>& cols, std::string_view c) {
  return cols.count(std::string(c)) ? std::string(c) : std::string("NULL");
}

// The processes with GPU work (their globalPid), ranked by their first GPU, then pid. Empty when
// the export does not say which process ran a kernel (trimmed exports without globalPid).
StatusOr<std::vector<int64_t>> ScanGpuProcesses(const SqliteDb& db) {
  std::string sql;
  for (std::string_view t : {kKernels, kMemcpys, kMemsets}) {
    if (!db.Columns(t).count("globalPid")) continue;
    sql += fmt::format("{}SELECT globalPid, deviceId FROM {}", sql.empty() ? "" : " UNION ALL ", t);
  }
  std::vector<int64_t> out;
  if (sql.empty()) return out;
  TRAINPROF_RETURN_IF_ERROR(db.Each(
      fmt::format("SELECT globalPid, min(deviceId) FROM ({}) GROUP BY 1 ORDER BY 2, 1", sql),
      [&](const SqliteRow& r) { out.push_back(r.Int(0)); }));
  return out;
}

// ScanGpuProcesses, once per file (by path, size and time): the listing and each of the file's
// parts ask, and each asking scans every GPU row.
StatusOr<std::vector<int64_t>> GpuProcesses(const SqliteDb& db) {
  static std::mutex mu;
  static std::map<std::string, std::vector<int64_t>> known;
  std::error_code ec;
  const std::string key =
      fmt::format("{}|{}|{}", db.path(), std::filesystem::file_size(db.path(), ec),
                  std::filesystem::last_write_time(db.path(), ec).time_since_epoch().count());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<int64_t> procs, ScanGpuProcesses(db));
  std::lock_guard<std::mutex> lock(mu);
  known.emplace(key, procs);
  return procs;
}

StatusOr<SqliteDb> OpenExport(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path));
  if (!db.HasTable("StringIds")) {
    return InvalidArgument(fmt::format(
        "{}: an SQLite database, but not an Nsight Systems export (it has no StringIds table)",
        path));
  }
  return db;
}

class NsysBuilder {
 public:
  NsysBuilder(SqliteDb db, std::string file) : db_(std::move(db)), file_(std::move(file)) {}

  StatusOr<TraceModel> Read(const std::string& part) {
    TRAINPROF_RETURN_IF_ERROR(ChooseProcess(part));
    TRAINPROF_RETURN_IF_ERROR(ReadStrings());
    ReadSessionStart();
    ReserveRows();
    TRAINPROF_RETURN_IF_ERROR(ReadHostCalls());
    TRAINPROF_RETURN_IF_ERROR(ReadGpu(kKernels, EventKind::kKernel));
    TRAINPROF_RETURN_IF_ERROR(ReadGpu(kMemcpys, EventKind::kMemcpy));
    TRAINPROF_RETURN_IF_ERROR(ReadGpu(kMemsets, EventKind::kMemset));
    TRAINPROF_RETURN_IF_ERROR(ReadNvtx());
    TRAINPROF_RETURN_IF_ERROR(ReadDevices());
    std::error_code ec;
    m_.json_bytes = static_cast<int64_t>(std::filesystem::file_size(db_.path(), ec));
    m_.gpu_runtime = "CUDA";
    m_.source = "nsys";
    FinishModel(m_, m_.path, {});
    return std::move(m_);
  }

 private:
  // The process read: the part's, else the file's only one with GPU work, else all rows.
  Status ChooseProcess(const std::string& part) {
    TRAINPROF_ASSIGN_OR_RETURN(std::vector<int64_t> procs, GpuProcesses(db_));
    m_.path = part.empty() ? file_ : fmt::format("{}#{}", file_, part);
    m_.rank_source = "Nsight process";
    if (part.empty()) {
      if (procs.size() > 1) {
        return InvalidArgument(
            fmt::format("{}: holds {} processes with GPU work; read it as a folder or name one as "
                        "{}#{}",
                        file_, procs.size(), file_, PartOf(procs[0])));
      }
      if (procs.size() == 1) global_pid_ = procs[0];
      return Status::Ok();
    }
    for (size_t i = 0; i < procs.size(); ++i) {
      if (PartOf(procs[i]) != part) continue;
      global_pid_ = procs[i];
      m_.rank = static_cast<int64_t>(i);
      m_.world_size = static_cast<int64_t>(procs.size());
      return Status::Ok();
    }
    return NotFound(fmt::format("{}: no process with GPU work is {}", file_, part));
  }

  // StringIds' ids are sparse (3,435,062 the largest of 126 in a shared export): a map, not a
  // vector indexed by id.
  Status ReadStrings() {
    return db_.Each("SELECT id, value FROM StringIds",
                    [&](const SqliteRow& r) { strings_.emplace(r.Int(0), r.Text(1)); });
  }

  const std::string& Str(const SqliteRow& r, int col) const {
    static const std::string kEmpty;
    if (r.Null(col)) return kEmpty;
    auto it = strings_.find(r.Int(col));
    return it == strings_.end() ? kEmpty : it->second;
  }

  // Room in the model's columns for every row of the tables read (an upper bound: the largest
  // rowid, found without a scan), so that no column is copied as it grows: on a 1 GB export the
  // copies were a third of the peak.
  void ReserveRows() {
    int64_t rows = 0;
    for (std::string_view t : {kRuntime, kKernels, kMemcpys, kMemsets, kNvtx}) {
      if (!db_.HasTable(t)) continue;
      (void)db_.Each(fmt::format("SELECT max(rowid) FROM {}", t),
                     [&](const SqliteRow& r) { rows += std::max<int64_t>(0, r.Int(0)); });
    }
    m_.ReserveEvents(static_cast<size_t>(rows));
  }

  void ReadSessionStart() {
    if (!db_.HasTable("TARGET_INFO_SESSION_START_TIME")) return;
    (void)db_.Each("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
                   [&](const SqliteRow& r) { base_ns_ = r.Int(0); });
    m_.base_time_ns = base_ns_;
  }

  // The track of a host thread, by its global id.
  uint32_t HostTrack(int64_t global_tid) {
    return m_.FindOrAddTrack({PidOf(global_tid), TidOf(global_tid), -1, -1});
  }

  // " WHERE ..." keeping the rows of the chosen process, by `column` (globalPid or globalTid).
  std::string OfProcess(const std::set<std::string>& cols, std::string_view column) const {
    if (global_pid_ < 0 || !cols.count(std::string(column))) return "";
    return fmt::format(" WHERE ({} >> 24) = {}", column, global_pid_ >> 24);
  }

  Status ReadHostCalls() {
    const auto cols = db_.Columns(kRuntime);
    if (cols.empty()) {
      return Unrecorded("CUDA API calls (CUPTI_ACTIVITY_KIND_RUNTIME)",
                        "the views that need them are empty");
    }
    const std::string sql =
        fmt::format("SELECT start, end, globalTid, correlationId, nameId, {} FROM {}{}",
                    Col(cols, "eventClass"), kRuntime, OfProcess(cols, "globalTid"));
    return db_.Each(sql, [&](const SqliteRow& r) {
      const uint32_t where = HostTrack(r.Int(2));
      const EventKind k = r.Int(5) == kDriverClass ? EventKind::kDriver : EventKind::kRuntime;
      const size_t i =
          m_.Add(k, RuntimeName(Str(r, 4)), base_ns_ + r.Int(0), r.Int(1) - r.Int(0), where);
      m_.correlation.Set(i, r.Int(3));
    });
  }

  Status ReadGpu(std::string_view table, EventKind kind) {
    const auto cols = db_.Columns(table);
    if (cols.empty()) return Status::Ok();  // no work of this kind was recorded
    std::string fields;
    if (kind == EventKind::kKernel)
      fields = fmt::format("{}, {}", Col(cols, "demangledName"), Col(cols, "shortName"));
    if (kind == EventKind::kMemcpy)
      fields = fmt::format("{}, {}, {}, bytes", Col(cols, "copyKind"), Col(cols, "srcKind"),
                           Col(cols, "dstKind"));
    if (kind == EventKind::kMemset) fields = fmt::format("{}, NULL", Col(cols, "memKind"));
    const std::string sql =
        fmt::format("SELECT start, end, deviceId, streamId, correlationId, {} FROM {}{}", fields,
                    table, OfProcess(cols, "globalPid"));
    return db_.Each(sql, [&](const SqliteRow& r) {
      const int64_t dev = r.Int(2), stream = r.Int(3);
      const uint32_t where = m_.FindOrAddTrack({dev, stream, dev, stream});
      const size_t i =
          m_.Add(kind, GpuName(kind, r), base_ns_ + r.Int(0), r.Int(1) - r.Int(0), where);
      m_.correlation.Set(i, r.Int(4));
      if (kind == EventKind::kMemcpy) m_.memcpy_bytes.emplace_back(i, r.Int(8));
    });
  }

  std::string GpuName(EventKind kind, const SqliteRow& r) const {
    if (kind == EventKind::kMemcpy) return MemcpyName(r.Int(5), r.Int(6), r.Int(7));
    if (kind == EventKind::kMemset) return MemsetName(r.Null(5) ? 0 : r.Int(5));
    const std::string& demangled = Str(r, 5);
    return demangled.empty() ? Str(r, 6) : demangled;
  }

  Status ReadNvtx() {
    const auto cols = db_.Columns(kNvtx);
    if (cols.empty()) return Status::Ok();  // no NVTX range was recorded
    const std::string where = OfProcess(cols, "globalTid");
    const std::string sql =
        fmt::format("SELECT start, end, globalTid, text, {}, {} FROM {}{}{} eventType IN ({}, {})",
                    Col(cols, "textId"), Col(cols, "domainId"), kNvtx, where,
                    where.empty() ? " WHERE" : " AND", kPushPopRange, kStartEndRange);
    int64_t open = 0;
    Status s = db_.Each(sql, [&](const SqliteRow& r) {
      if (r.Null(1)) return void(++open);
      const std::string_view text = r.Null(3) ? std::string_view(Str(r, 4)) : r.Text(3);
      const NvtxRange range = ParseNvtxRange(text);
      const uint32_t track = HostTrack(r.Int(2));
      // A library's own domain (NCCL's ncclGroupEnd) is not the training loop's: kept on the
      // timeline, but no operator or annotation, so its launches stay with the operator that
      // called the library (nccl:all_to_all), as in a Kineto trace.
      const EventKind k = r.Int(5) != 0 ? EventKind::kOther
                          : range.op    ? EventKind::kCpuOp
                                        : EventKind::kUserAnnotation;
      const size_t i = m_.Add(k, range.name, base_ns_ + r.Int(0), r.Int(1) - r.Int(0), track);
      if (!range.sizes.empty())
        m_.AddInputs(static_cast<uint32_t>(i), {m_.names.Intern(range.sizes)});
    });
    if (open > 0) {
      m_.AddDiagnostic(base::DiagnosticId::kOpenRange, open,
                       fmt::format("{}: {} NVTX ranges have no end (the profile stopped inside "
                                   "them) and were left out",
                                   m_.path, open));
    }
    return s;
  }

  Status ReadDevices() {
    const auto cols = db_.Columns("TARGET_INFO_GPU");
    if (cols.empty()) {
      return Unrecorded("TARGET_INFO_GPU table",
                        "the GPUs have no name or properties (give --peak-tflops for the "
                        "roofline)");
    }
    const std::string sql =
        fmt::format("SELECT {}, name, {}, {}, {}, {} FROM TARGET_INFO_GPU",
                    cols.count("cuDevice") ? "cuDevice" : "id", Col(cols, "totalMemory"),
                    Col(cols, "computeMajor"), Col(cols, "computeMinor"), Col(cols, "smCount"));
    return db_.Each(sql, [&](const SqliteRow& r) {
      DeviceInfo d;
      d.id = r.Int(0);
      d.name = r.Text(1);
      d.total_memory_bytes = r.Int(2);
      d.compute_major = r.Int(3);
      d.compute_minor = r.Int(4);
      d.num_sms = r.Int(5);
      d.vendor = "NVIDIA";
      if (m_.FindDevice(d.id) == nullptr) m_.devices.push_back(std::move(d));
    });
  }

  // An nsys_not_recorded diagnostic: "<file>: the export has no <what>: <means>".
  Status Unrecorded(std::string_view what, std::string_view means) {
    m_.AddDiagnostic(base::DiagnosticId::kNsysNotRecorded, 1,
                     fmt::format("{}: the export has no {}: {}", m_.path, what, means));
    return Status::Ok();
  }

  SqliteDb db_;
  std::string file_;
  TraceModel m_;
  std::unordered_map<int64_t, std::string> strings_;
  int64_t global_pid_ = -1;
  int64_t base_ns_ = 0;
};

}  // namespace

bool SniffSqlite(std::string_view head) {
  return head.starts_with(std::string_view("SQLite format 3\0", 16));
}

StatusOr<std::vector<std::string>> NsysParts(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(SqliteDb db, OpenExport(path));
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<int64_t> procs, GpuProcesses(db));
  std::vector<std::string> out;
  if (procs.size() > 1)
    for (int64_t p : procs) out.push_back(PartOf(p));
  return out;
}

StatusOr<TraceModel> ReadNsysFile(const std::string& path, const ReadOptions& options) {
  TRAINPROF_ASSIGN_OR_RETURN(SqliteDb db, OpenExport(path));
  return NsysBuilder(std::move(db), path).Read(options.part);
}

}  // namespace trainprof::trace
