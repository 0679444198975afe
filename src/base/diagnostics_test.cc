#include "base/diagnostics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace trainprof::base {
namespace {

// A diagnostic is named by its id, or by a string literal looked up while compiling (an
// unregistered literal is a compile error, which a test cannot show); a string made at run
// time does not make one.
static_assert(!std::is_constructible_v<Diagnostic, std::string, int64_t, std::string>);
static_assert(!std::is_constructible_v<Diagnostic, std::string_view, int64_t, std::string>);
static_assert(std::is_constructible_v<Diagnostic, DiagnosticId, int64_t, std::string>);
static_assert(DiagnosticName("truncated").id() == DiagnosticId::kTruncated);
static_assert(DiagnosticName("unrecognized_diagnostic").id() == DiagnosticId::kUnrecognized);

// docs/trace-analysis.md's table of diagnostics lists exactly the registry, in its order, with
// the same severities and meanings.
TEST(Diagnostics, DocsTableMatchesTheRegistry) {
  std::ifstream in(std::string(TRAINPROF_SOURCE_DIR) + "/docs/trace-analysis.md");
  ASSERT_TRUE(in.good());
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("| `", 0) == 0 && line.find("` | ") != std::string::npos &&
        (line.find(" | info | ") != std::string::npos ||
         line.find(" | data loss | ") != std::string::npos ||
         line.find(" | error | ") != std::string::npos))
      rows.push_back(line);
  std::vector<std::string> want;
  for (const DiagnosticKind& k : DiagnosticKinds())
    want.push_back("| `" + std::string(k.name) + "` | " + DataSeverityName(k.severity) + " | " +
                   std::string(k.meaning) + " |");
  EXPECT_EQ(rows, want);
}

TEST(Diagnostics, NamesAreUniqueAndIdsIndexTheList) {
  std::set<std::string_view> names;
  size_t i = 0;
  for (const DiagnosticKind& k : DiagnosticKinds()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_FALSE(k.meaning.empty()) << k.name;
    EXPECT_EQ(static_cast<size_t>(k.id), i++) << k.name;
    EXPECT_EQ(&KindOf(k.id), &k);
    EXPECT_EQ(FindDiagnosticId(k.name), k.id);
  }
  EXPECT_EQ(FindDiagnosticId("no_such_thing"), std::nullopt);
  EXPECT_STREQ(DataSeverityName(DataSeverity::kDataLoss), "data loss");
}

TEST(Diagnostics, TheRecordTakesNameSeverityAndMeaningFromTheRegistry) {
  const Diagnostic d{DiagnosticId::kTruncated, 1, "a.json: cut at byte 9"};
  EXPECT_EQ(d.name(), "truncated");
  EXPECT_EQ(d.severity(), DataSeverity::kError);
  EXPECT_EQ(d.meaning().substr(0, 34), "The file ends inside its events: t");
  EXPECT_EQ(Diagnostic({DiagnosticId::kUnknownCategory, 3, ""}).severity(), DataSeverity::kInfo);
  EXPECT_EQ(Diagnostic({DiagnosticId::kCudaAllocRetries, 3, ""}).severity(),
            DataSeverity::kDataLoss);
}

TEST(Diagnostics, NamesReadBackKeepTheirKindAndUnknownOnesSaySo) {
  const Diagnostic known = DiagnosticFromName("rank_missing", 2, "rank 3: no answer");
  EXPECT_EQ(known.id, DiagnosticId::kRankMissing);
  EXPECT_EQ(known.count, 2);
  EXPECT_EQ(known.message, "rank 3: no answer");
  const Diagnostic other = DiagnosticFromName("from_a_newer_trainprof", 4, "it happened");
  EXPECT_EQ(other.id, DiagnosticId::kUnrecognized);
  EXPECT_EQ(other.name(), "unrecognized_diagnostic");
  EXPECT_EQ(other.severity(), DataSeverity::kDataLoss);
  EXPECT_EQ(other.count, 4);
  EXPECT_EQ(other.message, "from_a_newer_trainprof: it happened");
}

}  // namespace
}  // namespace trainprof::base
