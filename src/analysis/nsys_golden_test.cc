// The Nsight Systems reader and the analyses on the real exports in ../shared/data/nsys/, against
// answers computed here straight from their tables with SQL: kernels per device and their time,
// memcpy and memset counts, the operator table's GPU time per operator (each kernel credited, by
// its launch call's correlation id, to the innermost emit_nvtx range around that call), and
// pipit's independent reading of the CloverLeaf profile.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "trace/nsys/nsys_names.h"
#include "trace/sqlite_db.h"
#include "trace/trace_files.h"

namespace trainprof::analysis {
namespace {

const std::string kNsys = std::string(TRAINPROF_SHARED_DIR) + "/data/nsys/";

#define TRAINPROF_SKIP_WITHOUT_SHARED_NSYS()                                               \
  if (!std::filesystem::exists(kNsys))                                                     \
  GTEST_SKIP() << "skipped: ../shared/data/nsys (the real Nsight Systems exports) is not " \
                  "beside this checkout"

trace::SqliteDb OpenExport(const std::string& file) {
  auto db = trace::SqliteDb::Open(kNsys + file);
  EXPECT_TRUE(db.ok()) << db.status().message();
  return std::move(*db);
}

int64_t SqlCount(const trace::SqliteDb& db, const std::string& sql) {
  int64_t n = -1;
  EXPECT_TRUE(db.Each(sql, [&](const trace::SqliteRow& r) { n = r.Int(0); }).ok()) << sql;
  return n;
}

std::vector<trace::TraceModel> ReadExport(const std::string& file) {
  auto files = trace::ListTraceFiles(kNsys + file);
  EXPECT_TRUE(files.ok()) << files.status().message();
  auto models = trace::ReadTraceFiles(*files, {});
  EXPECT_TRUE(models.ok()) << models.status().message();
  return std::move(*models);
}

struct DeviceWork {
  int64_t kernels = 0, kernel_ns = 0, memcpys = 0, memsets = 0;
  bool operator==(const DeviceWork&) const = default;
};

std::map<int64_t, DeviceWork> FromModels(const std::vector<trace::TraceModel>& models) {
  std::map<int64_t, DeviceWork> out;
  for (const trace::TraceModel& m : models) {
    for (size_t i = 0; i < m.size(); ++i) {
      DeviceWork& w = out[m.device_of(i)];
      if (m.kind[i] == trace::EventKind::kKernel) ++w.kernels, w.kernel_ns += m.dur_ns[i];
      if (m.kind[i] == trace::EventKind::kMemcpy) ++w.memcpys;
      if (m.kind[i] == trace::EventKind::kMemset) ++w.memsets;
    }
  }
  out.erase(-1);  // host events
  return out;
}

std::map<int64_t, DeviceWork> FromSql(const trace::SqliteDb& db) {
  std::map<int64_t, DeviceWork> out;
  auto each = [&](const std::string& sql, auto add) {
    EXPECT_TRUE(db.Each(sql, [&](const trace::SqliteRow& r) { add(out[r.Int(0)], r); }).ok());
  };
  each("SELECT deviceId, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1",
       [](DeviceWork& w, const trace::SqliteRow& r) {
         w.kernels = r.Int(1), w.kernel_ns = r.Int(2);
       });
  if (db.HasTable("CUPTI_ACTIVITY_KIND_MEMCPY"))
    each("SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1",
         [](DeviceWork& w, const trace::SqliteRow& r) { w.memcpys = r.Int(1); });
  if (db.HasTable("CUPTI_ACTIVITY_KIND_MEMSET"))
    each("SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET GROUP BY 1",
         [](DeviceWork& w, const trace::SqliteRow& r) { w.memsets = r.Int(1); });
  return out;
}

TEST(NsysGolden, GpuWorkPerDeviceIsTheTablesOwn) {
  TRAINPROF_SKIP_WITHOUT_SHARED_NSYS();
  for (const std::string f :
       {"mfu_2gpu_before.sqlite", "mfu_2gpu_after.sqlite", "healthy_1pct.sqlite", "mock.sqlite",
        "cloverleaf/perlmutter-cloverleaf-cuda.sqlite"}) {
    SCOPED_TRACE(f);
    const std::map<int64_t, DeviceWork> want = FromSql(OpenExport(f));
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(FromModels(ReadExport(f)), want);
  }
}

TEST(NsysGolden, TwoProcessesAreTwoRanksAndLaunchesAreLinked) {
  TRAINPROF_SKIP_WITHOUT_SHARED_NSYS();
  const trace::SqliteDb db = OpenExport("mfu_2gpu_before.sqlite");
  const std::vector<trace::TraceModel> models = ReadExport("mfu_2gpu_before.sqlite");
  ASSERT_EQ(models.size(), 2u);
  for (size_t r = 0; r < models.size(); ++r) {
    const trace::TraceModel& m = models[r];
    EXPECT_EQ(m.rank, static_cast<int64_t>(r));
    // Every kernel whose launch the export recorded in the same process is linked to it.
    const int64_t launched = SqlCount(
        db,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME "
        "r ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) "
        "WHERE k.deviceId = " +
            std::to_string(r));
    int64_t linked = 0;
    for (size_t i = 0; i < m.size(); ++i)
      linked += m.kind[i] == trace::EventKind::kKernel && m.launcher[i] >= 0;
    EXPECT_EQ(linked, launched);
    EXPECT_GT(linked, 1900);
  }
}

// Per operator name, the GPU time of the work (kernels, copies, sets) each call launched itself:
// the kernel's launch call (same process and correlation id), then the innermost emit_nvtx operator
// range on the call's thread that holds the whole call.
std::map<std::string, int64_t> DeviceSelfFromSql(const trace::SqliteDb& db, int64_t device) {
  struct Range {
    int64_t start, end;
    std::string name;
  };
  std::map<int64_t, std::vector<Range>> ranges;  // by globalTid, in start order
  EXPECT_TRUE(db.Each("SELECT globalTid, start, end, text FROM NVTX_EVENTS WHERE eventType = 59 "
                      "AND text IS NOT NULL AND end IS NOT NULL ORDER BY start",
                      [&](const trace::SqliteRow& r) {
                        const auto p = trace::ParseNvtxRange(r.Text(3));
                        if (p.op)
                          ranges[r.Int(0)].push_back({r.Int(1), r.Int(2), std::string(p.name)});
                      })
                  .ok());
  std::map<std::string, int64_t> out;
  std::string gpu;  // every kind of GPU work: kernels, copies, sets
  for (const char* t : {"KERNEL", "MEMCPY", "MEMSET"}) {
    gpu += fmt::format(
        "{}SELECT start, end, deviceId, correlationId, globalPid FROM "
        "CUPTI_ACTIVITY_KIND_{}",
        gpu.empty() ? "" : " UNION ALL ", t);
  }
  const std::string sql = fmt::format(
      "SELECT r.globalTid, r.start, g.end - g.start, r.end FROM ({}) g JOIN "
      "CUPTI_ACTIVITY_KIND_RUNTIME "
      "r ON r.correlationId = g.correlationId AND (r.globalTid >> 24) = (g.globalPid >> 24) "
      "WHERE g.deviceId = {}",
      gpu, device);
  EXPECT_TRUE(db.Each(sql, [&](const trace::SqliteRow& r) {
                  const Range* inner = nullptr;
                  for (const Range& g : ranges[r.Int(0)]) {
                    if (g.start > r.Int(1)) break;
                    if (g.end >= r.Int(3)) inner = &g;  // later starts nest inside earlier ones
                  }
                  if (inner) out[inner->name] += r.Int(2);
                }).ok());
  return out;
}

TEST(NsysGolden, OperatorGpuTimeIsItsKernelsByCorrelation) {
  TRAINPROF_SKIP_WITHOUT_SHARED_NSYS();
  const trace::SqliteDb db = OpenExport("mfu_2gpu_before.sqlite");
  const std::vector<trace::TraceModel> models = ReadExport("mfu_2gpu_before.sqlite");
  std::vector<RankAnalysis> a = AnalyzeAll(models, {});
  for (int64_t rank : {0, 1}) {
    const std::map<std::string, int64_t> want = DeviceSelfFromSql(db, rank);
    ASSERT_GE(want.size(), 10u);
    std::map<std::string, int64_t> got;
    for (const OperatorRow& o : a[static_cast<size_t>(rank)].lists->operators)
      if (o.device_self_ns > 0) got[o.name] = o.device_self_ns;
    EXPECT_EQ(got, want) << "rank " << rank;
    EXPECT_GT(want.at("aten::addmm"), 0);
  }
}

TEST(NsysGolden, CloverLeafKernelsMatchPipitsReading) {
  TRAINPROF_SKIP_WITHOUT_SHARED_NSYS();
  std::ifstream csv(kNsys + "cloverleaf/cloverleaf_gpu_trace.csv");
  std::string line;
  std::getline(csv, line);
  int64_t kernels = 0, kernel_ns = 0, enter = 0;
  while (std::getline(csv, line)) {
    // Name,streamId,type,bytes,Trace Type,Event Type,Timestamp (ns),...
    std::vector<std::string> f(1);
    for (char c : line) {
      if (c == ',')
        f.emplace_back();
      else
        f.back().push_back(c);
    }
    if (f.size() < 7 || f[2] != "kernel") continue;
    if (f[5] == "Enter") ++kernels, enter = std::stoll(f[6]);
    if (f[5] == "Leave") kernel_ns += std::stoll(f[6]) - enter;
  }
  const std::map<int64_t, DeviceWork> got =
      FromModels(ReadExport("cloverleaf/perlmutter-cloverleaf-cuda.sqlite"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.begin()->second.kernels, kernels);
  EXPECT_EQ(got.begin()->second.kernel_ns, kernel_ns);
}

}  // namespace
}  // namespace trainprof::analysis
