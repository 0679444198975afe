// The regression gate of `trainprof compare --fail-if`: bounds parsed, checked against the runs,
// and judged on the 95 % interval of the change where per-step data exists (else on the values).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/text.h"
#include "history/compare_parts.h"
#include "report/format.h"

namespace trainprof::history {
namespace {

using report::Unit;
using report::Value;

StatusOr<Bound> BadBound(std::string_view text, const std::string& why) {
  return InvalidArgument(fmt::format("--fail-if '{}': {}", text, why));
}

constexpr const char* kExample = "expected FIGURE OP BOUND, e.g. 'training_throughput < -10%'";

// The figure name and the operator, advancing `i`.
void ParseFigureAndOp(std::string_view text, size_t& i, Bound& b) {
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
  skip();
}

// A key figure's name, or the error that lists them.
Status CheckKeyFigure(std::string_view text, const Bound& b) {
  if (b.figure.find('.') != std::string::npos || FigureIndex(b.figure) >= 0) return Status::Ok();
  std::vector<std::string> names;
  for (const FigureInfo& f : kFigures) names.push_back(f.key);
  std::string near = base::NearestWord(b.figure, names);
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  return BadBound(text, fmt::format(
                            "unknown figure \"{}\"{}; key figures: {}, or SECTION.METRIC", b.figure,
                            near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near), all))
      .status();
}

// A bound in % of a percentage is the "Δ% 36845 %" trap; pp of anything else means nothing.
Status CheckBoundUnit(const Bound& b, Unit unit) {
  if (unit == Unit::kPercent && b.relative) {
    return BadBound(b.text, fmt::format("{} is a percentage: bound its change in percentage "
                                        "points, e.g. '{} {} {:+g}pp'",
                                        b.figure, b.figure, b.op, b.limit))
        .status();
  }
  if (unit != Unit::kPercent && b.points) {
    return BadBound(b.text, fmt::format("{} is not a percentage, so pp does not apply; use % of "
                                        "the baseline or a change in {}",
                                        b.figure, report::UnitName(unit)))
        .status();
  }
  return Status::Ok();
}

bool Beyond(const std::string& op, double limit, double lo, double hi) {
  if (op == ">") return lo > limit;
  if (op == ">=") return lo >= limit;
  if (op == "<") return hi < limit;
  return hi <= limit;
}

bool Within(const std::string& op, double limit, double lo, double hi) {
  if (op == ">") return hi <= limit;
  if (op == ">=") return hi < limit;
  if (op == "<") return lo >= limit;
  return lo > limit;
}

// One bound, judged.
struct Judgement {
  internal::FigureValue base, cand;
  double change = kNoValue, change_pct = kNoValue;
  RelativeChange interval;
  bool interval_mode = false;
  bool crossed = false, inconclusive = false;
  std::string verdict, line;
};

// The interval in the bound's terms: percent of the baseline, or the figure's unit.
void ScaleInterval(const Bound& b, const RelativeChange& c, double* est, double* lo, double* hi) {
  const double scale = b.relative ? 100.0 : c.base_median;
  *est = scale * c.change, *lo = scale * c.low, *hi = scale * c.high;
}

std::string InBoundUnit(const Bound& b, double v, Unit unit) {
  if (b.relative) return fmt::format("{:+.1f} %", v);
  if (b.points) return report::FormatHuman(v, Unit::kPercentPoints);
  return (v > 0 ? "+" : "") + report::FormatHuman(v, unit);
}

// How many runs would decide an interval that reaches across its bound: the interval's side
// towards the limit must shrink below the distance from the estimate to the limit. Its variance
// goes as 1/base_runs + 1/cand_runs (run-to-run spread) or 1/steps (step noise only: more runs
// bring more steps alike), so R runs a side give 2/R of today's 1/b + 1/c.
std::string RunsToDecide(const RelativeChange& c, double limit, double est, double lo, double hi) {
  const double distance = std::abs(limit - est), side = limit > est ? hi - est : est - lo;
  const double now = 1.0 / static_cast<double>(std::max<int64_t>(c.base_runs, 1)) +
                     1.0 / static_cast<double>(std::max<int64_t>(c.cand_runs, 1));
  const double runs = 2 / now * (side / distance) * (side / distance);
  if (!(distance > 0) || !(runs <= static_cast<double>(kMaxPlanRuns))) {
    return fmt::format("the change sits too close to the bound for {} runs a side to decide it",
                       kMaxPlanRuns);
  }
  const auto r = std::max<int64_t>(2, static_cast<int64_t>(std::ceil(runs)));
  return fmt::format("about {} runs a side would decide it: --repeat {} against last:{}", r, r, r);
}

void JudgeInterval(const Bound& b, const RelativeChange& interval, Judgement& j) {
  j.interval_mode = true;
  j.interval = interval;
  const RelativeChange& c = j.interval;
  if (!c.has_interval) {
    j.inconclusive = true;
    j.verdict = internal::IntervalText(c);
    j.line = fmt::format("{}: {}", b.text, j.verdict);
    return;
  }
  double est, lo, hi;
  ScaleInterval(b, c, &est, &lo, &hi);
  j.crossed = Beyond(b.op, b.limit, lo, hi);
  j.inconclusive = !j.crossed && !Within(b.op, b.limit, lo, hi);
  j.verdict = j.crossed ? "beyond noise"
              : j.inconclusive
                  ? fmt::format("inconclusive ({} steps; {})", c.base_steps + c.cand_steps,
                                RunsToDecide(c, b.limit, est, lo, hi))
                  : "within noise";
  j.line = fmt::format(
      "{}: median change {} [{}, {}] (95 % CI, {} + {} steps, {} + {} runs; {}): {}", b.text,
      InBoundUnit(b, est, j.base.unit), InBoundUnit(b, lo, j.base.unit),
      InBoundUnit(b, hi, j.base.unit), c.base_steps, c.cand_steps, c.base_runs, c.cand_runs,
      c.run_sd_source.empty() ? "step-to-step noise only"
                              : "run-to-run spread from " + c.run_sd_source,
      j.verdict);
}

void JudgePlain(const Bound& b, Judgement& j) {
  const double v = b.relative ? j.change_pct : j.change;
  j.crossed = !std::isnan(v) && !Within(b.op, b.limit, v, v);
  j.verdict = j.crossed ? "crossed (plain: no per-step data)" : "held (plain: no per-step data)";
  j.line = fmt::format(
      "{}: {} -> {} ({}): {}", b.text, report::FormatHuman(j.base.value, j.base.unit),
      report::FormatHuman(j.cand.value, j.cand.unit), InBoundUnit(b, v, j.base.unit), j.verdict);
}

Judgement Judge(const Bound& b, const LoadedRun& base, const LoadedRun& cand,
                const RelativeChange* interval) {
  Judgement j;
  j.base = internal::Lookup(base, b.figure);
  j.cand = internal::Lookup(cand, b.figure);
  j.change = j.cand.value - j.base.value;
  j.change_pct = internal::Pct(j.base.value, j.cand.value);
  if (interval != nullptr) {
    JudgeInterval(b, *interval, j);
  } else {
    JudgePlain(b, j);
  }
  return j;
}

}  // namespace

StatusOr<Bound> ParseBound(std::string_view text) {
  Bound b;
  b.text = std::string(text);
  size_t i = 0;
  ParseFigureAndOp(text, i, b);
  if (b.figure.empty() || b.op.empty()) return BadBound(text, kExample);
  std::string number(text.substr(i));
  while (!number.empty() && number.back() == ' ') number.pop_back();
  if (number.ends_with("pp")) {
    b.points = true;
    number.resize(number.size() - 2);
  } else if (number.ends_with('%')) {
    b.relative = true;
    number.pop_back();
  }
  while (!number.empty() && number.back() == ' ') number.pop_back();
  char* end = nullptr;
  b.limit = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(b.limit)) {
    return BadBound(
        text, fmt::format("\"{}\" is not a number; {}", std::string(text.substr(i)), kExample));
  }
  TRAINPROF_RETURN_IF_ERROR(CheckKeyFigure(text, b));
  if (const int f = FigureIndex(b.figure); f >= 0)
    TRAINPROF_RETURN_IF_ERROR(CheckBoundUnit(b, kFigures[static_cast<size_t>(f)].unit));
  return b;
}

namespace internal {

Status CheckBounds(const std::vector<LoadedRun>& runs, const std::vector<Bound>& bounds) {
  for (const Bound& b : bounds) {
    for (const LoadedRun* run : {&runs.front(), &runs.back()}) {
      const FigureValue f = Lookup(*run, b.figure);
      if (!f.known) {
        return InvalidArgument(
            fmt::format("--fail-if '{}': run {} (kind {}, in {}) has no value for {}", b.text,
                        run->given, run->report.kind, run->dir, b.figure));
      }
      TRAINPROF_RETURN_IF_ERROR(CheckBoundUnit(b, f.unit));
    }
  }
  return Status::Ok();
}

void GateSection(report::Report& r, const std::vector<LoadedRun>& runs, const Intervals& intervals,
                 const std::vector<Bound>& bounds, Comparison& out) {
  const LoadedRun& base = runs.front();
  const LoadedRun& cand = runs.back();
  report::Section& s = r.AddSection("gate", "Regression gate");
  report::Table& t = s.AddTable("gate", "Bounds (candidate against baseline)",
                                {{"bound", "Bound"},
                                 {"unit", "Unit", Unit::kText, false},
                                 {"baseline", "Baseline", Unit::kByRow},
                                 {"candidate", "Candidate", Unit::kByRow},
                                 {"change", "Change", Unit::kByRow, true, true},
                                 {"change_pct", "Change %", Unit::kPercent},
                                 {"median_change_pct", "Median change", Unit::kPercent},
                                 {"ci_low_pct", "95 % CI from", Unit::kPercent},
                                 {"ci_high_pct", "to", Unit::kPercent},
                                 {"verdict", "Verdict"},
                                 {"result", "Result"}});
  for (const Bound& b : bounds) {
    const auto it = intervals.find({runs.size() - 1, b.figure});
    Judgement j = Judge(b, base, cand, it != intervals.end() ? &it->second : nullptr);
    out.bounds_crossed += j.crossed ? 1 : 0;
    out.bounds_inconclusive += j.inconclusive ? 1 : 0;
    out.bounds_without_interval += j.interval_mode && !j.interval.has_interval ? 1 : 0;
    const bool iv = j.interval_mode && j.interval.has_interval;
    t.rows.push_back({b.text, std::string(report::UnitName(j.base.unit)), Opt(j.base.value),
                      Opt(j.cand.value), Opt(j.change),
                      j.base.unit == Unit::kPercent ? Value() : Opt(j.change_pct),
                      Opt(j.interval_mode ? 100 * j.interval.change : kNoValue),
                      Opt(iv ? 100 * j.interval.low : kNoValue),
                      Opt(iv ? 100 * j.interval.high : kNoValue), j.verdict,
                      std::string(j.crossed        ? "CROSSED"
                                  : j.inconclusive ? "inconclusive"
                                                   : "ok")});
    t.row_units.push_back(j.base.unit);
    if (j.crossed) s.findings.push_back({report::Severity::kError, j.line});
    out.verdicts.push_back(j.line);
  }
  if (!t.rows.empty()) {  // each bound's change, a crossed one in red
    t.charts.push_back({.kind = report::ChartKind::kBars,
                        .id = "gate_change",
                        .title = "Change % against the baseline",
                        .label = "bound",
                        .values = {"change_pct"},
                        .names = {"change"},
                        .limit = 0,
                        .highlight_key = "result",
                        .highlight_value = std::string("CROSSED")});
  }
  s.AddMetric("bounds", "Bounds checked", static_cast<int64_t>(bounds.size()), Unit::kCount);
  s.AddMetric("crossed", "Bounds crossed", out.bounds_crossed, Unit::kCount);
  s.AddMetric("inconclusive", "Bounds inconclusive", out.bounds_inconclusive, Unit::kCount);
  t.notes.push_back(fmt::format(
      "baseline {} ({}{}), candidate {} ({})", base.given, base.record ? base.record->id : base.dir,
      base.pooled.empty() ? "" : fmt::format(", pooled with {} earlier runs", base.pooled.size()),
      cand.given, cand.record ? cand.record->id : cand.dir));
  t.notes.push_back(
      "step time and throughput: a bound fails only when the whole 95 % interval of the "
      "median change lies beyond it (docs/ci.md); other figures compare the two values");
}

}  // namespace internal
}  // namespace trainprof::history
