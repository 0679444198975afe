// The analyze options, defined once: each entry's check and where it lands.
#include "analysis/run/options.h"

#include <gtest/gtest.h>

#include <set>

#include "util/golden.h"

namespace trainprof::analysis {
namespace {

const AnalyzeOption& Opt(std::string_view keyword) {
  const AnalyzeOption* o = FindAnalyzeOption(keyword);
  EXPECT_NE(o, nullptr) << keyword;
  return *o;
}

TEST(AnalyzeOptions, EveryEntryIsWholeAndItsDefaultPassesItsOwnCheck) {
  std::set<std::string_view> seen;
  const AnalyzeRequest defaults;
  for (const AnalyzeOption& o : AnalyzeOptionList()) {
    EXPECT_TRUE(seen.insert(o.keyword).second) << o.keyword;
    EXPECT_FALSE(o.help.empty()) << o.keyword;
    EXPECT_FALSE(o.expects.empty()) << o.keyword;
    if (o.kind == OptionKind::kChoice) {
      AnalyzeRequest r;
      EXPECT_TRUE(
          SetOption(o, OptionValue{defaults.*std::get<std::string AnalyzeRequest::*>(o.field)}, r)
              .ok());
    }
    if (o.kind == OptionKind::kInt) {
      const int d = defaults.*std::get<int AnalyzeRequest::*>(o.field);
      EXPECT_TRUE(o.min <= d && d <= o.max) << o.keyword;
    }
  }
  EXPECT_EQ(FlagOf(Opt("kernel_wait_us")), "--kernel-wait-us");
  EXPECT_EQ(FindAnalyzeOption("kernel-wait-us"), nullptr);  // keywords are Python's spelling
}

TEST(AnalyzeOptions, ValuesLandInTheirFields) {
  AnalyzeRequest r;
  ASSERT_TRUE(SetOption(Opt("steps"), OptionValue{std::string("all")}, r).ok());
  ASSERT_TRUE(SetOption(Opt("hta_compat"), OptionValue{true}, r).ok());
  ASSERT_TRUE(SetOption(Opt("top_kernels"), OptionValue{int64_t{5}}, r).ok());
  ASSERT_TRUE(SetOption(Opt("kernel_wait_us"), OptionValue{int64_t{7}}, r).ok());
  ASSERT_TRUE(SetOption(Opt("peak_tflops"), OptionValue{989.5}, r).ok());
  ASSERT_TRUE(SetOption(Opt("hta_duration_ratio"), OptionValue{int64_t{1}}, r).ok());
  ASSERT_TRUE(SetOption(Opt("dataloader_pattern"), OptionValue{std::string("load_batch")}, r).ok());
  ASSERT_TRUE(
      SetOption(Opt("capture_trace"),
                OptionValue{std::vector<std::string>{testutil::SourceDir() + "/tests/data"}}, r)
          .ok());
  EXPECT_EQ(r.steps, "all");
  EXPECT_TRUE(r.hta_compat);
  EXPECT_EQ(r.top_kernels, 5);
  EXPECT_EQ(r.kernel_wait_us, 7.0);
  EXPECT_EQ(r.peak_tflops, 989.5);
  EXPECT_EQ(r.dataloader_patterns, std::vector<std::string>{"load_batch"});
  EXPECT_EQ(r.capture_traces.size(), 1u);
  // The critical path: on with no text (each step), on with an annotation, off again.
  EXPECT_FALSE(r.critical_path.has_value());
  ASSERT_TRUE(SetOption(Opt("critical_path"), OptionValue{true}, r).ok());
  EXPECT_EQ(r.critical_path, std::optional<std::string>(""));
  ASSERT_TRUE(SetOption(Opt("critical_path"), OptionValue{std::string("forward:1")}, r).ok());
  EXPECT_EQ(r.critical_path, std::optional<std::string>("forward:1"));
  ASSERT_TRUE(SetOption(Opt("critical_path"), OptionValue{false}, r).ok());
  EXPECT_FALSE(r.critical_path.has_value());
  EXPECT_EQ(ToOptions(r).hta.top_kernels, 5);
  EXPECT_EQ(ToOptions(r).hta.duration_ratio, 1.0);
}

TEST(AnalyzeOptions, BadValuesAreRefusedAndChangeNothing) {
  AnalyzeRequest r;
  const auto refused = [&](std::string_view keyword, OptionValue v, std::string_view message) {
    const Status s = SetOption(Opt(keyword), v, r);
    EXPECT_FALSE(s.ok()) << keyword;
    EXPECT_EQ(s.message(), message) << keyword;
  };
  refused("steps", OptionValue{std::string("some")}, "expected \"complete\" or \"all\"");
  refused("top_kernels", OptionValue{int64_t{0}}, "expected an int from 1 to 10000");
  refused("top_kernels", OptionValue{2.5}, "expected an int from 1 to 10000");
  refused("threads", OptionValue{int64_t{1025}}, "expected an int from 0 to 1024");
  refused("kernel_wait_us", OptionValue{-1.0}, "expected a number > 0");
  refused("kernel_wait_us", OptionValue{std::string("5")}, "expected a number > 0");
  refused("hta_duration_ratio", OptionValue{1.5}, "expected a number above 0, at most 1");
  refused("hta_duration_ratio", OptionValue{0.0}, "expected a number above 0, at most 1");
  refused("dataloader_pattern", OptionValue{std::vector<std::string>{"a", ""}},
          "expected a non-empty str or a list of them");
  refused("capture_trace", OptionValue{std::string("no/such/place")},
          "no/such/place does not exist (expected a path or a list of paths that exist)");
  refused("critical_path", OptionValue{int64_t{3}},
          "expected True (each analysed step) or \"ANNOTATION[:INSTANCE[-LAST]]\"");
  // 1e20 s is past what a window's 64-bit microseconds hold: refused, not wrapped around.
  refused("to_s", OptionValue{1e20}, "expected a number of seconds >= 0");
  const AnalyzeRequest untouched;
  EXPECT_EQ(r.steps, untouched.steps);
  EXPECT_EQ(r.top_kernels, untouched.top_kernels);
  EXPECT_EQ(r.kernel_wait_us, untouched.kernel_wait_us);
  EXPECT_TRUE(r.capture_traces.empty());
}

TEST(AnalyzeOptions, AnUnknownKeywordGetsTheNearest) {
  EXPECT_EQ(NearestOption("hta_compatible"), "hta_compat");
  EXPECT_EQ(NearestOption("top_kernel"), "top_kernels");
  EXPECT_EQ(NearestOption("zzzzzzzz"), "");
}

}  // namespace
}  // namespace trainprof::analysis
