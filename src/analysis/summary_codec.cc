// The .tpsum file (rank_summary.h): one field list per struct, written and read by the same
// function, so the two cannot disagree. A field added to a struct the report reads must be added
// here and kSummaryVersion raised; the merge == whole test fails otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "analysis/rank_summary.h"
#include "analysis/ranks/detail_store.h"
#include "trace/input_kind.h"

namespace trainprof::analysis {
namespace {

static_assert(std::endian::native == std::endian::little, "the summary file is little-endian");

constexpr std::string_view kMagic = trace::kRankSummaryMagic;  // the input list tells it by this

// clang-format off
template <class A> void Fields(A& a, HtaOptions& o) {
  a(o.hta_compat, o.compat_drop_last_step, o.consecutive_kernel_delay_ns, o.runtime_cutoff_ns,
    o.launch_delay_cutoff_ns, o.top_kernels, o.keep_last_step, o.duration_ratio);
}
template <class A> void Fields(A& a, AnalyzeOptions& o) {
  a(o.steps, o.hta, o.dataloader_patterns, o.steps_from, o.critical_path, o.critical_path_data_load,
    o.flops.peak_tflops, o.flops.peak_tbps);
}
template <class A> void Fields(A& a, trace::DeviceInfo& d) {
  a(d.id, d.name, d.total_memory_bytes, d.compute_major, d.compute_minor, d.num_sms,
    d.max_threads_per_sm, d.vendor, d.arch);
}
// Written as severity, name, count, message, as before the registry gave ids: the name is the
// stable key, read back through the registry (an unknown one as unrecognized_diagnostic).
template <class A> void Fields(A& a, base::Diagnostic& d) {
  base::DataSeverity severity = d.severity();
  std::string name(d.name());
  a(severity, name, d.count, d.message);
  if constexpr (requires { a.bad(); })  // the Decoder
    d = base::DiagnosticFromName(name, d.count, std::move(d.message));
}
template <class A> void Fields(A& a, RankInfo& r) {
  a(r.path, r.source, r.rank, r.world_size, r.host_name, r.truncated, r.json_bytes, r.events, r.devices,
    r.peak_allocated_bytes, r.diagnostics, r.pytorch);
}
template <class A> void Fields(A& a, Step& s) {
  a(s.name, s.number, s.begin_ns, s.end_ns, s.host_begin_ns, s.host_end_ns, s.launches);
}
template <class A> void Fields(A& a, StepsResult& s) {
  a(s.steps, s.dropped, s.synthetic, s.has_gpu, s.gpu_data_cut, s.gpu_window);
}
template <class A> void Fields(A& a, StepBreakdown& s) { a(s.step, s.total_ns, s.ns); }
template <class A> void Fields(A& a, Overview& o) {
  a(o.steps, o.avg_ns, o.avg_total_ns, o.any_communication);
}
template <class A> void Fields(A& a, TimedValue& v) { a(v.t_ns, v.value); }
template <class A> void Fields(A& a, GpuSummary& g) {
  a(g.device, g.name, g.memory_bytes, g.arch, g.num_sms, g.kernels, g.kernel_ns,
    g.utilization_pct, g.sm_efficiency_pct, g.occupancy_pct, g.tensor_core_pct,
    g.simt_gemm_pct, g.utilization_curve, g.sm_efficiency_curve);
}
template <class A> void Fields(A& a, Temporal& t) {
  a(t.idle_ns, t.compute_ns, t.non_compute_ns, t.span_ns);
}
template <class A> void Fields(A& a, StreamIdle& s) { a(s.stream, s.ns, s.gaps, s.present, s.interval_stats); }
template <class A> void Fields(A& a, KernelStats& k) {
  a(k.name, k.type, k.count, k.sum_ns, k.min_ns, k.max_ns, k.mean_ns, k.std_ns);
}
template <class A> void Fields(A& a, LaunchStats& l) {
  a(l.launches, l.short_kernels, l.runtime_outliers, l.launch_delay_outliers, l.mean_delay_ns,
    l.median_delay_ns, l.p95_delay_ns, l.max_delay_ns, l.mean_launch_ns, l.graph_launches,
    l.graph_kernels, l.graph_gpu_ns, l.gpu_ns);
}
template <class A> void Fields(A& a, StreamQueue& q) {
  a(q.stream, q.changes, q.max_length, q.mean_length, q.time_mean_length, q.blocked_ns,
    q.span_ns);
}
template <class A> void Fields(A& a, HtaResult& h) {
  a(h.rank, h.gpu_events, h.temporal, h.idle, h.kernel_types, h.top_kernels,
    h.comm_comp_overlap_pct, h.has_communication, h.launch, h.queues);
}
template <class A> void Fields(A& a, OperatorRow& o) {
  a(o.name, o.input_dims, o.call_stack, o.calls, o.host_self_ns, o.host_total_ns,
    o.device_self_ns, o.device_total_ns, o.tc_self_ns, o.tc_total_ns, o.tc_eligible);
}
template <class A> void Fields(A& a, KernelRow& k) {
  a(k.name, k.op, k.tensor_cores, k.calls, k.total_ns, k.min_ns, k.max_ns, k.blocks_per_sm,
    k.occupancy_pct);
}
template <class A> void Fields(A& a, PhaseRow& p) {
  a(p.name, p.phase, p.calls, p.cpu_ns, p.gpu_calls, p.gpu_ns, p.device_ns);
}
template <class A> void Fields(A& a, PhaseResult& p) { a(p.rows, p.dataloader_markers); }
template <class A> void Fields(A& a, ModuleRow& m) {
  a(m.name, m.path, m.depth, m.calls, m.host_ns, m.device_ns, m.self_device_ns);
}
template <class A> void Fields(A& a, KernelSequence& k) { a(k.op, k.kernels, k.calls, k.total_ns); }
template <class A> void Fields(A& a, PathMark& m) { a(m.compute_ns, m.data_ns); }
template <class A> void Fields(A& a, StepMarks& m) { a(m.begin, m.end); }
template <class A> void Fields(A& a, RankCommOp& o) {
  a(o.key, o.bytes, o.group_size, o.start_ns, o.end_ns, o.at_start, o.at_end, o.group, o.type,
    o.key_kind);
}

template <class A> void Fields(A& a, CommBreakdown& b) {
  a(b.computation_ns, b.overlap_ns, b.communication_ns, b.other_ns);
}
template <class A> void Fields(A& a, Candidate& c) {
  a(c.key, c.rank, c.severity, c.root_cause, c.saves_ns, c.figure, c.figure_format, c.headline,
    c.detail, c.advice);
}
template <class A> void Fields(A& a, CpWindow::Top& t) { a(t.name, t.category, t.ns); }
template <class A> void Fields(A& a, CpWindow::Edge& e) {
  a(e.from_ns, e.to_ns, e.type, e.category, e.name, e.weight_ns, e.from_node, e.to_node, e.from,
    e.to, e.from_start, e.to_start, e.attributed, e.critical);
}
template <class A> void Fields(A& a, CpWindow::Event& e) {
  a(e.name, e.kind, e.ts_ns, e.dur_ns, e.stream, e.node);
}
template <class A> void Fields(A& a, CpWindow& w) {
  a(w.label, w.note, w.length_ns, w.nodes, w.category_ns, w.top, w.edges, w.events);
}
template <class A> void Fields(A& a, MemoryPoint& p) { a(p.ts_ns, p.allocated, p.reserved); }
template <class A> void Fields(A& a, LiveBytes& l) { a(l.op, l.bytes); }
template <class A> void Fields(A& a, memory::RolePoint& p) { a(p.time, p.bytes); }
template <class A> void Fields(A& a, DeviceSeries& s) {
  a(s.curve, s.live_at_peak, s.role_bytes, s.rule_bytes, s.role_timeline);
}
template <class A> void Fields(A& a, DeviceMemory& d) {
  a(d.device, d.peak_allocated, d.peak_ts_ns, d.peak_reserved, d.live_unknown, d.curve_points,
    d.role_points, d.series);
}
template <class A> void Fields(A& a, Allocation& l) {
  a(l.device, l.op, l.bytes, l.alloc_ns, l.free_ns);
}
template <class A> void Fields(A& a, OperatorMemory& o) {
  a(o.op, o.device, o.calls, o.self_count, o.self_bytes, o.self_increase, o.total_count,
    o.total_bytes, o.total_increase);
}
template <class A> void Fields(A& a, MemoryLists& l) { a(l.allocations, l.operators, l.op_names); }
template <class A> void Fields(A& a, MemoryResult& m) {
  a(m.devices, m.lists, m.events, m.unattributed, m.frees_without_alloc, m.t0_ns);
}
template <class A> void Fields(A& a, PeakTflops& p) { a(p.gpu, p.fp32, p.tf32, p.fp16, p.fp8, p.fp4, p.hbm_tbps); }
template <class A> void Fields(A& a, FlopsRow& f) {
  a(f.name, f.precision, f.calls, f.flops, f.bytes, f.device_ns);
}
template <class A> void Fields(A& a, StepFlops& s) { a(s.step, s.flops, s.dur_ns); }
template <class A> void Fields(A& a, ShapeRow& s) {
  a(s.name, s.dims, s.dtype, s.category, s.precision, s.calls, s.flops, s.bytes, s.device_ns);
}
template <class A> void Fields(A& a, FlopsResult& f) {
  a(f.has_shapes, f.device_name, f.peak, f.operators, f.steps, f.main_precision, f.shapes,
    f.covered_ns, f.uncovered);
}
template <class A> void Fields(A& a, CategoryShare& s) { a(s.ns, s.kernels, s.top_op, s.top_ns); }
template <class A> void Fields(A& a, CategoryResult& c) { a(c.by, c.total_ns, c.by_kernel_ns); }
template <class A> void Fields(A& a, MemcpyBandwidth& m) {
  a(m.direction, m.copies, m.bytes, m.dur_ns, m.max_bytes_per_s, m.copy_ns, m.pageable_ns);
}
template <class A> void Fields(A& a, IdleGap& g) {
  a(g.device, g.begin_ns, g.end_ns, g.cause, g.host);
}
template <class A> void Fields(A& a, IdleCauses& c) { a(c.idle_ns, c.ns, c.largest); }
template <class A> void Fields(A& a, RankTables& t) {
  a(t.gpus, t.hta, t.idle, t.kernel_sequences, t.categories, t.memcpy, t.flops);
}
template <class A> void Fields(A& a, RankLists& l) {
  a(l.operators, l.operators_by_shape, l.operators_by_stack, l.kernels, l.operator_kernels,
    l.modules, l.flops_operators, l.flops_shapes, l.candidates);
}
template <class A> void Fields(A& a, RankAnalysis& r) {
  a(r.steps, r.overview, r.tables, r.lists, r.phases, r.comm_ops, r.comm_names,
    r.comm_breakdowns, r.step_marks, r.critical_paths, r.memory, r.gpu_ns);
}
template <class A> void Fields(A& a, RankSummary& s) { a(s.options, s.input, s.info, s.analysis); }
// clang-format on

class Encoder {
 public:
  std::string out;
  template <class... T>
  void operator()(const T&... v) {
    (Put(v), ...);
  }

 private:
  template <class T>
  requires std::is_arithmetic_v<T>
  void Put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  template <class T>
  requires std::is_enum_v<T>
  void Put(T v) { Put(static_cast<int64_t>(v)); }
  void Put(const std::string& s) {
    Put(static_cast<uint64_t>(s.size()));
    out += s;
  }
  template <class T>
  void Put(const std::vector<T>& v) {
    Put(static_cast<uint64_t>(v.size()));
    for (const T& x : v) Put(x);
  }
  void Put(const SharedDevices& d) { Put(d.list()); }
  template <class T, size_t N>
  void Put(const std::array<T, N>& v) {
    for (const T& x : v) Put(x);
  }
  template <class T, class U>
  void Put(const std::pair<T, U>& p) {
    Put(p.first), Put(p.second);
  }
  template <class T>
  void Put(const std::optional<T>& o) {
    Put(o.has_value());
    if (o) Put(*o);
  }
  template <class T>
  void Put(const base::Box<T>& b) {  // as an optional
    Put(static_cast<bool>(b));
    if (b) Put(*b);
  }
  template <class T>
  requires std::is_class_v<T>
  void Put(const T& s) {
    Fields(*this, const_cast<T&>(s));  // Fields only reads through an Encoder
  }
};

class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  bool bad() const { return bad_; }
  size_t left() const { return in_.size() - pos_; }
  template <class... T>
  void operator()(T&... v) {
    (Get(v), ...);
  }

 private:
  template <class T>
  requires std::is_arithmetic_v<T>
  void Get(T& v) {
    v = T{};
    if (bad_ || left() < sizeof(T)) {
      bad_ = true;
      return;
    }
    if constexpr (std::is_same_v<T, bool>) {
      v = in_[pos_] != 0;
    } else {
      std::memcpy(&v, in_.data() + pos_, sizeof(T));
    }
    pos_ += sizeof(T);
  }
  template <class T>
  requires std::is_enum_v<T>
  void Get(T& v) {
    int64_t x = 0;
    Get(x);
    v = static_cast<T>(x);
  }
  // A length no bigger than the bytes left: a corrupt length never allocates gigabytes.
  uint64_t Length() {
    uint64_t n = 0;
    Get(n);
    if (n > left()) bad_ = true;
    return bad_ ? 0 : n;
  }
  void Get(std::string& s) {
    uint64_t n = Length();
    s.assign(in_.data() + pos_, n);
    pos_ += n;
  }
  template <class T>
  void Get(std::vector<T>& v) {
    v.resize(Length());
    for (T& x : v) Get(x);
  }
  void Get(SharedDevices& d) {
    std::vector<trace::DeviceInfo> list;
    Get(list);
    d = SharedDevices(list);
  }
  template <class T, size_t N>
  void Get(std::array<T, N>& v) {
    for (T& x : v) Get(x);
  }
  template <class T, class U>
  void Get(std::pair<T, U>& p) {
    Get(p.first), Get(p.second);
  }
  template <class T>
  void Get(std::optional<T>& o) {
    bool has = false;
    Get(has);
    o.reset();
    if (!has) return;
    o.emplace();
    Get(*o);
  }
  template <class T>
  void Get(base::Box<T>& b) {
    bool has = false;
    Get(has);
    if (!has) return b.reset();
    if (!b) b.emplace();
    Get(*b);
  }
  template <class T>
  requires std::is_class_v<T>
  void Get(T& s) { Fields(*this, s); }

  std::string_view in_;
  size_t pos_ = 0;
  bool bad_ = false;
};

}  // namespace

std::string EncodeSummary(const RankSummary& s) {
  DetailHold hold(s.analysis);  // a spilled summary is written whole
  Encoder e;
  e.out = kMagic;
  e(kSummaryVersion, s);
  return std::move(e.out);
}

namespace {

// A communication kernel's names are indices into its rank's comm_names: a corrupt file could
// put them out of range.
bool CommNamesInRange(const RankAnalysis& a) {
  const auto n = static_cast<int64_t>(a.comm_names.size());
  return std::ranges::all_of(a.comm_ops, [n](const RankCommOp& o) {
    return o.group < n && o.type < n &&
           (o.key_kind != CommKey::kCommsId || (o.key >= 0 && o.key < n));
  });
}

}  // namespace

StatusOr<RankSummary> DecodeSummary(std::string_view bytes) {
  if (!bytes.starts_with(kMagic))
    return InvalidArgument("not a trainprof rank summary (no TPSUMMARY header)");
  Decoder d(bytes.substr(kMagic.size()));
  uint32_t version = 0;
  d(version);
  if (!d.bad() && version != kSummaryVersion) {
    return InvalidArgument(fmt::format(
        "rank summary format version {}; this trainprof reads version {} (analyse the traces "
        "again with this trainprof)",
        version, kSummaryVersion));
  }
  RankSummary s;
  d(s);
  if (d.bad()) return InvalidArgument("rank summary cut short or corrupt");
  if (d.left() != 0) return InvalidArgument("rank summary has bytes after its end");
  if (!CommNamesInRange(s.analysis))
    return InvalidArgument("rank summary corrupt: a communication kernel's name is out of range");
  return s;
}

namespace {

// What of an analysis ranks/detail_store.h moves out: the lists that passes across ranks read
// alone first, in AcrossList's order, then those only per-rank CSV rows read.
// `r.lists` and `r.memory.lists` are present (the detail is in `r`).
template <class A>
auto AcrossLists(A& a, RankAnalysis& r) {
  RankLists& l = *r.lists;
  return a(l.modules, l.operators, l.kernels, l.flops_shapes, l.candidates, r.tables);
}
template <class A>
auto ListsAfterAcross(A& a, RankAnalysis& r) {  // the rank's, not its devices'
  RankLists& l = *r.lists;
  MemoryLists& m = *r.memory.lists;
  return a(l.flops_operators, m.allocations, m.operators, m.op_names, l.operator_kernels,
           l.operators_by_shape, l.operators_by_stack);
}
template <class A>
void DetailAfterAcross(A& a, RankAnalysis& r) {
  ListsAfterAcross(a, r);
  for (DeviceMemory& d : r.memory.devices) a(d.series);
}

template <class A>
void DetailFields(A& a, RankAnalysis& r) {
  AcrossLists(a, r);
  DetailAfterAcross(a, r);
}

// The boxes of the detail lists a thread let go (RecycleDetail; its devices' series aside:
// numbers, one allocation each), to decode into again on that thread: decoding assigns every
// field into rows and strings that already have their memory. A CSV file of many ranks decodes
// and lets go each rank's detail once; making and freeing its rows and strings anew was about a
// tenth of that time.
struct SpareDetail {
  base::Box<RankTables> tables{nullptr};
  base::Box<RankLists> lists{nullptr};
  base::Box<MemoryLists> memory{nullptr};
};
constexpr size_t kSpareDetails = 16;  // two chunks of CsvBatch
// Only a rank whose record is smaller is kept: a thread keeps the lists of 16 such records at
// most (a process that lives on, Python's, keeps its main thread's), and a big rank's lists cost
// little to make again against its rows.
constexpr int64_t kSpareRecordBytes = int64_t{1} << 20;
std::vector<SpareDetail>& Spare() {
  thread_local std::vector<SpareDetail> spare;
  return spare;
}

// Encodes each across list, then notes where it ends (EncodeDetail).
struct EachEnding {
  Encoder e;
  std::array<int64_t, kAcrossLists>* ends = nullptr;
  size_t list = 0;
  template <class... T>
  void operator()(T&... v) {
    ((e(v), End()), ...);
  }
  void End() {
    if (ends != nullptr) (*ends)[list++] = static_cast<int64_t>(e.out.size());
  }
};

}  // namespace

std::string EncodeDetail(const RankAnalysis& a, std::array<int64_t, kAcrossLists>* ends) {
  EachEnding each{.ends = ends};
  auto& r = const_cast<RankAnalysis&>(a);  // an Encoder only reads
  AcrossLists(each, r);
  Encoder& e = each.e;
  DetailAfterAcross(e, r);
  return std::move(e.out);
}

namespace {

template <class T>
bool DecodeOneList(std::string_view bytes, std::vector<T>& rows) {
  Decoder d(bytes);
  d(rows);
  return !d.bad() && d.left() == 0;
}

}  // namespace

bool DecodeList(std::string_view bytes, std::vector<ModuleRow>& rows) {
  return DecodeOneList(bytes, rows);
}
bool DecodeList(std::string_view bytes, std::vector<OperatorRow>& rows) {
  return DecodeOneList(bytes, rows);
}
bool DecodeList(std::string_view bytes, std::vector<KernelRow>& rows) {
  return DecodeOneList(bytes, rows);
}
bool DecodeList(std::string_view bytes, std::vector<ShapeRow>& rows) {
  return DecodeOneList(bytes, rows);
}
bool DecodeList(std::string_view bytes, std::vector<Candidate>& rows) {
  return DecodeOneList(bytes, rows);
}
bool DecodeList(std::string_view bytes, RankTables& tables) {
  Decoder d(bytes);
  bool has = false;
  d(has);
  if (has) d(tables);
  return has && !d.bad() && d.left() == 0;
}

bool DecodeDetail(std::string_view bytes, RankAnalysis& a) {
  std::vector<SpareDetail>& spare = Spare();
  if (!spare.empty()) {
    a.tables = std::move(spare.back().tables);
    a.lists = std::move(spare.back().lists);
    a.memory.lists = std::move(spare.back().memory);
    spare.pop_back();
  }
  if (!a.lists) a.lists.emplace();
  if (!a.memory.lists) a.memory.lists.emplace();
  Decoder d(bytes);
  DetailFields(d, a);
  return !d.bad() && d.left() == 0;
}

void FreeDetail(RankAnalysis& a) {
  // Every field DetailFields names is in a box: the tables, the lists of rows, the Memory
  // view's lists and each device's series.
  a.tables.reset();
  a.lists.reset();
  a.memory.lists.reset();
  for (DeviceMemory& d : a.memory.devices) d.series.reset();
}

void RecycleDetail(RankAnalysis& a) {
  std::vector<SpareDetail>& spare = Spare();
  if (spare.size() < kSpareDetails && a.spilled.bytes <= kSpareRecordBytes && a.lists)
    spare.push_back({std::move(a.tables), std::move(a.lists), std::move(a.memory.lists)});
  FreeDetail(a);
}

std::string EncodeOptions(const AnalyzeOptions& o) {
  Encoder e;
  e(o);
  return std::move(e.out);
}

}  // namespace trainprof::analysis
