#include "operators/module_table.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace trainprof::torchlib {
namespace {

ModuleInfo Module(std::string name, std::string type, int depth, int64_t params) {
  ModuleInfo m;
  m.name = std::move(name);
  m.type = std::move(type);
  m.depth = depth;
  m.index = 1;
  m.params = m.trainable = params;
  return m;
}

// A GPT whose blocks sit two levels down: at depth 1 the table would leave the blocks'
// parameters in no row. Issue 69: a row says what the limit hides, so every parameter is shown.
TEST(ModuleTable, RowsBelowTheDepthLimitAreSummedNotLost) {
  ModelSummary s;
  s.model_type = "GPT";
  s.modules = {Module("", "GPT", 0, 0),
               Module("wte", "Embedding", 1, 1000),
               Module("blocks", "ModuleList", 1, 0),
               Module("blocks.0", "Block", 2, 0),
               Module("blocks.0.mlp", "Linear", 3, 400),
               Module("blocks.1", "Block", 2, 0),
               Module("blocks.1.mlp", "Linear", 3, 600)};
  FinishTotals(s);
  ASSERT_EQ(s.total_params, 2000);
  report::Report r;
  AddModelSummarySection(s, 1, r);
  const report::Table* t = r.FindSection("model_summary")->FindTable("model_summary");
  ASSERT_NE(t, nullptr);
  const int params = t->ColumnIndex("params"), name = t->ColumnIndex("name");
  int64_t shown = 0;
  bool hidden_row = false;
  for (const auto& row : t->rows) {
    if (const auto* p = std::get_if<int64_t>(&row[params])) shown += *p;
    if (std::get<std::string>(row[name]) == "blocks.*") {
      hidden_row = true;
      EXPECT_EQ(std::get<int64_t>(row[params]), 1000);
      EXPECT_NE(std::get<std::string>(row[0]).find("… 4 more modules"), std::string::npos);
    }
  }
  EXPECT_TRUE(hidden_row);
  EXPECT_EQ(shown, s.total_params);
}

}  // namespace
}  // namespace trainprof::torchlib
