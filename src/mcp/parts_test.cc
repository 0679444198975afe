// The server's parts: argument checks, roots, the run cache, the rules' docs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "analysis/finding_rules.h"
#include "analysis/rank_parts.h"
#include "analysis/sections/sections.h"
#include "mcp/arguments.h"
#include "mcp/roots.h"
#include "mcp/run_cache.h"
#include "util/golden.h"

namespace trainprof::mcp {
namespace {

namespace fs = std::filesystem;

const std::string kSmallGpuDir = std::string(TRAINPROF_SOURCE_DIR) + "/tests/data/traces/small_gpu";

Json Schema() {
  return ObjectSchema({{"path", PathsSchema("p")},
                       {"limit", IntegerSchema("l", 1, 10)},
                       {"mode", EnumSchema("m", {"a", "b"})}},
                      {"path"});
}

std::string Error(const Json& args) { return CheckArguments(Schema(), args).message(); }

TEST(McpArguments, SayWhatIsWrongWithWhichArgument) {
  EXPECT_TRUE(CheckArguments(Schema(), {{"path", "x"}, {"limit", 3}}).ok());
  EXPECT_TRUE(CheckArguments(Schema(), {{"path", Json::array({"x", "y"})}}).ok());
  EXPECT_EQ(Error({{"limit", 3}}), "missing argument 'path'");
  EXPECT_EQ(Error({{"path", "x"}, {"limimt", 3}}).substr(0, 47),
            "unknown argument 'limimt' (did you mean 'limit'");
  EXPECT_EQ(Error({{"path", "x"}, {"limit", 11}}), "limit: 11 is above the maximum 10");
  EXPECT_EQ(Error({{"path", "x"}, {"limit", 2.5}}), "limit: expected an integer, got 2.5");
  EXPECT_EQ(Error({{"path", "x"}, {"mode", "c"}}), R"(mode: "c" is not one of "a", "b")");
  EXPECT_EQ(Error({{"path", 3}}), "path: expected string or array, got 3");
  EXPECT_EQ(Error({{"path", Json::array({"x", 1})}}),
            "path: expected string or array, got [\"x\",1]");
}

TEST(McpRoots, ReadOnlyUnderTheRootsWithLinksFollowed) {
  const std::string root = testutil::FreshTempDir();
  fs::create_directories(root + "/in");
  std::ofstream(root + "/in/a.json") << "{}";
  std::ofstream(root + "/outside.json") << "{}";
  fs::create_symlink(root + "/outside.json", root + "/in/link.json");
  Roots roots;
  roots.Set({root + "/in"}, "the client's roots");
  EXPECT_EQ(*roots.Resolve("a.json"), fs::canonical(root + "/in/a.json").string());
  Status out = roots.Resolve("../outside.json").status();
  EXPECT_EQ(out.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(out.message().find("outside the client's roots"), std::string::npos);
  EXPECT_EQ(roots.Resolve("link.json").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(roots.Resolve("none.json").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(PathOfFileUri("file:///a%20b/c"), "/a b/c");
  EXPECT_EQ(PathOfFileUri("file://localhost/x"), "/x");
  EXPECT_EQ(PathOfFileUri("https://example.com/x"), "");
  EXPECT_EQ(PathOfFileUri(FileUri("/r/ü x")), "/r/ü x");
  EXPECT_EQ(DirsOfRoots({{"roots", {{{"uri", "file:///data"}}, {{"uri", "s3://b"}}}}}),
            std::vector<std::string>{"/data"});
}

TEST(McpRunCache, ReadsARunOnceAndAgainWhenItsFileChanges) {
  const std::string root = testutil::FreshTempDir();
  fs::copy_file(kSmallGpuDir + "/rank0.json", root + "/rank0.json");
  Roots roots;
  roots.Set({root}, "--root");
  RunCache cache;
  ToolContext ctx;
  ctx.roots = &roots;
  ctx.cache = &cache;
  ASSERT_TRUE(cache.Get({{"path", "rank0.json"}}, ctx).ok());
  ASSERT_TRUE(cache.Get({{"path", root + "/rank0.json"}}, ctx).ok());
  ASSERT_TRUE(cache.Get({{"path", "rank0.json"}, {"table", "gpu/gpu_summary"}}, ctx).ok());
  EXPECT_EQ(cache.analyses(), 1);  // a tool's own arguments are not another question
  ASSERT_TRUE(cache.Get({{"path", "rank0.json"}, {"steps", "all"}}, ctx).ok());
  EXPECT_EQ(cache.analyses(), 2);  // another question, another analysis
  fs::last_write_time(root + "/rank0.json",
                      fs::last_write_time(root + "/rank0.json") + std::chrono::seconds(5));
  ASSERT_TRUE(cache.Get({{"path", "rank0.json"}}, ctx).ok());
  EXPECT_EQ(cache.analyses(), 3);
  EXPECT_EQ(cache.Get({{"path", "rank0.json"}, {"top_kernels", 0}}, ctx).status().code(),
            StatusCode::kPermissionDenied);  // an option's own check, said as a bad call
}

TEST(McpRunCache, ACancelledReadStops) {
  Roots roots;
  roots.Set({kSmallGpuDir}, "--root");
  RunCache cache;
  ToolContext ctx;
  ctx.roots = &roots;
  ctx.cache = &cache;
  ctx.cancelled = [] { return true; };
  EXPECT_EQ(cache.Get({{"path", "rank0.json"}}, ctx).status().code(), StatusCode::kCancelled);
}

// Every key a candidate may name (RuleKey, checked when it compiles) has its rule, in order.
TEST(FindingRules, EachKeyHasItsRule) {
  std::vector<std::string_view> keys;
  for (const analysis::FindingRule& r : analysis::FindingRules()) keys.push_back(r.key.key());
  EXPECT_EQ(keys, std::vector<std::string_view>(std::begin(analysis::kFindingRuleKeys),
                                                std::end(analysis::kFindingRuleKeys)));
}

TEST(FindingRules, EachRuleAndSectionHasItsDocHeading) {
  std::ifstream doc(std::string(TRAINPROF_SOURCE_DIR) + "/docs/trace-analysis.md");
  const std::string text((std::istreambuf_iterator<char>(doc)), {});
  for (const analysis::FindingRule& r : analysis::FindingRules()) {
    const std::string d = analysis::DocOfSection(r.section);
    ASSERT_FALSE(d.empty()) << r.key.key();
    const std::string heading = d.substr(d.find('"') + 1, d.rfind('"') - d.find('"') - 1);
    EXPECT_NE(text.find("## " + heading + "\n"), std::string::npos) << heading;
    for (const analysis::EvidenceTable& e : r.evidence)
      EXPECT_FALSE(analysis::DocOfSection(e.table.substr(0, e.table.find('/'))).empty()) << e.table;
  }
}

}  // namespace
}  // namespace trainprof::mcp
