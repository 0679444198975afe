// `trainprof diff`'s verdict on the step time, and the warnings that keep it honest: an empty
// side is no win, the same profile on both sides is no change, two GPU sets are named before
// any figure, a change within the noise threshold is not called faster or slower, and two
// capture windows without steps are compared by their work, not by their lengths.
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "analysis/diff.h"

namespace trainprof::analysis {

bool WindowsOnly(const DiffSide& s) {
  for (const RankAnalysis& a : *s.analyses)
    if (!a.steps.synthetic) return false;
  return !s.analyses->empty();
}

namespace {

// What the side ran, summed over its ranks: GPU events and their time, CPU operators.
struct Work {
  int64_t gpu_events = 0, gpu_ns = 0, cpu_ops = 0, gpus = 0;
};
Work WorkOf(const DiffSide& s) {
  Work w;
  for (const trace::TraceModel& m : *s.models) {
    std::set<int64_t> devices;
    for (size_t i = 0; i < m.size(); ++i) {
      if (trace::IsGpuKind(m.kind[i])) {
        ++w.gpu_events;
        w.gpu_ns += m.dur_ns[i];
        devices.insert(m.device_of(i));
      } else if (m.kind[i] == trace::EventKind::kCpuOp) {
        ++w.cpu_ops;
      }
    }
    w.gpus += static_cast<int64_t>(devices.size());
  }
  return w;
}

void Say(report::Section& s, report::Severity severity, std::string text) {
  s.findings.push_back({severity, std::move(text)});
}

// Two capture windows: compare the GPU work they hold, per rank.
void WindowVerdict(report::Section& s, const Work& a, const Work& b, size_t ranks_a,
                   size_t ranks_b) {
  const double ga = static_cast<double>(a.gpu_ns) / std::max<size_t>(ranks_a, 1);
  const double gb = static_cast<double>(b.gpu_ns) / std::max<size_t>(ranks_b, 1);
  std::string work = "neither side ran GPU work";
  if (ga > 0 && gb > 0) {
    const double pct = 100 * (gb - ga) / ga;
    work = std::fabs(pct) <= kDiffNoisePct
               ? fmt::format(
                     "their GPU work is within {:.0f}% ({:.3f} ms against {:.3f} ms "
                     "per rank)",
                     kDiffNoisePct, gb / 1e6, ga / 1e6)
               : fmt::format("B's GPU work is {:.3f} ms per rank against A's {:.3f} ms ({:+.1f}%)",
                             gb / 1e6, ga / 1e6, pct);
  } else if (ga > 0 || gb > 0) {
    work = fmt::format("only {} ran GPU work", ga > 0 ? "A" : "B");
  }
  Say(s, report::Severity::kInfo,
      fmt::format("Neither trace marks steps (no ProfilerStep ranges), so each side's \"step\" is "
                  "its capture window, and the windows' lengths say nothing of speed. Compared "
                  "instead is the work they hold: {}. The operator and kernel tables below are "
                  "per capture window.",
                  work));
}

}  // namespace

void AddStepVerdict(report::Section& s, const DiffSide& a, const DiffSide& b, double sa, double sb,
                    bool other_model) {
  const Work wa = WorkOf(a), wb = WorkOf(b);
  for (const auto& [side, w] : {std::pair{"A", &wa}, std::pair{"B", &wb}}) {
    if (w->gpu_events == 0 && w->cpu_ops == 0) {
      Say(s, report::Severity::kWarning,
          fmt::format("{} holds no operators and no GPU work (an empty capture): there is "
                      "nothing to compare, and no figure below is a speed-up or a slow-down.",
                      side));
      return;
    }
  }
  if (wa.gpus != wb.gpus || a.models->size() != b.models->size())
    Say(s, report::Severity::kWarning,
        fmt::format("A ran {} rank{} on {} GPU{}, B {} rank{} on {} GPU{}: per-rank figures are "
                    "compared, but the two setups differ in more than the code.",
                    a.models->size(), a.models->size() == 1 ? "" : "s", wa.gpus,
                    wa.gpus == 1 ? "" : "s", b.models->size(), b.models->size() == 1 ? "" : "s",
                    wb.gpus, wb.gpus == 1 ? "" : "s"));
  if (WindowsOnly(a) && WindowsOnly(b))
    return WindowVerdict(s, wa, wb, a.models->size(), b.models->size());
  if (WindowsOnly(a) != WindowsOnly(b)) {
    const bool a_steps = WindowsOnly(b);
    Say(s, report::Severity::kWarning,
        fmt::format("{} marks steps (ProfilerStep ranges) and {} does not: {}'s figures are per "
                    "step, {}'s per capture window, so no speed verdict is given. Profile both "
                    "under one torch.profiler schedule to compare them.",
                    a_steps ? "A" : "B", a_steps ? "B" : "A", a_steps ? "A" : "B",
                    a_steps ? "B" : "A"));
    return;
  }
  if (sa <= 0 || sb <= 0) return;
  s.AddMetric("step_time_ratio", "Step time B / A", sb / sa, report::Unit::kNumber, "x");
  const double pct = 100 * (sb - sa) / sa;
  const std::string caveat = other_model ? ", but they run different operators (above)" : "";
  if (sb == sa) {
    Say(s, report::Severity::kInfo,
        fmt::format("B's average step is the same as A's ({:.3f} ms){}.", sa / 1e6, caveat));
  } else if (std::fabs(pct) <= kDiffNoisePct) {
    Say(s, report::Severity::kInfo,
        fmt::format("No clear change: B's average step is within {:.0f}% of A's ({:.3f} ms "
                    "against {:.3f} ms, {:+.1f}%){}.",
                    kDiffNoisePct, sb / 1e6, sa / 1e6, pct, caveat));
  } else {
    Say(s, report::Severity::kWarning,
        fmt::format("B's average step is {:.1f}% {} than A's ({:.3f} ms vs {:.3f} ms){}.",
                    std::fabs(pct), sb > sa ? "slower" : "faster", sb / 1e6, sa / 1e6, caveat));
  }
}

}  // namespace trainprof::analysis
