#include "history/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "base/text.h"
#include "report/format.h"

namespace trainprof::history {
namespace {

using report::Unit;
using report::Value;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Value Opt(double v) { return std::isfinite(v) ? Value(v) : Value(); }

std::string Label(size_t i) {
  return i < 26 ? std::string(1, static_cast<char>('A' + i)) : fmt::format("R{}", i + 1);
}

double Pct(double base, double cand) {
  if (!std::isfinite(base) || !std::isfinite(cand)) return kNaN;
  if (base == 0) return cand == 0 ? 0 : kNaN;
  return 100.0 * (cand - base) / std::abs(base);
}

struct FigureValue {
  double value = kNaN;
  Unit unit = Unit::kNumber;
  std::string title;
  bool found = false;  // the run has this metric (its value may be empty)
  bool known = false;  // ... and a value for it
};

// A key figure, or SECTION.METRIC from the report.
FigureValue Lookup(const LoadedRun& run, const std::string& figure) {
  FigureValue f;
  if (int i = FigureIndex(figure); i >= 0) {
    f.value = ExtractKeyFigures(run.report).values[static_cast<size_t>(i)];
    f.unit = kFigures[static_cast<size_t>(i)].unit;
    f.title = kFigures[static_cast<size_t>(i)].title;
    f.known = std::isfinite(f.value);
    return f;
  }
  const size_t dot = figure.find('.');
  if (dot == std::string::npos) return f;
  const report::Section* s = run.report.FindSection(figure.substr(0, dot));
  const report::Metric* m = s != nullptr ? s->FindMetric(figure.substr(dot + 1)) : nullptr;
  if (m == nullptr) return f;
  f.found = true;
  f.value = report::AsNumber(m->value);
  f.unit = m->unit;
  f.title = m->title;
  f.known = std::isfinite(f.value);
  return f;
}

bool Crossed(const Bound& b, double change) {
  if (std::isnan(change)) return false;
  if (b.op == "<") return change < b.limit;
  if (b.op == "<=") return change <= b.limit;
  if (b.op == ">") return change > b.limit;
  return change >= b.limit;
}

// Columns for one value per run, then (for every run after the first) its change from the
// baseline and the change in percent. Values use the row's unit (kByRow).
void AddRunColumns(std::vector<report::Column>& cols, size_t runs) {
  for (size_t i = 0; i < runs; ++i)
    cols.push_back({fmt::format("run_{}", Label(i)), Label(i), Unit::kByRow});
  for (size_t i = 1; i < runs; ++i) {
    cols.push_back(
        {fmt::format("delta_{}", Label(i)), fmt::format("\xce\x94 {}", Label(i)), Unit::kByRow});
    cols.push_back({fmt::format("delta_pct_{}", Label(i)), fmt::format("\xce\x94% {}", Label(i)),
                    Unit::kPercent});
  }
}

void AddRunValues(std::vector<Value>& row, const std::vector<double>& v) {
  for (double x : v) row.push_back(Opt(x));
  for (size_t i = 1; i < v.size(); ++i) {
    row.push_back(Opt(v[i] - v[0]));
    row.push_back(Opt(Pct(v[0], v[i])));
  }
}

void GateSection(report::Report& r, const std::vector<LoadedRun>& runs,
                 const std::vector<Bound>& bounds, Comparison& out) {
  const LoadedRun& base = runs.front();
  const LoadedRun& cand = runs.back();
  report::Section& s = r.AddSection("gate", "Regression gate");
  report::Table& t = s.AddTable("gate", "Bounds (candidate against baseline)",
                                {{"bound", "Bound"},
                                 {"unit", "Unit", Unit::kText, false},
                                 {"baseline", "Baseline", Unit::kByRow},
                                 {"candidate", "Candidate", Unit::kByRow},
                                 {"change", "Change", Unit::kByRow},
                                 {"change_pct", "Change %", Unit::kPercent},
                                 {"result", "Result"}});
  int64_t crossed = 0;
  for (const Bound& b : bounds) {
    FigureValue a = Lookup(base, b.figure), c = Lookup(cand, b.figure);
    const double change = c.value - a.value, pct = Pct(a.value, c.value);
    const bool hit = Crossed(b, b.relative ? pct : change);
    crossed += hit ? 1 : 0;
    t.rows.push_back({b.text, std::string(report::UnitName(a.unit)), Opt(a.value), Opt(c.value),
                      Opt(change), Opt(pct), std::string(hit ? "CROSSED" : "ok")});
    t.row_units.push_back(a.unit);
    if (hit) {
      s.findings.push_back({report::Severity::kError,
                            fmt::format("{} ({}): {} -> {} ({:+.1f} %), past the bound", b.text,
                                        a.title, report::FormatHuman(a.value, a.unit),
                                        report::FormatHuman(c.value, c.unit), pct)});
    }
  }
  s.AddMetric("bounds", "Bounds checked", static_cast<int64_t>(bounds.size()), Unit::kCount);
  s.AddMetric("crossed", "Bounds crossed", crossed, Unit::kCount);
  t.notes.push_back(fmt::format("baseline {} ({}), candidate {} ({})", base.given,
                                base.record ? base.record->id : base.dir, cand.given,
                                cand.record ? cand.record->id : cand.dir));
  out.bounds_crossed = crossed;
}

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
  }
  return s;
}

void KeyFigureSection(report::Report& r, const std::vector<LoadedRun>& runs) {
  report::Section& s = r.AddSection("key_figures", "Key figures");
  std::vector<report::Column> cols = {{"figure", "Figure"}, {"unit", "Unit", Unit::kText, false}};
  AddRunColumns(cols, runs.size());
  report::Table& t = s.AddTable("key_figures", "Key figures", std::move(cols));
  std::vector<KeyFigures> k;
  for (const LoadedRun& run : runs) k.push_back(ExtractKeyFigures(run.report));
  for (size_t f = 0; f < kFigures.size(); ++f) {
    std::vector<double> v;
    for (const KeyFigures& kf : k) v.push_back(kf.values[f]);
    if (std::ranges::none_of(v, [](double x) { return std::isfinite(x); })) continue;
    std::vector<Value> row = {std::string(kFigures[f].title),
                              std::string(report::UnitName(kFigures[f].unit))};
    AddRunValues(row, v);
    t.rows.push_back(std::move(row));
    t.row_units.push_back(kFigures[f].unit);
  }
  t.notes.push_back(
      "definitions: docs/ci.md; higher is better for throughput and GPU "
      "utilization, lower for the others");
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
      FigureValue f = Lookup(run, sec + "." + key);
      v.push_back(f.value);
      if (f.found) title = f.title, unit = f.unit;
    }
    std::vector<Value> row = {sec + "." + key, title, std::string(report::UnitName(unit))};
    AddRunValues(row, v);
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
    if (k == "output.run_dir" || k == "output.dir") continue;
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

}  // namespace

StatusOr<Bound> ParseBound(std::string_view text) {
  Bound b;
  b.text = std::string(text);
  auto bad = [&](const std::string& why) {
    return InvalidArgument(fmt::format("--fail-if '{}': {}", text, why));
  };
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && text[i] == ' ') ++i;
  };
  skip();
  while (i < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '.'))
    b.figure += text[i++];
  skip();
  for (const char* op : {"<=", ">=", "<", ">"}) {
    if (text.substr(i, std::strlen(op)) == op) {
      b.op = op;
      i += b.op.size();
      break;
    }
  }
  const char* example = "expected FIGURE OP BOUND, e.g. 'training_throughput < -10%'";
  if (b.figure.empty() || b.op.empty()) return bad(example);
  skip();
  std::string number(text.substr(i));
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (!number.empty() && number.back() == '%') {
    b.relative = true;
    number.pop_back();
  }
  char* end = nullptr;
  b.limit = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(b.limit))
    return bad(fmt::format("\"{}\" is not a number; {}", std::string(text.substr(i)), example));
  if (b.figure.find('.') == std::string::npos && FigureIndex(b.figure) < 0) {
    std::vector<std::string> names;
    for (const FigureInfo& f : kFigures) names.push_back(f.key);
    std::string near = base::NearestWord(b.figure, names);
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    return bad(fmt::format("unknown figure \"{}\"{}; key figures: {}, or SECTION.METRIC", b.figure,
                           near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near), all));
  }
  return b;
}

StatusOr<Comparison> BuildCompareReport(const std::vector<LoadedRun>& runs,
                                        const std::vector<Bound>& bounds) {
  if (runs.size() < 2) return InvalidArgument("compare needs at least two runs");
  for (const Bound& b : bounds) {
    for (const LoadedRun* run : {&runs.front(), &runs.back()}) {
      if (!Lookup(*run, b.figure).known) {
        return InvalidArgument(
            fmt::format("--fail-if '{}': run {} ({} run in {}) has no value for {}", b.text,
                        run->given, run->report.kind, run->dir, b.figure));
      }
    }
  }
  Comparison out;
  report::Report& r = out.report;
  r.kind = "compare";
  std::string names;
  for (size_t i = 0; i < runs.size(); ++i)
    names += fmt::format("{}{} {}", i == 0 ? "" : " vs ", Label(i), runs[i].given);
  r.title = "trainprof compare: " + names;
  for (size_t i = 0; i < runs.size(); ++i) r.AddMeta(fmt::format("runs.{}", Label(i)), runs[i].dir);
  if (!bounds.empty()) GateSection(r, runs, bounds, out);
  report::Section& rs = RunsSection(r, runs);
  KeyFigureSection(r, runs);
  MetricSection(r, runs);
  ConfigSection(r, runs);
  // What the runs do not share.
  std::set<std::string> kinds;
  for (const LoadedRun& run : runs) kinds.insert(run.report.kind);
  if (kinds.size() > 1) {
    rs.notes.push_back(
        "These runs are of different kinds (profile: the built-in job under the profiler; "
        "analyze: a PyTorch profiler trace): compared are the key figures and metrics they "
        "share, the others show - for the runs without them.");
  }
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
  return out;
}

}  // namespace trainprof::history
