// Issue 69: the wrong verdicts users reported of the newest comparable tool, replayed against
// `trainprof diff`: an empty capture shown as a large win, a profile compared with itself called
// a likely regression, two GPU sets compared without a warning, "faster" printed while the
// verdict is neutral; and two capture windows without steps compared by their lengths.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/diff.h"
#include "memory/allocation_log.h"

namespace trainprof::analysis::diff_verdict_test {
namespace {

constexpr int64_t kUs = 1000;

// `steps` ProfilerSteps of `step_us` each holding one aten::mm and its kernel of `kernel_us`
// on each of `gpus` devices; no steps when `steps` is 0 (a capture window of 3 such blocks).
trace::TraceModel Steps(int steps, int64_t step_us, int64_t kernel_us, int gpus = 1) {
  trace::TraceModel m;
  m.tracks = {{.pid = 1, .tid = 1}};
  for (int g = 0; g < gpus; ++g) m.tracks.push_back({.pid = 0, .tid = 7, .device = g, .stream = 7});
  const int blocks = steps > 0 ? steps : 3;
  int64_t corr = 1;
  for (int k = 0; k < blocks; ++k) {
    const int64_t t0 = k * step_us * kUs;
    if (steps > 0)
      m.Add(trace::EventKind::kUserAnnotation, "ProfilerStep#" + std::to_string(k + 1), t0,
            step_us * kUs, 0);
    m.Add(trace::EventKind::kCpuOp, "aten::mm", t0 + 10 * kUs, 20 * kUs, 0);
    for (int g = 0; g < gpus; ++g) {
      const size_t call =
          m.Add(trace::EventKind::kRuntime, "cudaLaunchKernel", t0 + 12 * kUs, 5 * kUs, 0);
      m.correlation.Set(call, corr);
      const size_t kern = m.Add(trace::EventKind::kKernel, "sm90_xmma_gemm_bf16bf16", t0 + 40 * kUs,
                                kernel_us * kUs, static_cast<uint32_t>(1 + g));
      m.correlation.Set(kern, corr++);
    }
  }
  m.LinkLaunches();
  return m;
}

struct Side {
  std::vector<trace::TraceModel> models;
  std::vector<RankAnalysis> an;
  DiffSide side;
};

Side MakeSide(std::vector<trace::TraceModel> models, const char* label) {
  Side s{std::move(models), {}, {}};
  s.an = AnalyzeAll(s.models, {});
  s.side = {label, &s.models, &s.an};
  return s;
}

std::string Findings(const Side& a, const Side& b) {
  const report::Report r = BuildDiffReport(a.side, b.side, 5);
  std::string out;
  for (const report::Finding& f : r.FindSection("diff")->findings) out += f.text + "\n";
  return out;
}

std::vector<trace::TraceModel> One(trace::TraceModel m) {
  std::vector<trace::TraceModel> v;
  v.push_back(std::move(m));
  return v;
}

TEST(DiffVerdict, AnEmptyCaptureIsNoWin) {
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");
  trace::TraceModel empty;
  empty.tracks = {{.pid = 1, .tid = 1}};
  empty.Add(trace::EventKind::kUserAnnotation, "ProfilerStep#1", 0, 10 * kUs, 0);
  Side b = MakeSide(One(std::move(empty)), "b");
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("B holds no operators and no GPU work (an empty capture)"), std::string::npos)
      << f;
  EXPECT_EQ(f.find("faster"), std::string::npos) << f;
}

TEST(DiffVerdict, AProfileAgainstItselfIsTheSame) {
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");
  Side b = MakeSide(One(Steps(4, 1000, 800)), "b");
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("B's average step is the same as A's"), std::string::npos) << f;
  EXPECT_EQ(f.find("slower"), std::string::npos) << f;
  EXPECT_EQ(f.find("regress"), std::string::npos) << f;
}

TEST(DiffVerdict, TwoGpuSetsAreNamedFirst) {
  Side a = MakeSide(One(Steps(4, 1000, 800, 2)), "a");
  Side b = MakeSide(One(Steps(4, 1000, 800, 1)), "b");
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("A ran 1 rank on 2 GPUs, B 1 rank on 1 GPU"), std::string::npos) << f;
}

TEST(DiffVerdict, WithinTheNoiseIsNotFasterOrSlower) {
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");
  Side b = MakeSide(One(Steps(4, 980, 800)), "b");  // 2 % shorter
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("No clear change: B's average step is within 5% of A's"), std::string::npos)
      << f;
  EXPECT_EQ(f.find("faster"), std::string::npos) << f;
  Side c = MakeSide(One(Steps(4, 800, 700)), "c");  // 20 % shorter: a verdict
  EXPECT_NE(Findings(a, c).find("B's average step is 20.0% faster"), std::string::npos)
      << Findings(a, c);
}

// Nsight's mfu_2gpu_before/after: no steps, each "step" its capture window. The windows are
// not compared as steps; the GPU work they hold is.
TEST(DiffVerdict, WindowsWithoutStepsCompareTheirWork) {
  Side a = MakeSide(One(Steps(0, 1000, 800)), "a");
  Side b = MakeSide(One(Steps(0, 1000, 400)), "b");
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("each side's \"step\" is its capture window"), std::string::npos) << f;
  EXPECT_NE(f.find("B's GPU work is 1.200 ms per rank against A's 2.400 ms (-50.0%)"),
            std::string::npos)
      << f;
  for (const char* verdict : {"average step", "faster", "slower", "the same"})
    EXPECT_EQ(f.find(verdict), std::string::npos) << verdict << " in " << f;
}

TEST(DiffVerdict, StepsOnOneSideOnlyGiveNoVerdict) {
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");  // four steps of 1 ms
  Side b = MakeSide(One(Steps(0, 1000, 800)), "b");  // the same work, no step marks
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("A marks steps (ProfilerStep ranges) and B does not"), std::string::npos) << f;
  for (const char* verdict : {"Neither trace marks steps", "faster", "slower", "the same"})
    EXPECT_EQ(f.find(verdict), std::string::npos) << verdict << " in " << f;
  // A's column is its average step, B's its capture window: the title says which is which.
  const report::Report r = BuildDiffReport(a.side, b.side, 5);
  EXPECT_EQ(r.FindSection("diff")->FindTable("step_time_diff")->title,
            "Average step time by category (B: its capture window, no steps marked)");
}

// Issue 72: a larger batch moves activations, not optimizer state, and the diff says so.
void SetRoles(Side& s, int64_t params, int64_t state, int64_t activations) {
  DeviceMemory d;
  d.device = 0;
  std::vector<int64_t>& roles = d.series->role_bytes;
  roles.assign(memory::kRoles, 0);
  roles[static_cast<int>(memory::Role::kParameter)] = params;
  roles[static_cast<int>(memory::Role::kOptimizerState)] = state;
  roles[static_cast<int>(memory::Role::kActivation)] = activations;
  d.peak_allocated = params + state + activations;
  s.an[0].memory.devices = {d};
}

TEST(DiffVerdict, ALargerBatchMovesActivationsNotOptimizerState) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");
  Side b = MakeSide(One(Steps(4, 1000, 800)), "b");
  SetRoles(a, 4 * kGiB, 8 * kGiB, 6 * kGiB);
  SetRoles(b, 4 * kGiB, 8 * kGiB, 12 * kGiB);
  const report::Report r = BuildDiffReport(a.side, b.side, 5);
  const report::Table* t = r.FindSection("diff")->FindTable("memory_role_diff");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 3u);  // parameter, optimizer state, activation: the roles present
  EXPECT_EQ(std::get<std::string>(t->rows[2][0]), "activation");
  EXPECT_EQ(std::get<int64_t>(t->rows[2][3]), 6 * kGiB);
  EXPECT_EQ(std::get<int64_t>(t->rows[1][3]), 0);
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("memory at the peak moved +6.00 GiB (18.0 GiB -> 24.0 GiB): activation "
                   "+6.00 GiB\n"),
            std::string::npos)
      << f;
}

TEST(DiffVerdict, RolesOnOneSideOnlyAreNotCompared) {
  Side a = MakeSide(One(Steps(4, 1000, 800)), "a");
  Side b = MakeSide(One(Steps(4, 1000, 800)), "b");
  SetRoles(b, 100, 200, 300);
  const std::string f = Findings(a, b);
  EXPECT_NE(f.find("only B has memory events"), std::string::npos) << f;
  EXPECT_EQ(BuildDiffReport(a.side, b.side, 5).FindSection("diff")->FindTable("memory_role_diff"),
            nullptr);
}

}  // namespace
}  // namespace trainprof::analysis::diff_verdict_test
