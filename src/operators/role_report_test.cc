// The in-process memory-by-role section on hand-made samples: absent figures stay absent, the
// allocator's rest is computed only where there is a total, the modules keep a top 20 and a rest
// row, and the answers carry their figures.
#include "operators/role_report.h"

#include <gtest/gtest.h>

namespace trainprof::torchlib {
namespace {

constexpr int64_t kMiB = 1 << 20;

const report::Section& Roles(const report::Report& r) {
  const report::Section* s = r.FindSection("memory_by_role");
  EXPECT_NE(s, nullptr);
  return *s;
}

TEST(RoleReport, CpuSamplesLeaveTheRestAbsentNotZero) {
  std::vector<RoleSample> samples = {
      {1, "end of forward", 4 * kMiB, 0, 8 * kMiB, 20 * kMiB, kMiB / 2, std::nullopt},
      {1, "end of optimizer.step", 4 * kMiB, 4 * kMiB, 8 * kMiB, std::nullopt, std::nullopt,
       std::nullopt}};
  report::Report r;
  AddRoleSection(samples, {}, r);
  const report::Section& s = Roles(r);
  EXPECT_EQ(std::get<int64_t>(s.FindMetric("optimizer_state_bytes")->value), 8 * kMiB);
  EXPECT_EQ(std::get<int64_t>(s.FindMetric("activation_bytes")->value), 20 * kMiB);
  EXPECT_EQ(s.FindMetric("other_bytes"), nullptr);
  const report::Table* t = s.FindTable("role_samples");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t->rows[1][5]));  // activations
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t->rows[0][7]));  // other
  EXPECT_EQ(s.FindTable("role_modules"), nullptr);
  ASSERT_EQ(s.findings.size(), 2u);  // the optimizer's 2.0x and the activations' share
  EXPECT_NE(s.findings[0].text.find("2.0x the weights"), std::string::npos);
  EXPECT_NE(s.findings[1].text.find("(61.5 % of the memory"), std::string::npos);
  EXPECT_NE(s.findings[1].text.find("of the blocks that make them (the activation_modules table)"),
            std::string::npos);
  report::Report named;
  AddRoleSection(samples, {}, named,
                 {.activation_modules = {{"blocks.3", 6 * kMiB},
                                         {"blocks.2", 5 * kMiB},
                                         {"blocks.1", 4 * kMiB},
                                         {"blocks.0", 3 * kMiB}}});
  EXPECT_NE(Roles(named).findings[1].text.find(
                "of the modules that save most: blocks.3 (6.00 MiB), blocks.2 (5.00 MiB), "
                "blocks.1 (4.00 MiB) keeps"),
            std::string::npos)
      << Roles(named).findings[1].text;
}

TEST(RoleReport, TheAllocatorTotalGivesTheRestAndKeptGradientsAnAnswer) {
  std::vector<RoleSample> samples = {
      {3, "end of forward", 4 * kMiB, 4 * kMiB, std::nullopt, kMiB, 0, 12 * kMiB}};
  report::Report r;
  AddRoleSection(samples, {}, r);
  const report::Section& s = Roles(r);
  EXPECT_EQ(std::get<int64_t>(s.FindMetric("other_bytes")->value), 3 * kMiB);
  ASSERT_EQ(s.findings.size(), 1u);
  EXPECT_NE(s.findings[0].text.find("4.00 MiB of gradients are still live"), std::string::npos);
}

TEST(RoleReport, ModulesKeepTheTopTwentyAndOneRestRow) {
  std::vector<RoleModule> modules;
  for (int i = 0; i < 23; ++i) modules.push_back({"m" + std::to_string(i), i, i, 2 * i});
  report::Report r;
  AddRoleSection({{0, "end of step", 1, 0, 0, std::nullopt, std::nullopt, std::nullopt}}, modules,
                 r);
  const report::Table* t = Roles(r).FindTable("role_modules");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), 21u);
  EXPECT_EQ(std::get<std::string>(t->rows[0][0]), "m22");
  EXPECT_EQ(std::get<std::string>(t->rows[20][0]), "(3 more modules)");
  EXPECT_EQ(std::get<int64_t>(t->rows[20][4]), (0 + 1 + 2) * 4);
}

TEST(RoleReport, Fp32WeightsUnderAutocastAreAnAnswer) {
  const std::vector<RoleSample> samples = {
      {0, "end of step", 8 * kMiB, 0, std::nullopt, std::nullopt, std::nullopt, std::nullopt}};
  report::Report r;
  AddRoleSection(samples, {}, r, {.autocast_dtype = "bfloat16", .fp32_weight_bytes = 8 * kMiB});
  ASSERT_EQ(Roles(r).findings.size(), 1u);
  EXPECT_NE(Roles(r).findings[0].text.find("autocast to bfloat16 while 8.00 MiB of the weights are "
                                           "float32"),
            std::string::npos)
      << Roles(r).findings[0].text;
  EXPECT_NE(Roles(r).findings[0].text.find("would hold 4.00 MiB"), std::string::npos);
  report::Report none;
  AddRoleSection(samples, {}, none);
  EXPECT_TRUE(Roles(none).findings.empty());
}

}  // namespace
}  // namespace trainprof::torchlib
