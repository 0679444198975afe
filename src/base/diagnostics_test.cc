#include "base/diagnostics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace trainprof::base {
namespace {

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

TEST(Diagnostics, NamesAreUniqueAndLookupsWork) {
  std::set<std::string_view> names;
  for (const DiagnosticKind& k : DiagnosticKinds()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_FALSE(k.meaning.empty()) << k.name;
  }
  EXPECT_EQ(SeverityOf("truncated"), DataSeverity::kError);
  EXPECT_EQ(SeverityOf("unknown_category"), DataSeverity::kInfo);
  EXPECT_EQ(FindDiagnosticKind("no_such_thing"), nullptr);
  EXPECT_EQ(SeverityOf("no_such_thing"), DataSeverity::kDataLoss);
  EXPECT_STREQ(DataSeverityName(DataSeverity::kDataLoss), "data loss");
}

}  // namespace
}  // namespace trainprof::base
