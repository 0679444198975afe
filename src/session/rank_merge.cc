#include "session/rank_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "record/statistics.h"
#include "report/format.h"
#include "report/run_folder.h"
#include "report/run_writers.h"

namespace trainprof::session {
namespace {

using json = nlohmann::json;
using report::Unit;
using report::Value;

// Figures the per-rank table takes from one rank's report.json.
struct RankFigures {
  const RankResult* in = nullptr;
  std::string host;
  Value samples_per_s, median_s, min_s, max_s, steps, data_wait_pct, comm_s, comm_pct, peak_rss;
  json diagnostics;
};

Value JsonValue(const json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_boolean()) return j.get<bool>();
  return {};
}

const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p;
}

StatusOr<RankFigures> ReadFigures(const RankResult& r) {
  json j = json::parse(r.report_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(fmt::format("rank {}: its report.json does not parse as JSON", r.rank));
  }
  RankFigures f;
  f.in = &r;
  if (const json* h = Find(j, {"meta", "host", "name"})) f.host = h->get<std::string>();
  if (const json* p = Find(j, {"meta", "peak_rss_bytes"})) f.peak_rss = JsonValue(*p);
  if (const json* d = Find(j, {"diagnostics"})) f.diagnostics = *d;
  const json* sections = Find(j, {"sections"});
  if (sections == nullptr || !sections->is_array()) return f;
  for (const json& s : *sections) {
    if (s.value("id", "") != "speed") continue;
    auto metric = [&](const char* key) {
      const json* v = Find(s, {"metrics", key, "value"});
      return v != nullptr ? JsonValue(*v) : Value();
    };
    f.samples_per_s = metric("training_avg_throughput_per_sample");
    f.data_wait_pct = metric("training_dataloader_wait_pct");
    f.comm_s = metric("training_communication_s");
    f.comm_pct = metric("training_communication_pct");
    for (const json& t : s.value("tables", json::array())) {
      if (t.value("id", "") != "speed_report") continue;
      for (const json& row : t.value("rows", json::array())) {
        if (row.value("stage", "") != "training") continue;
        f.median_s = JsonValue(row.value("median_s", json()));
        f.min_s = JsonValue(row.value("min_s", json()));
        f.max_s = JsonValue(row.value("max_s", json()));
        f.steps = JsonValue(row.value("steps", json()));
      }
    }
  }
  return f;
}

}  // namespace

StatusOr<report::Report> MergeRankReports(const MergeInput& in) {
  std::vector<RankFigures> figs;
  for (const RankResult& r : in.ranks) {
    TRAINPROF_ASSIGN_OR_RETURN(RankFigures f, ReadFigures(r));
    figs.push_back(std::move(f));
  }
  std::ranges::sort(figs, {}, [](const RankFigures& f) { return f.in->rank; });

  report::Report r;
  r.kind = "profile";
  r.title = fmt::format("trainprof report: {} ({} ranks, merged)", in.name, in.world_size);
  r.AddMeta("run_dir", in.run_dir);
  r.AddMeta("world_size", in.world_size);
  r.AddMeta("launcher", in.launcher);
  r.AddMeta("ranks_reported", static_cast<int64_t>(figs.size()));
  int64_t max_error = 0;
  for (const RankFigures& f : figs) max_error = std::max(max_error, f.in->clock_error_ns);
  r.AddMeta(
      "clock_alignment",
      fmt::format("each rank's steady clock against rank 0's ({}); error within +-{}",
                  in.clock_method,
                  report::FormatHuman(static_cast<double>(max_error) * 1e-9, Unit::kSeconds)));

  report::Section& s = r.AddSection("ranks", "Ranks");
  report::Table& t = s.AddTable("rank_summary", "Per rank (training stage)",
                                {{"rank", "Rank", Unit::kCount},
                                 {"host", "Host", Unit::kText},
                                 {"status", "Status", Unit::kText},
                                 {"steps", "Steps", Unit::kCount},
                                 {"samples_per_s", "Samples/s", Unit::kPerSecond},
                                 {"median_step_s", "Median step", Unit::kSeconds},
                                 {"min_step_s", "Min", Unit::kSeconds},
                                 {"max_step_s", "Max", Unit::kSeconds},
                                 {"data_wait_pct", "Data wait", Unit::kPercent},
                                 {"communication_s", "Comm time", Unit::kSeconds},
                                 {"communication_pct", "Comm", Unit::kPercent},
                                 {"peak_rss_bytes", "Peak RSS", Unit::kBytes},
                                 {"clock_offset_s", "Clock offset", Unit::kSeconds},
                                 {"clock_error_s", "+-", Unit::kSeconds}});
  double total_rate = 0;
  bool have_rate = false;
  std::vector<double> medians;
  for (const RankFigures& f : figs) {
    t.rows.push_back({f.in->rank, f.host, f.in->status, f.steps, f.samples_per_s, f.median_s,
                      f.min_s, f.max_s, f.data_wait_pct, f.comm_s, f.comm_pct, f.peak_rss,
                      static_cast<double>(f.in->clock_offset_ns) * 1e-9,
                      static_cast<double>(f.in->clock_error_ns) * 1e-9});
    if (double v = report::AsNumber(f.samples_per_s); !std::isnan(v)) {
      total_rate += v;
      have_rate = true;
    }
    if (double m = report::AsNumber(f.median_s); !std::isnan(m)) medians.push_back(m);
  }
  t.notes.push_back(
      "samples/s, step times and data wait of each rank's measured training steps "
      "(its speed report); comm: time in [DDP].all_reduce_gradients; clock offset: "
      "added to the rank's clock to get rank 0's");
  const bool no_comm = std::ranges::all_of(
      figs, [](const RankFigures& f) { return std::isnan(report::AsNumber(f.comm_s)); });
  if (no_comm) {
    t.notes.push_back(
        "comm is empty: no rank recorded a communication action (kind communication, e.g. "
        "[DDP].all_reduce_gradients). PyTorch's DistributedDataParallel and Lightning reduce "
        "the gradients inside backward, where no action names them: that time is in backward. "
        "trainprof.torch.attach (torch.profiler) or trainprof analyze on its trace shows the "
        "all-reduce kernels");
  }
  if (t.rows.size() >= 2) {
    t.charts.push_back({.kind = report::ChartKind::kBars,
                        .id = "rank_median_step",
                        .title = "Median training step per rank",
                        .values = {"median_step_s"},
                        .names = {"median step"},
                        .limit = 0,
                        .label_format = "rank {rank}"});
  }
  s.AddMetric("world_size", "Ranks", in.world_size, Unit::kCount);
  s.AddMetric("training_throughput_per_sample", "Training throughput, all ranks",
              have_rate ? Value(total_rate) : Value(), Unit::kPerSecond, "samples/s");
  if (!medians.empty()) {
    std::vector<double> sorted = medians;
    std::ranges::sort(sorted);
    const size_t n = sorted.size();
    const double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    const RankFigures* slowest = nullptr;
    for (const RankFigures& f : figs) {
      double m = report::AsNumber(f.median_s);
      if (!std::isnan(m) && (slowest == nullptr || m > report::AsNumber(slowest->median_s)))
        slowest = &f;
    }
    const double slow = report::AsNumber(slowest->median_s);
    const double gap = median > 0 ? 100.0 * (slow - median) / median : 0;
    s.AddMetric("slowest_rank", "Slowest rank (median step)", slowest->in->rank, Unit::kCount);
    s.AddMetric("straggler_gap_pct", "Its gap to the median of ranks", gap, Unit::kPercent);
    const std::string text = fmt::format(
        "rank {} is the slowest: median training step {} vs {} over all ranks (+{:.1f} %)",
        slowest->in->rank, report::FormatHuman(slow, Unit::kSeconds),
        report::FormatHuman(median, Unit::kSeconds), gap);
    if (gap > kStragglerFindingPct && figs.size() > 1) {
      s.findings.push_back({report::Severity::kWarning,
                            text + "; every rank waits for it at each all-reduce (straggler)"});
      for (report::ChartHint& h : t.charts) {  // the straggler in red, in chart and table
        h.highlight_key = "rank";
        h.highlight_value = slowest->in->rank;
      }
    } else {
      s.notes.push_back(text);
    }
  }
  for (const RankFigures& f : figs) {
    if (f.in->status != "ok") {
      r.diagnostics.push_back({report::DiagnosticId::kRankFailed, 1,
                               fmt::format("rank {}: {}", f.in->rank, f.in->status)});
    }
    if (!f.diagnostics.is_array()) continue;
    for (const json& d : f.diagnostics) {  // the registry, not the rank's file, gives severity
      r.diagnostics.push_back(
          base::DiagnosticFromName(d.value("name", ""), d.value("count", int64_t{1}),
                                   fmt::format("rank {}: {}", f.in->rank, d.value("message", ""))));
    }
  }
  for (const auto& [rank, why] : in.missing) {
    r.diagnostics.push_back(
        {report::DiagnosticId::kRankMissing, 1, fmt::format("rank {}: {}", rank, why)});
    s.findings.push_back(
        {report::Severity::kError, fmt::format("rank {} has no report: {}", rank, why)});
  }
  return r;
}

Status WriteMergedTrace(const MergeInput& in, const std::string& path) {
  // Rank 0's session start is the origin; every rank's events move by the distance between its
  // start and rank 0's, on rank 0's clock.
  std::vector<std::pair<const RankResult*, int64_t>> starts;
  int64_t origin = 0;
  for (const RankResult& r : in.ranks) {
    json j = json::parse(r.report_json, nullptr, false);
    const json* s = j.is_object() ? Find(j, {"meta", "start_steady_ns"}) : nullptr;
    const int64_t start =
        (s != nullptr && s->is_number() ? s->get<int64_t>() : 0) + r.clock_offset_ns;
    starts.emplace_back(&r, start);
    if (r.rank == 0) origin = start;
  }
  std::ranges::sort(starts, {}, [](const auto& p) { return p.first->rank; });
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto emit = [&](const json& e) {
    if (!first) out += ",\n";
    first = false;
    out += e.dump();
  };
  for (const auto& [r, start] : starts) {
    if (r->trace_json.empty()) continue;
    json t = json::parse(r->trace_json, nullptr, false);
    if (t.is_discarded() || !t.is_object() || !t.contains("traceEvents")) {
      return InvalidArgument(fmt::format("rank {}: its trace.json does not parse", r->rank));
    }
    const double shift_us = static_cast<double>(start - origin) * 1e-3;
    emit({{"ph", "M"},
          {"name", "process_sort_index"},
          {"pid", r->rank},
          {"args", {{"sort_index", r->rank}}}});
    for (json& e : t["traceEvents"]) {
      if (!e.is_object()) continue;
      e["pid"] = r->rank;
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") {
        e["args"]["name"] = fmt::format("rank {}: {}", r->rank, e["args"].value("name", ""));
      }
      if (e.contains("ts") && e["ts"].is_number()) {
        e["ts"] = std::round((e["ts"].get<double>() + shift_us) * 1000.0) / 1000.0;
      }
      emit(e);
    }
  }
  int64_t max_error = 0;
  for (const RankResult& r : in.ranks) max_error = std::max(max_error, r.clock_error_ns);
  out += fmt::format(
      "],\n\"displayTimeUnit\":\"ms\",\"otherData\":{{\"producer\":\"trainprof (merged ranks)\","
      "\"world_size\":{},\"clock_alignment\":\"rank clocks moved onto rank 0's ({}); error "
      "within +-{} ns\"}}}}\n",
      in.world_size, in.clock_method, max_error);
  return base::WriteFileAtomically(path, out);
}

Status WriteMergedRun(const MergeInput& in, const Options::Output& output, std::string* summary) {
  TRAINPROF_ASSIGN_OR_RETURN(report::Report merged, MergeRankReports(in));
  std::vector<report::ExtraFile> extra;
  if (output.trace)
    extra.push_back(
        {"trace.json", [&] { return WriteMergedTrace(in, in.run_dir + "/trace.json"); }});
  return report::WriteReportFiles(merged, in.run_dir, output, summary, extra);
}

}  // namespace trainprof::session
