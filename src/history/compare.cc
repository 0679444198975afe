#include "history/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/stats.h"
#include "history/compare_parts.h"
#include "report/format.h"

namespace trainprof::history {
namespace internal {

using report::Unit;
using report::Value;

Value Opt(double v) { return std::isfinite(v) ? Value(v) : Value(); }

std::string Label(size_t i) {
  return i < 26 ? std::string(1, static_cast<char>('A' + i)) : fmt::format("R{}", i + 1);
}

double Pct(double base, double cand) {
  if (!std::isfinite(base) || !std::isfinite(cand)) return kNoValue;
  if (base == 0) return cand == 0 ? 0 : kNoValue;
  return 100.0 * (cand - base) / std::abs(base);
}

namespace {

FigureValue LookupOne(const report::Report& report, const std::string& figure) {
  FigureValue f;
  if (int i = FigureIndex(figure); i >= 0) {
    f.value = ExtractKeyFigures(report).values[static_cast<size_t>(i)];
    f.unit = kFigures[static_cast<size_t>(i)].unit;
    f.title = kFigures[static_cast<size_t>(i)].title;
    f.known = std::isfinite(f.value);
    return f;
  }
  const size_t dot = figure.find('.');
  if (dot == std::string::npos) return f;
  const report::Section* s = report.FindSection(figure.substr(0, dot));
  const report::Metric* m = s != nullptr ? s->FindMetric(figure.substr(dot + 1)) : nullptr;
  if (m == nullptr) return f;
  f.found = true;
  f.value = report::AsNumber(m->value);
  f.unit = m->unit;
  f.title = m->title;
  f.known = std::isfinite(f.value);
  return f;
}

}  // namespace

FigureValue Lookup(const LoadedRun& run, const std::string& figure) {
  FigureValue f = LookupOne(run.report, figure);
  if (run.pooled.empty()) return f;
  std::vector<double> values;
  if (f.known) values.push_back(f.value);
  for (const LoadedRun& p : run.pooled) {
    const FigureValue g = LookupOne(p.report, figure);
    if (g.known) values.push_back(g.value);
  }
  f.value = base::Median(std::move(values));
  f.known = std::isfinite(f.value);
  return f;
}

StepSeries SideSteps(const LoadedRun& run) {
  StepSeries s = ExtractSteps(run.report);
  for (const LoadedRun& p : run.pooled) {
    StepSeries more = ExtractSteps(p.report);
    for (auto& g : more.step_time_s) s.step_time_s.push_back(std::move(g));
    for (auto& g : more.samples_per_s) s.samples_per_s.push_back(std::move(g));
  }
  return s;
}

const StepGroups* SeriesOf(const StepSeries& s, const std::string& figure) {
  if (figure == "step_time") return &s.step_time_s;
  if (figure == "training_throughput") return &s.samples_per_s;
  return nullptr;
}

Intervals ComputeIntervals(const std::vector<StepSeries>& steps, const CompareOptions& o) {
  Intervals out;
  for (size_t i = 1; i < steps.size(); ++i) {
    for (const char* figure : {"step_time", "training_throughput"}) {
      const StepGroups* a = SeriesOf(steps.front(), figure);
      const StepGroups* b = SeriesOf(steps[i], figure);
      if (!a->empty() && !b->empty())
        out.emplace(std::make_pair(i, std::string(figure)), CompareSteps(*a, *b, o.history_spread));
    }
  }
  return out;
}

std::string IntervalText(const RelativeChange& c) {
  if (c.has_interval && (c.low > 0 || c.high < 0)) return "beyond noise";
  if (c.has_interval) return "within noise";
  // A trace of a few ProfilerSteps (inference, on-demand) has no interval at all: say so.
  return fmt::format("no interval: too few steps for one ({} in all)", c.base_steps + c.cand_steps);
}

}  // namespace internal

namespace {

using internal::Label;
using internal::Opt;
using report::Unit;
using report::Value;

// Columns for one value per run, then (for every run after the first) its change from the
// baseline and the change in percent. Values use the row's unit (kByRow); a change of a
// percentage is in percentage points, and has no "change in percent".
void AddRunColumns(std::vector<report::Column>& cols, size_t runs) {
  for (size_t i = 0; i < runs; ++i)
    cols.push_back({fmt::format("run_{}", Label(i)), Label(i), Unit::kByRow});
  for (size_t i = 1; i < runs; ++i) {
    cols.push_back({fmt::format("delta_{}", Label(i)), fmt::format("\xce\x94 {}", Label(i)),
                    Unit::kByRow, true, true});
    cols.push_back({fmt::format("delta_pct_{}", Label(i)), fmt::format("\xce\x94% {}", Label(i)),
                    Unit::kPercent});
  }
}

void AddRunValues(std::vector<Value>& row, const std::vector<double>& v, Unit unit) {
  for (double x : v) row.push_back(Opt(x));
  for (size_t i = 1; i < v.size(); ++i) {
    row.push_back(Opt(v[i] - v[0]));
    row.push_back(unit == Unit::kPercent ? Value() : Opt(internal::Pct(v[0], v[i])));
  }
}

// --- Setup: what differs besides the code ----------------------------------------------------

std::string MetaOrEmpty(const report::Report& r, std::string_view key) {
  return report::MetaText(r, key);
}

std::string RankCount(const report::Report& r) {
  if (r.kind == "analyze") return MetaOrEmpty(r, "ranks");
  const std::string w = MetaOrEmpty(r, "world_size");
  return w.empty() ? "1" : w;
}

struct SetupRow {
  const char* key;
  const char* title;
  std::string (*value)(const report::Report&);
};

constexpr SetupRow kSetupRows[] = {
    {"device", "Device", RunDevice},
    {"ranks", "Ranks", RankCount},
    {"host.cpu", "CPU", [](const report::Report& r) { return MetaOrEmpty(r, "host.cpu"); }},
    {"host.cores", "Cores", [](const report::Report& r) { return MetaOrEmpty(r, "host.cores"); }},
    {"host.name", "Host", [](const report::Report& r) { return MetaOrEmpty(r, "host.name"); }},
    {"torch_threads", "Intra-op threads",
     [](const report::Report& r) { return MetaOrEmpty(r, "torch_threads"); }},
};

// "CPU AMD EPYC (A) vs Intel Xeon (B)", for rows whose known values differ; "" when none do.
std::string DifferingKnown(const SetupRow& row, const std::vector<std::string>& values) {
  std::set<std::string> known;
  for (const std::string& v : values)
    if (!v.empty()) known.insert(v);
  if (known.size() < 2) return "";
  std::string out = std::string(row.title) + " ";
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].empty()) continue;
    out += fmt::format("{}{} ({})", out.back() == ' ' ? "" : " vs ", values[i], Label(i));
  }
  return out;
}

void KindWarning(const std::vector<LoadedRun>& runs, report::Section& s, Comparison& out) {
  std::string profile, analyze;
  for (size_t i = 0; i < runs.size(); ++i)
    (runs[i].report.kind == "analyze" ? analyze : profile) += Label(i);
  if (profile.empty() || analyze.empty()) return;
  const std::string w = fmt::format(
      "{} {} profile and {} analyze: a profile run times the built-in job under trainprof's "
      "recorder, an analyze run reads a PyTorch profiler trace; their shared figures are defined "
      "differently, so a change between them is not a change of the code",
      profile, profile.size() == 1 ? "is" : "are", analyze);
  s.findings.push_back({report::Severity::kWarning, w});
  out.warnings.push_back(w);
}

void SetupSection(report::Report& r, const std::vector<LoadedRun>& runs, Comparison& out) {
  std::vector<report::Column> cols = {{"key", "Key"}, {"what", "What"}};
  for (size_t i = 0; i < runs.size(); ++i)
    cols.push_back({fmt::format("run_{}", Label(i)), Label(i)});
  report::Section& s = r.AddSection("setup", "Setup differences (read these first)");
  report::Table& t = s.AddTable("setup_diff", "Hardware, device and ranks that differ", cols);
  for (const SetupRow& row : kSetupRows) {
    std::vector<std::string> values;
    for (const LoadedRun& run : runs) values.push_back(row.value(run.report));
    if (std::set<std::string>(values.begin(), values.end()).size() < 2) continue;
    std::vector<Value> cells = {std::string(row.key), std::string(row.title)};
    for (const std::string& v : values) cells.push_back(v.empty() ? Value() : Value(v));
    t.rows.push_back(std::move(cells));
    if (std::string d = DifferingKnown(row, values); !d.empty()) {
      std::string w = "the runs differ in more than the code: " + d +
                      "; every change below includes this difference";
      s.findings.push_back({report::Severity::kWarning, w});
      out.warnings.push_back(std::move(w));
    }
  }
  KindWarning(runs, s, out);
  if (t.rows.empty()) s.notes.push_back("Same device, rank count and host for every run.");
}

// --- Noise: the change with its 95 % interval -----------------------------------------------

void AddNoiseRow(report::Table& t, const std::string& figure, size_t cand,
                 const RelativeChange& c) {
  const int f = FigureIndex(figure);
  const Unit unit = kFigures[static_cast<size_t>(f)].unit;
  t.rows.push_back(
      {figure, Label(cand), std::string(report::UnitName(unit)), Opt(c.base_median),
       Opt(c.cand_median), Opt(100 * c.change), Opt(100 * c.low), Opt(100 * c.high), c.base_steps,
       c.cand_steps, c.base_runs, c.cand_runs,
       c.run_sd_source.empty() ? Value(std::string("none known")) : Value(c.run_sd_source),
       internal::IntervalText(c)});
  t.row_units.push_back(unit);
}

void NoiseSection(report::Report& r, const internal::Intervals& intervals, const RunSpread& history,
                  Comparison& out) {
  report::Section& s = r.AddSection("noise", "Change beyond noise (95 % confidence interval)");
  report::Table& t = s.AddTable("noise", "Median change of the per-step figures, with its 95 % CI",
                                {{"figure", "Figure (per step)"},
                                 {"run", "Run"},
                                 {"unit", "Unit", Unit::kText, false},
                                 {"baseline_median", "A median", Unit::kByRow},
                                 {"candidate_median", "Median", Unit::kByRow},
                                 {"median_change_pct", "Median change", Unit::kPercent},
                                 {"ci_low_pct", "95 % CI from", Unit::kPercent},
                                 {"ci_high_pct", "to", Unit::kPercent},
                                 {"baseline_steps", "A steps", Unit::kCount},
                                 {"candidate_steps", "Steps", Unit::kCount},
                                 {"baseline_runs", "A runs", Unit::kCount},
                                 {"candidate_runs", "Runs", Unit::kCount},
                                 {"run_to_run", "Run-to-run spread from"},
                                 {"verdict", "Verdict"}});
  bool step_only = false;
  for (const auto& [key, c] : intervals) {  // by run, step_time before training_throughput
    step_only = step_only || (c.has_interval && c.run_sd_source.empty());
    AddNoiseRow(t, key.second, key.first, c);
  }
  if (t.rows.empty()) {
    s.notes.push_back(
        "No two runs here both kept per-step times (speed.training_rate or "
        "overview.step_breakdown), so no interval: figures compare as plain values.");
    return;
  }
  t.notes.push_back(
      "median change: the Hodges-Lehmann estimate (the median of every candidate/baseline step "
      "ratio); 95 % CI: Moses' interval from the Mann-Whitney test, widened by the run-to-run "
      "spread when it is known (docs/ci.md)");
  if (step_only) {
    const int64_t more = kMinSpreadRuns - history.runs;
    std::string w = fmt::format(
        "one run on each side and no run-to-run spread known: the interval covers step-to-step "
        "noise only; on a shared machine runs differ more than that, so use profile --repeat N "
        "or --baseline last:k");
    if (more > 0) {
      w += fmt::format(
          ", or record {} more run{} of the baseline's config on this host and device (the "
          "history has {}), and the gate learns the spread from them",
          more, more == 1 ? "" : "s", history.runs);
    }
    s.findings.push_back({report::Severity::kWarning, w});
    out.warnings.push_back(std::move(w));
  }
}

// --- The tables of every figure ------------------------------------------------------------

report::Section& RunsSection(report::Report& r, const std::vector<LoadedRun>& runs) {
  report::Section& s = r.AddSection("runs", "Runs");
  report::Table& t = s.AddTable("runs", "Runs compared (A is the baseline)",
                                {{"run", "Run"},
                                 {"id", "Id"},
                                 {"kind", "Kind"},
                                 {"created_utc", "Created (UTC)"},
                                 {"git_commit", "Commit"},
                                 {"config_hash", "Config"},
                                 {"dir", "Folder"}});
  for (size_t i = 0; i < runs.size(); ++i) {
    const LoadedRun& run = runs[i];
    const std::string created = report::MetaText(run.report, "created_utc");
    const RunRecord* rec = run.record ? &*run.record : nullptr;
    t.rows.push_back(
        {Label(i), rec ? Value(rec->id) : Value(), run.report.kind, created,
         rec && !rec->git_commit.empty() ? Value(rec->git_commit.substr(0, 10)) : Value(),
         ConfigHash(run.report), run.dir});
    if (!run.pooled.empty()) {
      s.notes.push_back(fmt::format("{} pools {} runs of config {}: figures are their medians",
                                    Label(i), run.pooled.size() + 1, ConfigHash(run.report)));
    }
  }
  return s;
}

void KeyFigureSection(report::Report& r, const std::vector<LoadedRun>& runs) {
  report::Section& s = r.AddSection("key_figures", "Key figures");
  std::vector<report::Column> cols = {{"figure", "Figure"}, {"unit", "Unit", Unit::kText, false}};
  AddRunColumns(cols, runs.size());
  report::Table& t = s.AddTable("key_figures", "Key figures", std::move(cols));
  for (size_t f = 0; f < kFigures.size(); ++f) {
    std::vector<double> v;
    for (const LoadedRun& run : runs) v.push_back(internal::Lookup(run, kFigures[f].key).value);
    if (std::ranges::none_of(v, [](double x) { return std::isfinite(x); })) continue;
    std::vector<Value> row = {std::string(kFigures[f].title),
                              std::string(report::UnitName(kFigures[f].unit))};
    AddRunValues(row, v, kFigures[f].unit);
    t.rows.push_back(std::move(row));
    t.row_units.push_back(kFigures[f].unit);
  }
  if (runs.size() >= 2 && !t.rows.empty()) {  // the last run's change, figure by figure
    const std::string last = Label(runs.size() - 1);
    t.charts.push_back({.kind = report::ChartKind::kBars,
                        .id = "key_figures_change",
                        .title = fmt::format("\xce\x94% {} against the baseline", last),
                        .label = "figure",
                        .values = {fmt::format("delta_pct_{}", last)},
                        .names = {"change"},
                        .limit = 0});
  }
  t.notes.push_back(
      "definitions: docs/ci.md; higher is better for throughput and GPU "
      "utilization, lower for the others; a change of a percentage is in percentage points (pp)");
}

void MetricSection(report::Report& r, const std::vector<LoadedRun>& runs) {
  report::Section& s = r.AddSection("metrics", "Every metric");
  std::vector<report::Column> cols = {
      {"key", "Key (for --fail-if)"}, {"metric", "Metric"}, {"unit", "Unit", Unit::kText, false}};
  AddRunColumns(cols, runs.size());
  report::Table& t = s.AddTable("metrics", "Headline metrics of every section", std::move(cols));
  // Union of numeric metrics, in the order of their first appearance.
  std::vector<std::pair<std::string, std::string>> keys;  // section id, metric key
  std::set<std::pair<std::string, std::string>> seen;
  for (const LoadedRun& run : runs)
    for (const report::Section& sec : run.report.sections)
      for (const report::Metric& m : sec.metrics)
        if (m.unit != Unit::kText && seen.insert({sec.id, m.key}).second)
          keys.emplace_back(sec.id, m.key);
  for (const auto& [sec, key] : keys) {
    std::vector<double> v;
    std::string title;
    Unit unit = Unit::kNumber;
    for (const LoadedRun& run : runs) {
      internal::FigureValue f = internal::Lookup(run, sec + "." + key);
      v.push_back(f.value);
      if (f.found) title = f.title, unit = f.unit;
    }
    std::vector<Value> row = {sec + "." + key, title, std::string(report::UnitName(unit))};
    AddRunValues(row, v, unit);
    t.rows.push_back(std::move(row));
    t.row_units.push_back(unit);
  }
  t.notes.push_back("--fail-if accepts each key here as well as the key figures");
}

void ConfigSection(report::Report& r, const std::vector<LoadedRun>& runs) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  std::vector<std::map<std::string, std::string>> values(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    for (const auto& [k, v] : runs[i].report.config) {
      values[i][k] = report::FormatHuman(v, Unit::kText);
      if (seen.insert(k).second) keys.push_back(k);
    }
  }
  std::vector<report::Column> cols = {{"key", "Key"}};
  for (size_t i = 0; i < runs.size(); ++i)
    cols.push_back({fmt::format("run_{}", Label(i)), Label(i)});
  report::Section& s = r.AddSection("config", "Configuration differences");
  report::Table& t = s.AddTable("config_diff", "Keys whose values differ", std::move(cols));
  for (const std::string& k : keys) {
    if (k.starts_with("output.")) continue;
    std::vector<Value> row = {k};
    std::set<std::string> distinct;
    for (auto& m : values) {
      auto it = m.find(k);
      std::string v = it != m.end() ? it->second : "(not set)";
      distinct.insert(v);
      row.push_back(v);
    }
    if (distinct.size() > 1) t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) s.notes.push_back("The runs share every configuration key.");
}

// Notes on the sections only some runs have.
void SharedSectionNotes(const std::vector<LoadedRun>& runs, report::Section& rs) {
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::string> only;
    for (const report::Section& s : runs[i].report.sections) {
      bool everywhere = std::ranges::all_of(
          runs, [&](const LoadedRun& o) { return o.report.FindSection(s.id) != nullptr; });
      if (!everywhere) only.push_back(s.id);
    }
    if (!only.empty()) {
      std::string list;
      for (const std::string& s : only) list += (list.empty() ? "" : ", ") + s;
      rs.notes.push_back(
          fmt::format("sections only some runs have, present in {}: {}", Label(i), list));
    }
  }
}

}  // namespace

StatusOr<Comparison> BuildCompareReport(const std::vector<LoadedRun>& runs,
                                        const std::vector<Bound>& bounds,
                                        const CompareOptions& options) {
  if (runs.size() < 2) return InvalidArgument("compare needs at least two runs");
  TRAINPROF_RETURN_IF_ERROR(internal::CheckBounds(runs, bounds));
  Comparison out;
  report::Report& r = out.report;
  r.kind = "compare";
  std::string names;
  for (size_t i = 0; i < runs.size(); ++i)
    names += fmt::format("{}{} {}", i == 0 ? "" : " vs ", Label(i), runs[i].given);
  r.title = "trainprof compare: " + names;
  for (size_t i = 0; i < runs.size(); ++i) r.AddMeta(fmt::format("runs.{}", Label(i)), runs[i].dir);
  std::vector<StepSeries> steps;
  for (const LoadedRun& run : runs) steps.push_back(internal::SideSteps(run));
  const internal::Intervals intervals = internal::ComputeIntervals(steps, options);
  SetupSection(r, runs, out);
  if (!bounds.empty()) internal::GateSection(r, runs, intervals, bounds, out);
  NoiseSection(r, intervals, options.history_spread, out);
  report::Section& rs = RunsSection(r, runs);
  KeyFigureSection(r, runs);
  MetricSection(r, runs);
  ConfigSection(r, runs);
  SharedSectionNotes(runs, rs);
  return out;
}

}  // namespace trainprof::history
