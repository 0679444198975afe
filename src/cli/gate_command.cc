// `trainprof gate`: the regression gate for CI (a candidate against the last runs of its config,
// one line for the log, a JSON verdict, exit 0 / 1 / 2 / 3), and `runs noise`: the run-to-run noise
// the history has seen, and how many runs a gate needs on this machine.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/text.h"
#include "cli/commands.h"
#include "history/compare.h"
#include "history/run_lookup.h"
#include "history/run_spread.h"
#include "report/html.h"
#include "report/json.h"
#include "report/terminal.h"

namespace trainprof::cli {

using history::LoadComparison;
using history::LoadedComparison;
using history::LoadRun;
using history::OpenHistory;
namespace {

using history::RunDb;

// Exit codes of `gate`, and the word of each in the line and the verdict file. A usage or input
// error is never undecided: a mistyped --fail-if must not pass where undecided is let through.
constexpr int kGatePass = 0, kGateRegression = 1, kGateError = kExitBadInput, kGateUndecided = 3;
constexpr const char* kVerdictWords[] = {"PASS", "REGRESSION", "ERROR", "UNDECIDED"};

struct GateFlags {
  std::string baseline = "last:5";
  std::string candidate = "latest";
  std::vector<std::string> fail_if;
  std::string verdict_file, html, db;
  std::string on_undecided = "undecided";  // or "pass", "fail": the exit code CI wants for it
  bool verbose = false;
};

// The exit code of a verdict, after --on-undecided.
int ExitCode(const GateFlags& f, int code) {
  if (code != kGateUndecided || f.on_undecided == "undecided") return code;
  return f.on_undecided == "pass" ? kGatePass : kGateRegression;
}

std::string RunName(const history::LoadedRun& run) { return run.record ? run.record->id : run.dir; }

// The verdict file: what CI keeps beside the log.
nlohmann::json VerdictJson(int code, const std::string& line, const LoadedComparison* loaded,
                           const history::Comparison* cmp) {
  nlohmann::json j = {
      {"verdict", base::AsciiLower(kVerdictWords[code])}, {"exit_code", code}, {"line", line}};
  if (loaded != nullptr) {
    const history::LoadedRun& base = loaded->runs.front();
    nlohmann::json pooled = nlohmann::json::array({RunName(base)});
    for (const history::LoadedRun& p : base.pooled) pooled.push_back(RunName(p));
    j["baseline"] = pooled;
    j["candidate"] = RunName(loaded->runs.back());
    const history::RunSpread& s = loaded->options.history_spread;
    j["history_spread"] = {{"runs", s.runs},
                           {"sd_log", std::isfinite(s.sd) ? nlohmann::json(s.sd) : nullptr},
                           {"df", s.df},
                           {"source", s.source}};
  }
  if (cmp != nullptr) {
    j["bounds"] = cmp->verdicts;
    j["warnings"] = cmp->warnings;
    j["bounds_crossed"] = cmp->bounds_crossed;
    j["bounds_inconclusive"] = cmp->bounds_inconclusive;
    j["bounds_without_interval"] = cmp->bounds_without_interval;
  }
  return j;
}

int Finish(const GateFlags& f, int code, const std::string& line, const LoadedComparison* loaded,
           const history::Comparison* cmp) {
  fmt::print("trainprof gate: {}\n", line);
  if (!f.verdict_file.empty()) {
    const std::string text = VerdictJson(code, line, loaded, cmp).dump(2) + "\n";
    if (Status s = base::WriteFileAtomically(f.verdict_file, text); !s.ok()) {
      PrintError(s);
      return kGateError;
    }
  }
  return ExitCode(f, code);
}

// No baseline yet (the first runs of a config) is undecided; anything else is an error.
int NoVerdict(const GateFlags& f, const Status& s, bool no_baseline_yet) {
  const int code = no_baseline_yet ? kGateUndecided : kGateError;
  return Finish(f, code, fmt::format("{}: {}", kVerdictWords[code], s.message()), nullptr, nullptr);
}

int Gate(const GateFlags& f) {
  std::vector<history::Bound> bounds;
  for (const std::string& text : f.fail_if) {
    auto b = history::ParseBound(text);
    if (!b.ok()) return NoVerdict(f, b.status(), false);
    bounds.push_back(std::move(*b));
  }
  std::unique_ptr<RunDb> db;
  bool no_baseline_yet = false;
  auto loaded = LoadComparison({f.candidate}, f.baseline, f.db, db, "gate", &no_baseline_yet);
  if (!loaded.ok()) return NoVerdict(f, loaded.status(), no_baseline_yet);
  auto cmp = history::BuildCompareReport(loaded->runs, bounds, loaded->options);
  if (!cmp.ok()) {
    const std::string line =
        fmt::format("{}: {}", kVerdictWords[kGateError], cmp.status().message());
    return Finish(f, kGateError, line, &*loaded, nullptr);
  }
  if (f.verbose) report::TerminalRenderer().Render(cmp->report, std::cout);
  if (!f.html.empty()) {
    Status w = base::WriteFileAtomically(f.html, report::RenderHtmlString(cmp->report));
    if (!w.ok()) PrintError(w);
  }
  for (const std::string& w : cmp->warnings) fmt::print(stderr, "trainprof gate: warning: {}\n", w);
  // A bound whose interval reaches across it, or that has no interval, is undecided: the gate
  // passes only what it can tell held.
  const bool undecided = cmp->bounds_inconclusive > 0 || cmp->bounds_without_interval > 0;
  const int code = cmp->gate_failed() ? kGateRegression : undecided ? kGateUndecided : kGatePass;
  std::string verdicts;
  for (const std::string& v : cmp->verdicts) verdicts += (verdicts.empty() ? "" : " | ") + v;
  return Finish(f, code, fmt::format("{}: {}", kVerdictWords[code], verdicts), &*loaded, &*cmp);
}

struct NoiseFlags {
  std::string db, bound = "3%", format = "text";
  std::vector<std::string> where;
};

int RunsNoise(const NoiseFlags& f) {
  std::string b = f.bound;
  if (b.ends_with('%')) b.pop_back();
  char* end = nullptr;
  const double bound = std::strtod(b.c_str(), &end) / 100;
  if (b.empty() || *end != '\0' || !(bound > 0) || !(bound < 1)) {
    PrintError(InvalidArgument(
        fmt::format("--bound {}: a percentage between 0 and 100, e.g. 3%", f.bound)));
    return kExitBadInput;
  }
  std::unique_ptr<RunDb> db;
  if (Status s = OpenHistory(f.db, db); !s.ok()) return PrintError(s), ExitFor(s);
  auto rows = db->List({.last = 0, .where = f.where});
  if (!rows.ok()) return PrintError(rows.status()), ExitFor(rows.status());
  const report::Report r = history::NoiseReport(*rows, bound, db->path());
  if (f.format == "json") {
    std::cout << report::RenderJsonString(r);
  } else {
    report::TerminalRenderer().Render(r, std::cout);
  }
  return kExitOk;
}

}  // namespace

void AddGateCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<GateFlags>();
  CLI::App* g = app.add_subcommand(
      "gate", "The regression gate for CI: the newest run against the last runs of its config");
  g->add_option("--baseline", f->baseline,
                "last:K (the last K stored runs of the candidate's kind and config hash, pooled), "
                "ancestor, or a run")
      ->default_val("last:5");
  g->add_option("--candidate", f->candidate, "The run gated: id, folder, latest or latest~N")
      ->default_val("latest");
  g->add_option("--fail-if", f->fail_if,
                "FIGURE OP BOUND, e.g. 'step_time > +3%' (repeatable; as in compare)")
      ->required();
  g->add_option("--verdict", f->verdict_file,
                "Write the verdict as JSON here (verdict, exit_code, line, bounds, runs)");
  g->add_option("--html", f->html, "Also write the compare page to this file");
  g->add_option("--on-undecided", f->on_undecided,
                "The exit code of an undecided gate: undecided (3), pass (0) or fail (1); the "
                "line still says UNDECIDED")
      ->check(CLI::IsMember({"undecided", "pass", "fail"}))
      ->default_val("undecided");
  g->add_flag("-v,--verbose", f->verbose, "Print the comparison's tables before the verdict");
  AddDbOption(g, &f->db, false);
  g->footer(
      "Prints one line: PASS, REGRESSION, UNDECIDED or ERROR, then each bound's median change, its "
      "95 % interval and where the run-to-run spread came from. An interval that reaches across "
      "its bound (inconclusive) is undecided, with the runs a side that would decide it; so is a "
      "first run with no baseline yet. The spread is learnt from the run "
      "history (the runs of the baseline's config on this host and device, at least 3); "
      "`trainprof runs noise` shows it and how many runs a bound needs.\nExamples:\n"
      "  trainprof gate --fail-if 'step_time > +3%'\n"
      "  trainprof gate --baseline last:10 --candidate latest --fail-if 'step_time > +3%' "
      "--fail-if 'peak_memory > +1%' --verdict gate.json\nSee docs/ci.md.\n" +
      ExitCodesHelp(
          {{kGatePass, "pass: every bound held (its whole 95 % interval on the safe side)"},
           {kGateRegression, "regression: a bound was crossed beyond noise"},
           {kGateError,
            "error: a bad option or --fail-if, an unknown run, an unreadable history (never a "
            "verdict: do not let it pass)"},
           {kGateUndecided,
            "undecided: a bound's interval reaches across it or has too few steps, or there is "
            "no baseline run yet (--on-undecided pass|fail maps it for CI)"}}));
  g->callback([run, f] { *run = [f] { return Gate(*f); }; });
}

void AddRunsNoiseCommand(CLI::App* runs, std::function<int()>* run) {
  auto f = std::make_shared<NoiseFlags>();
  CLI::App* n = runs->add_subcommand(
      "noise", "Run-to-run noise per configuration, and the runs a gate needs for a bound");
  AddDbOption(n, &f->db, false);
  n->add_option("--bound", f->bound, "The bound to plan for, in %")->default_val("3%");
  n->add_option("--where", f->where, "FIELD OP VALUE, as in runs list (repeatable)");
  n->add_option("--format", f->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_val("text");
  n->footer(
      "One row per config hash, kind, host and device: its runs, the spread of their median "
      "step time, and the fewest runs whose 95 % interval is within the bound.\nExamples:\n"
      "  trainprof runs noise\n  trainprof runs noise --bound 2% --where 'kind = profile'\n" +
      ExitCodesHelp({{kExitOk, "success"},
                     {kExitFailure, "the run history could not be read"},
                     {kExitBadInput, "bad input: a bad --bound or --where, no history"}}));
  n->callback([run, f] { *run = [f] { return RunsNoise(*f); }; });
}

}  // namespace trainprof::cli
