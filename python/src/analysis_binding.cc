// trainprof.analyze() for the Python package: `trainprof analyze`'s reading, analysis and
// report (analysis/run/driver.h, shared with the CLI), run in-process with the GIL
// released, and the Report handed to Python table by table, a list per column, for pandas.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/hta/hta.h"
#include "analysis/hta/hta_annotations.h"
#include "analysis/hta/hta_aten_ops.h"
#include "analysis/hta/hta_counter_rows.h"
#include "analysis/hta/hta_kernel_annotations.h"
#include "analysis/hta/hta_launches.h"
#include "analysis/hta/hta_sequences.h"
#include "analysis/hta/hta_stragglers.h"
#include "analysis/rank_summary.h"
#include "analysis/ranks/detail_store.h"
#include "analysis/run/driver.h"
#include "analysis/run/options.h"
#include "base/text.h"
#include "python/src/bindings.h"
#include "report/data_quality.h"
#include "report/json.h"
#include "report/run_folder.h"
#include "report/run_meta.h"
#include "report/run_writers.h"
#include "report/terminal.h"
#include "trace/input_kind.h"
#include "trace/trace_files.h"
#include "trainprof/version.h"

namespace py = pybind11;

namespace trainprof::python {
namespace {

PyObject* g_trace_error = nullptr;

[[noreturn]] void ThrowTraceError(const std::string& message) {
  PyErr_SetString(g_trace_error, message.c_str());
  throw py::error_already_set();
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One run analysed: its report, the summaries it was built from (critical_path.trace.json needs
// them) and, when asked for, HTA's per-launch rows of each rank.
class Analysis {
 public:
  std::unique_ptr<analysis::RunResult> run;  // the report and its summaries (driver.h)
  std::map<int64_t, std::vector<analysis::KernelLaunch>> launches;  // by rank
  std::map<int64_t, int64_t> trace_duration_ns;             // by rank: HTA's get_trace_duration
  std::map<int64_t, analysis::HtaAnnotations> annotations;  // by rank
  std::map<int64_t, analysis::HtaStragglerRows> straggler_rows;  // by rank
  std::set<int64_t> profiler_steps;         // every ProfilerStep#N number of every rank
  std::vector<std::string> capture_traces;  // the request's: a rank read again credits as it did

  std::vector<std::string> Sections() const {
    std::vector<std::string> out;
    for (const report::Section& s : run->report.sections) out.push_back(s.id);
    return out;
  }

  // (section, table, title, kind) of every table, in report order.
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> Tables() const {
    std::vector<std::tuple<std::string, std::string, std::string, std::string>> out;
    for (const report::Section& s : run->report.sections)
      for (const report::Table& t : s.tables) out.emplace_back(s.id, t.id, t.title, KindName(t));
    return out;
  }

  // The table `id` ("table" or "section/table") as {"section", "title", "kind", "columns":
  // [(key, title, unit)], "data": [one list per column], "footer": [...]}; KeyError when absent.
  py::dict Table(const std::string& id) const {
    const auto [section, table] = Find(id);
    py::list columns, data;
    std::vector<py::list> values(table->columns.size());
    for (const report::Column& col : table->columns)
      columns.append(py::make_tuple(col.key, col.title, report::UnitName(col.unit)));
    // Rank by rank for a many-rank table whose rows only its CSV holds: made from the
    // summaries now, so only the table asked for is ever in memory.
    table->ForEachRowBlock([&](const std::vector<std::vector<report::Value>>& rows) {
      for (const auto& row : rows)
        for (size_t c = 0; c < values.size(); ++c) values[c].append(ToPython(row[c]));
    });
    for (py::list& v : values) data.append(std::move(v));
    py::list footer;
    for (const auto& row : table->footer) {
      py::list values;
      for (const report::Value& v : row) values.append(ToPython(v));
      footer.append(std::move(values));
    }
    py::dict out;
    out["section"] = section->id;
    out["title"] = table->title;
    out["kind"] = KindName(*table);
    out["columns"] = std::move(columns);
    out["data"] = std::move(data);
    out["footer"] = std::move(footer);
    out["notes"] = table->notes;
    return out;
  }

  // (section, key, title, value, unit, suffix) of every headline figure.
  py::list Metrics() const {
    py::list out;
    for (const report::Section& s : run->report.sections)
      for (const report::Metric& m : s.metrics)
        out.append(py::make_tuple(s.id, m.key, m.title, ToPython(m.value), report::UnitName(m.unit),
                                  m.suffix));
    return out;
  }

  // (section, severity, text) of every finding.
  std::vector<std::tuple<std::string, std::string, std::string>> Findings() const {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const report::Section& s : run->report.sections)
      for (const report::Finding& f : s.findings)
        out.emplace_back(s.id, report::SeverityName(f.severity), f.text);
    return out;
  }

  // (name, severity, count, message, meaning) of every diagnostic.
  std::vector<std::tuple<std::string, std::string, int64_t, std::string, std::string>> Diagnostics()
      const {
    std::vector<std::tuple<std::string, std::string, int64_t, std::string, std::string>> out;
    for (const report::Diagnostic& d : run->report.diagnostics)
      out.emplace_back(std::string(d.name()),
                       report::SeverityName(report::SeverityFor(d.severity())), d.count, d.message,
                       std::string(d.meaning()));
    return out;
  }

  std::string Json() const {
    py::gil_scoped_release release;
    return report::RenderJsonString(run->report);
  }

  std::string Text() const {
    std::ostringstream text;
    report::TerminalRenderer().Render(run->report, text);
    return text.str();
  }

  // HTA's per-launch columns of `rank`, times in µs: (correlation, cpu, gpu, delay, launch ts,
  // GPU ts, stream, pid, tid); None when the launches were not kept or the rank has none.
  py::object Launches(int64_t rank) const {
    auto it = launches.find(rank);
    if (it == launches.end()) return py::none();
    const auto& rows = it->second;
    const size_t n = rows.size();
    py::list corr(n), cpu(n), gpu(n), delay(n), launch_ts(n), gpu_ts(n), stream(n), pid(n), tid(n);
    auto us = [](int64_t ns) { return py::float_(static_cast<double>(ns) / 1000.0); };
    for (size_t i = 0; i < n; ++i) {
      corr[i] = py::int_(rows[i].correlation);
      cpu[i] = us(rows[i].cpu_ns);
      gpu[i] = us(rows[i].gpu_ns);
      delay[i] = us(rows[i].delay_ns);
      launch_ts[i] = us(rows[i].launch_ts_ns);
      gpu_ts[i] = us(rows[i].gpu_ts_ns);
      stream[i] = py::int_(rows[i].stream);
      pid[i] = py::int_(rows[i].pid);
      tid[i] = py::int_(rows[i].tid);
    }
    return py::make_tuple(corr, cpu, gpu, delay, launch_ts, gpu_ts, stream, pid, tid);
  }

  // f(model, HTA options) on `rank`'s file, read again without the GIL (the models are not
  // kept); a file that cannot be read raises TraceError.
  template <typename F>
  auto OnRankModel(int64_t rank, F f) const {
    decltype(f(std::declval<const trace::TraceModel&>(),
               std::declval<const analysis::HtaOptions&>())) out{};
    Status failed = Status::Ok();
    {
      py::gil_scoped_release release;
      StatusOr<trace::TraceModel> m = trace::ReadModel(PathOfRank(rank), {}, capture_traces);
      if (m.ok()) {
        out = f(*m, analysis::RankHtaOptions(*m, run->summaries->options.hta));
      } else {
        failed = m.status();
      }
    }
    if (!failed.ok()) ThrowTraceError(failed.message());
    return out;
  }

  // HTA's frequent kernel sequences of `rank` (hta_sequences.h): (pattern, count, GPU µs, CPU
  // µs) rows. The rank's file is read again: the models are not kept. Raises TraceError.
  std::vector<std::tuple<std::string, int64_t, double, double>> HtaSequences(
      int64_t rank, const std::string& op, size_t min_length) const {
    const auto found = OnRankModel(rank, [&](const auto& m, const auto& o) {
      return analysis::HtaKernelSequences(m, o, op, min_length);
    });
    std::vector<std::tuple<std::string, int64_t, double, double>> out;
    for (const analysis::HtaSequence& s : found)
      out.emplace_back(s.pattern, s.count, static_cast<double>(s.gpu_ns) / 1000.0,
                       static_cast<double>(s.cpu_ns) / 1000.0);
    return out;
  }

  // HTA's user-annotation breakdown of `rank` (hta_annotations.h), the GPU's or the CPU's,
  // folded as HTA folds it (HtaFold): (whether the trace has that category at all, rows of
  // name, sum, max, min, mean and std in µs); (False, []) without the launches' analysis.
  using AnnotationRow = std::tuple<std::string, double, double, double, double, double>;
  std::pair<bool, std::vector<AnnotationRow>> AnnotationStats(
      int64_t rank, bool gpu, size_t top, double duration_ratio,
      std::vector<std::string> allowlist) const {
    std::vector<AnnotationRow> rows;
    auto it = annotations.find(rank);
    if (it == annotations.end()) return {false, rows};
    std::vector<analysis::KernelStats> per_name;
    for (const analysis::AnnotationStats& a : gpu ? it->second.gpu : it->second.cpu)
      per_name.push_back({.name = a.name,
                          .count = a.count,
                          .sum_ns = a.sum_ns,
                          .min_ns = a.min_ns,
                          .max_ns = a.max_ns,
                          .std_ns = a.std_ns});
    const analysis::HtaFoldRule rule{
        .top = top, .duration_ratio = duration_ratio, .allowlist = std::move(allowlist)};
    auto us = [](double ns) { return ns / 1000.0; };
    for (const analysis::KernelStats& k : analysis::HtaFold(std::move(per_name), rule))
      rows.emplace_back(k.name, us(static_cast<double>(k.sum_ns)),
                        us(static_cast<double>(k.max_ns)), us(static_cast<double>(k.min_ns)),
                        us(k.mean_ns), us(k.std_ns));
    return {gpu ? it->second.any_gpu : it->second.any_cpu, rows};
  }

  // HTA's aten-op launches of `rank` (hta_aten_ops.h): columns (tid, op, op start, launch
  // start, kernel start, correlation, kernel), times in µs. The rank's file is read again.
  py::tuple AtenOpLaunches(int64_t rank) const {
    const auto rows = OnRankModel(
        rank, [](const auto& m, const auto& o) { return analysis::HtaAtenOpLaunches(m, o); });
    const size_t n = rows.size();
    py::list tid(n), op(n), op_ts(n), launch_ts(n), kernel_ts(n), corr(n), kernel(n);
    auto us = [](int64_t ns) { return py::float_(static_cast<double>(ns) / 1000.0); };
    for (size_t i = 0; i < n; ++i) {
      tid[i] = py::int_(rows[i].tid);
      op[i] = py::str(rows[i].op);
      op_ts[i] = us(rows[i].op_ts_ns);
      launch_ts[i] = us(rows[i].launch_ts_ns);
      kernel_ts[i] = us(rows[i].kernel_ts_ns);
      corr[i] = py::int_(rows[i].correlation);
      kernel[i] = py::str(rows[i].kernel);
    }
    return py::make_tuple(tid, op, op_ts, launch_ts, kernel_ts, corr, kernel);
  }

  // HTA's GPU kernels of `rank` with their GPU user annotation (hta_kernel_annotations.h):
  // columns (ts, dur, pid, tid, stream, correlation, name, annotation), times in µs; None when
  // the trace has no GPU user annotation. The rank's file is read again.
  py::object KernelsWithAnnotations(int64_t rank) const {
    const auto rows = OnRankModel(rank, [](const auto& m, const auto& o) {
      return analysis::HtaKernelsWithAnnotations(m, o);
    });
    if (!rows) return py::none();
    const size_t n = rows->size();
    py::list ts(n), dur(n), pid(n), tid(n), stream(n), corr(n), name(n), note(n);
    auto us = [](int64_t ns) { return py::float_(static_cast<double>(ns) / 1000.0); };
    for (size_t i = 0; i < n; ++i) {
      const analysis::AnnotatedKernel& k = (*rows)[i];
      ts[i] = us(k.ts_ns);
      dur[i] = us(k.dur_ns);
      pid[i] = py::int_(k.pid);
      tid[i] = py::int_(k.tid);
      stream[i] = py::int_(k.stream);
      corr[i] = py::int_(k.correlation);
      name[i] = py::str(k.name);
      note[i] = py::str(k.annotation);
    }
    return py::make_tuple(ts, dur, pid, tid, stream, corr, name, note);
  }

  // HTA's memcpy and memset rows of `rank` (hta_counter_rows.h): columns (ts, end, pid, name,
  // GB/s), times in µs. The rank's file is read again.
  py::tuple MemoryBw(int64_t rank) const {
    const auto rows = OnRankModel(
        rank, [](const auto& m, const auto& o) { return analysis::HtaMemoryBwRows(m, o); });
    const size_t n = rows.size();
    py::list ts(n), end(n), pid(n), name(n), gbps(n);
    auto us = [](int64_t ns) { return py::float_(static_cast<double>(ns) / 1000.0); };
    for (size_t i = 0; i < n; ++i) {
      ts[i] = us(rows[i].ts_ns);
      end[i] = us(rows[i].end_ns);
      pid[i] = py::int_(rows[i].pid);
      name[i] = py::str(rows[i].name);
      gbps[i] = py::float_(rows[i].gbps);
    }
    return py::make_tuple(ts, end, pid, name, gbps);
  }

  // CUPTI's range-profiler counters of `rank` with their operators (hta_counter_rows.h): (whether
  // the trace has ranges, whether they pair with the launch calls, ranges, launch calls, rows of
  // {name, ts µs, dur µs, pid, tid, counters: {metric: value}, op_stack}). Read again.
  py::tuple CounterRanges(int64_t rank) const {
    const auto r = OnRankModel(
        rank, [](const auto& m, const auto& o) { return analysis::HtaCounterRanges(m, o); });
    py::list rows;
    for (const analysis::CounterRange& c : r.rows) {
      py::dict row, counters;
      row["name"] = c.name;
      row["ts"] = static_cast<double>(c.ts_ns) / 1000.0;
      row["dur"] = static_cast<double>(c.dur_ns) / 1000.0;
      row["pid"] = c.pid;
      row["tid"] = c.tid;
      for (const auto& [metric, value] : c.counters) counters[py::str(metric)] = value;
      row["counters"] = std::move(counters);
      row["op_stack"] = c.op_stack;
      rows.append(std::move(row));
    }
    return py::make_tuple(r.any, r.matched, r.ranges, r.launches, rows);
  }

  // HTA's straggler rows of `rank` (hta_stragglers.h), µs: ([(step, first, last end)],
  // [(step, ts, dur, stream, name)]).
  py::tuple StragglerRows(int64_t rank) const {
    py::list steps, comm;
    auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
    if (auto it = straggler_rows.find(rank); it != straggler_rows.end()) {
      for (const analysis::StepSpan& s : it->second.steps)
        steps.append(py::make_tuple(s.step, us(s.first_ns), us(s.last_end_ns)));
      for (const analysis::CommKernelRow& c : it->second.comm)
        comm.append(py::make_tuple(c.step, us(c.ts_ns), us(c.dur_ns), c.stream, c.name));
    }
    return py::make_tuple(steps, comm);
  }

  // The file of `rank`, "" when none.
  std::string PathOfRank(int64_t rank) const {
    for (const analysis::RankInfo& r : run->summaries->ranks)
      if (r.rank == rank) return r.path;
    return "";
  }

  // HTA's get_trace_duration of `rank` in µs (the launches' analysis only); None without it.
  py::object TraceDuration(int64_t rank) const {
    auto it = trace_duration_ns.find(rank);
    if (it == trace_duration_ns.end()) return py::none();
    return py::float_(static_cast<double>(it->second) / 1000.0);
  }

  // HTA's idle time of `rank` per stream in HTA's order (first appearance): (stream, µs per
  // category, whether HTA lists the category); HTA lists one only when a gap fell in it.
  // Per stream: (stream, µs per category, listed per category, the categories' interval
  // statistics in µs (count as it is), empty without --hta-compat).
  using StreamIdleRow =
      std::tuple<int64_t, std::vector<double>, std::vector<bool>, std::vector<double>>;
  std::vector<StreamIdleRow> Idle(int64_t rank) const {
    std::vector<StreamIdleRow> out;
    for (size_t i = 0; i < run->summaries->ranks.size(); ++i) {
      if (run->summaries->ranks[i].rank != rank) continue;
      analysis::RankTables scratch;
      const analysis::RankTables& tables = TablesOf(run->summaries->analyses[i], scratch);
      for (const analysis::StreamIdle& s : tables.hta.idle) {
        std::vector<double> us;
        std::vector<bool> present;
        for (int c = 0; c < analysis::kNumIdle; ++c) {
          us.push_back(static_cast<double>(s.ns[c]) / 1000.0);
          present.push_back(s.present[c]);
        }
        std::vector<double> stats = s.interval_stats;
        for (size_t k = 0; k < stats.size(); ++k)
          if (k % analysis::kIntervalStats != analysis::kStatCount) stats[k] /= 1000.0;
        out.emplace_back(s.stream, std::move(us), std::move(present), std::move(stats));
      }
    }
    return out;
  }

  // The first critical-path window of `rank` (--critical-path), for HTA's CPGraph and overlay:
  // (window, length ns, the path's node ids, events [(name, ts ns, dur ns, stream, has a node on
  // the path)], edges [(type, weight ns, from event, from is a start, to event, to is a start,
  // bound_by, attributed event or -1)], the graph's other edges in the same shape (with
  // critical_path_all_edges; else []), with the events as indices into the list); None when the
  // rank has no analysed window (the section's note says why).
  py::object CriticalPath(int64_t rank) const {
    const analysis::CpWindow* w = nullptr;
    for (size_t i = 0; i < run->summaries->ranks.size() && w == nullptr; ++i)
      if (run->summaries->ranks[i].rank == rank &&
          !run->summaries->analyses[i].critical_paths.empty())
        w = &run->summaries->analyses[i].critical_paths.front();
    if (w == nullptr || !w->note.empty()) return py::none();
    py::list nodes, events, edges, others;
    for (const auto& e : w->edges) {
      if (e.critical && nodes.empty()) nodes.append(e.from_node);
      if (e.critical) nodes.append(e.to_node);
      (e.critical ? edges : others)
          .append(py::make_tuple(analysis::CpEdgeName(e.type), e.weight_ns, e.from, e.from_start,
                                 e.to, e.to_start, analysis::CpCategoryName(e.category),
                                 e.attributed));
    }
    for (const auto& e : w->events)
      events.append(py::make_tuple(e.name, e.ts_ns, e.dur_ns, e.stream, e.node));
    return py::make_tuple(w->label, w->length_ns, nodes, events, edges, others);
  }

  std::vector<int64_t> Ranks() const {
    std::vector<int64_t> out;
    for (const analysis::RankInfo& r : run->summaries->ranks) out.push_back(r.rank);
    return out;
  }

  std::string Write(const std::string& dir, bool overwrite) const;

 private:
  static std::string KindName(const report::Table& t) {
    switch (t.kind) {
      case report::TableKind::kSeries:
        return "series";
      case report::TableKind::kDetail:
        return "detail";
      case report::TableKind::kTable:
        break;
    }
    return "table";
  }

  static py::object ToPython(const report::Value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return py::int_(*i);
    if (const auto* d = std::get_if<double>(&v)) return py::float_(*d);
    if (const auto* s = std::get_if<std::string>(&v)) return py::str(*s);
    if (const auto* b = std::get_if<bool>(&v)) return py::bool_(*b);
    return py::none();
  }

  std::pair<const report::Section*, const report::Table*> Find(const std::string& id) const {
    const size_t slash = id.find('/');
    const std::string sid = slash == std::string::npos ? "" : id.substr(0, slash);
    const std::string tid = slash == std::string::npos ? id : id.substr(slash + 1);
    for (const report::Section& s : run->report.sections) {
      if (!sid.empty() && s.id != sid) continue;
      if (const report::Table* t = s.FindTable(tid)) return {&s, t};
    }
    throw py::key_error(fmt::format("no table '{}' in this analysis", id));
  }
};

// Writes the run folder as `trainprof analyze` does (report::WriteRunFolder: written beside
// `dir` and put in place when every file is written, so a failure leaves `dir` as it was). A
// `dir` that holds an earlier run is refused unless `overwrite` (then that run's files go).
std::string Analysis::Write(const std::string& dir, bool overwrite) const {
  std::error_code ec;
  Options::Output out;
  out.run_dir = std::filesystem::absolute(std::filesystem::path(dir), ec).string();
  out.overwrite = overwrite;
  out.print = false;
  StatusOr<std::string> written = InvalidArgument("");
  Status exported;
  {
    py::gil_scoped_release release;
    report::Report r = run->report;  // the folder's own meta, as the CLI adds it
    std::string summary;
    written = report::WriteRunFolder(r, out, WallNs(), &summary, run->Extras(), &exported);
  }
  ThrowIfError(written.status(), false);
  ThrowIfError(exported, false);  // the folder stands; a copy of it elsewhere failed
  return *written;
}

struct Request {
  analysis::AnalyzeRequest analyze;
  bool launches = false;
};

// A str, or for paths an os.PathLike too; nothing for another type.
std::optional<std::string> TextOf(py::handle v, bool paths) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (paths && py::hasattr(v, "__fspath__")) {
    py::object p = py::module_::import("os").attr("fspath")(v);
    if (py::isinstance<py::str>(p)) return p.cast<std::string>();
  }
  return std::nullopt;
}

// A keyword's value as the option's kind takes it (options.h's OptionValue), or nothing when it
// is of a type the kind cannot take.
std::optional<analysis::OptionValue> ToOptionValue(const analysis::AnalyzeOption& o, py::handle v) {
  using K = analysis::OptionKind;
  const bool is_bool = py::isinstance<py::bool_>(v);
  switch (o.kind) {
    case K::kFlag:
      return analysis::OptionValue{PyObject_IsTrue(v.ptr()) == 1};
    case K::kInt:
    case K::kPositive:
    case K::kFraction:
    case K::kSeconds: {
      if (is_bool) return std::nullopt;
      if (o.kind != K::kInt && py::isinstance<py::float_>(v))
        return analysis::OptionValue{v.cast<double>()};
      if (!py::isinstance<py::int_>(v)) return std::nullopt;
      int overflow = 0;
      const long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      if (overflow != 0) return std::nullopt;
      return analysis::OptionValue{static_cast<int64_t>(i)};
    }
    case K::kTexts:
    case K::kPaths: {
      const bool paths = o.kind == K::kPaths;
      if (auto t = TextOf(v, paths)) return analysis::OptionValue{*t};
      if (!py::isinstance<py::iterable>(v)) return std::nullopt;
      std::vector<std::string> out;
      for (py::handle x : v) {
        auto t = TextOf(x, paths);
        if (!t) return std::nullopt;
        out.push_back(*t);
      }
      return analysis::OptionValue{std::move(out)};
    }
    case K::kOptionalText:
      if (v.is_none()) return analysis::OptionValue{false};
      if (is_bool) return analysis::OptionValue{v.cast<bool>()};
      break;
    case K::kChoice:
      break;
  }
  if (auto t = TextOf(v, false)) return analysis::OptionValue{*t};
  return std::nullopt;
}

// The keywords of trainprof.analyze() set in a request, each checked as its flag is. Raises
// TypeError for an unknown keyword (with the nearest), ValueError for a value the CLI refuses.
analysis::AnalyzeRequest RequestOf(const py::dict& options) {
  analysis::AnalyzeRequest r;
  for (auto [k, v] : options) {
    const std::string key = py::str(k);
    const analysis::AnalyzeOption* o = analysis::FindAnalyzeOption(key);
    if (o == nullptr) {
      const std::string near = analysis::NearestOption(key);
      throw py::type_error(fmt::format(
          "trainprof.analyze() got an unexpected keyword argument '{}'{} (it takes: {})", key,
          near.empty() ? "" : fmt::format("; did you mean '{}'?", near),
          fmt::join(analysis::AnalyzeOptionKeywords(), ", ")));
    }
    const auto value = ToOptionValue(*o, v);
    const Status s = value ? analysis::SetOption(*o, *value, r)
                           : InvalidArgument(fmt::format("expected {}", o->expects));
    if (!s.ok())
      throw py::value_error(
          fmt::format("{}={}: {}", key, py::repr(v).cast<std::string>(), s.message()));
  }
  return r;
}

std::unique_ptr<Analysis> Analyze(const std::vector<std::string>& paths, const Request& req) {
  auto in = analysis::InputsOfOneRun(paths, "trainprof.analyze reads one run");
  if (!in.ok()) ThrowTraceError(in.status().message());
  auto result = std::make_unique<Analysis>();
  result->capture_traces = req.analyze.capture_traces;
  StatusOr<std::unique_ptr<analysis::RunResult>> run = InvalidArgument("");
  {
    py::gil_scoped_release release;
    std::mutex mu;
    analysis::RunHooks hooks;
    if (req.launches) {
      hooks.model = [&](size_t, const trace::TraceModel& m, const analysis::RankSummary& s) {
        // One selection for every row HTA's methods read.
        const analysis::HtaEvents selected = analysis::SelectHtaEvents(
            m, s.analysis.steps, analysis::RankHtaOptions(m, s.options.hta));
        int64_t duration = 0;
        auto rows = analysis::CudaKernelLaunches(selected, &duration);
        analysis::HtaAnnotations notes = analysis::HtaAnnotationStats(selected);
        analysis::HtaStragglerRows straggler = analysis::HtaStragglerData(selected);
        std::lock_guard<std::mutex> lock(mu);
        result->trace_duration_ns[s.info.rank] = duration;
        result->profiler_steps.insert(straggler.step_numbers.begin(), straggler.step_numbers.end());
        result->annotations[s.info.rank] = std::move(notes);
        result->straggler_rows[s.info.rank] = std::move(straggler);
        auto& dst = result->launches[s.info.rank];
        dst.insert(dst.end(), rows.begin(), rows.end());
      };
    }
    run = analysis::AnalyzeRun(*in, req.analyze, hooks);
  }
  if (!run.ok()) ThrowTraceError(run.status().message());
  result->run = std::move(*run);
  report::StampMeta(result->run->report, WallNs());
  if (!req.analyze.allow_data_errors && report::HasDataError(result->run->report)) {
    // As the CLI, which exits 4: the figures are not to be trusted as they stand.
    for (const report::Diagnostic& d : result->run->report.diagnostics)
      if (report::IsDataError(d)) ThrowTraceError(d.message);
  }
  return result;
}

std::unique_ptr<Analysis> AnalyzeBinding(const std::vector<std::string>& paths,
                                         const py::dict& options, bool launches) {
  Request req;
  req.analyze = RequestOf(options);
  req.launches = launches;
  return Analyze(paths, req);
}

// (keyword, what it expects, help) of every option, in the CLI's order.
std::vector<std::tuple<std::string, std::string, std::string>> AnalyzeOptionsBinding() {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const analysis::AnalyzeOption& o : analysis::AnalyzeOptionList())
    out.emplace_back(std::string(o.keyword), std::string(o.expects), std::string(o.help));
  return out;
}

}  // namespace

void AddAnalysisBinding(py::module_& m) {
  g_trace_error = PyErr_NewExceptionWithDoc(
      "trainprof.TraceError",
      "A trace that cannot be analysed: the message is the CLI's one line, naming the file and, "
      "for a broken file, the byte, line and column.",
      PyExc_ValueError, nullptr);
  m.attr("TraceError") = py::reinterpret_borrow<py::object>(g_trace_error);

  py::class_<Analysis>(m, "Analysis")
      .def_property_readonly("sections", &Analysis::Sections)
      .def("tables", &Analysis::Tables)
      .def("table", &Analysis::Table, py::arg("id"))
      .def("metrics", &Analysis::Metrics)
      .def("findings", &Analysis::Findings)
      .def("diagnostics", &Analysis::Diagnostics)
      .def("to_json", &Analysis::Json)
      .def("text", &Analysis::Text)
      .def("launches", &Analysis::Launches, py::arg("rank"))
      .def("trace_duration", &Analysis::TraceDuration, py::arg("rank"))
      .def("annotation_stats", &Analysis::AnnotationStats, py::arg("rank"), py::arg("gpu"),
           py::arg("top"), py::arg("duration_ratio"), py::arg("allowlist"))
      .def("aten_op_launches", &Analysis::AtenOpLaunches, py::arg("rank"))
      .def("kernels_with_annotations", &Analysis::KernelsWithAnnotations, py::arg("rank"))
      .def("straggler_rows", &Analysis::StragglerRows, py::arg("rank"))
      .def("memory_bw", &Analysis::MemoryBw, py::arg("rank"))
      .def("counter_ranges", &Analysis::CounterRanges, py::arg("rank"))
      .def("hta_sequences", &Analysis::HtaSequences, py::arg("rank"), py::arg("operator_name"),
           py::arg("min_length"))
      .def_property_readonly("profiler_steps",
                             [](const Analysis& a) {
                               return std::vector<int64_t>(a.profiler_steps.begin(),
                                                           a.profiler_steps.end());
                             })
      .def("ranks", &Analysis::Ranks)
      .def("idle", &Analysis::Idle, py::arg("rank"))
      .def("path_of_rank", &Analysis::PathOfRank, py::arg("rank"))
      .def("critical_path", &Analysis::CriticalPath, py::arg("rank"))
      .def_property_readonly("files", [](const Analysis& a) { return a.run->files; })
      .def("write", &Analysis::Write, py::arg("dir"), py::arg("overwrite") = false);

  m.def("analyze", &AnalyzeBinding, py::arg("paths"), py::arg("options") = py::dict(),
        py::arg("launches") = false,
        "Reads and analyses one run's traces as `trainprof analyze` does, with `options` "
        "keyed by analyze_options()' keywords; the GIL is released while it runs. Raises "
        "TypeError for an unknown keyword, ValueError for a bad value, TraceError with the "
        "CLI's one-line error.");
  m.def("analyze_options", &AnalyzeOptionsBinding,
        "(keyword, what it expects, help) of every option of analyze, in the CLI's order.");
}

}  // namespace trainprof::python
