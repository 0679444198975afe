// A csv-only table read back from report.json reads its rows from the CSV written beside it, a
// block at a time, typed as they were written, without the footer the CSV appends.
#include "report/csv_file_rows.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report/csv.h"
#include "report/json.h"
#include "report/json_reader.h"
#include "report/packed_rows.h"
#include "util/golden.h"

namespace trainprof::report {
namespace {

// Text that needs quoting, counts, fractions, flags and empty cells.
Table Awkward(size_t n) {
  Table t;
  t.id = "awkward";
  t.columns = {{"name", "Name", Unit::kText},      {"count", "Count", Unit::kCount},
               {"time_s", "Time", Unit::kSeconds}, {"ok", "OK", Unit::kBool},
               {"rank", "Rank", Unit::kText},      {"gap", "Gap", Unit::kNumber}};
  for (size_t i = 0; i < n; ++i) {
    const std::string name = i % 4 == 0   ? "plain"
                             : i % 4 == 1 ? "a, \"quoted\" name"
                             : i % 4 == 2 ? "two\nlines"
                                          : "x";
    t.rows.push_back({name, static_cast<int64_t>(i) - 7, 0.125 * static_cast<double>(i) + 0.5,
                      i % 2 == 0, std::to_string(i), Value{}});
  }
  t.footer.push_back({std::string("Total"), int64_t{42}, 1.5, true, std::string(""), Value{}});
  return t;
}

std::string CsvTextOf(const Table& t) {
  std::ostringstream out;
  RenderCsvTable(t, out);
  return out.str();
}

std::string WriteCsvText(const std::string& name, const std::string& text) {
  const std::string path = testutil::FreshTempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<std::vector<Value>> RowsReadBack(const Table& t) {
  std::vector<std::vector<Value>> all;
  t.ForEachRowBlock([&](const std::vector<std::vector<Value>>& block) {
    all.insert(all.end(), block.begin(), block.end());
  });
  return all;
}

TEST(CsvFileRows, GiveBackTheRowsTypedAsWrittenInBlocksWithoutTheFooter) {
  const Table held = Awkward(2 * kPackedBlockRows + 3);
  Table back = held;
  back.rows.clear();
  back.KeepInCsvOnly();
  back.source = CsvFileRows(back, WriteCsvText("awkward.csv", CsvTextOf(held)));
  ASSERT_NE(back.source, nullptr);
  EXPECT_EQ(back.source->parts(), 3u);
  const auto rows = RowsReadBack(back);
  ASSERT_EQ(rows.size(), held.rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), held.columns.size());
    EXPECT_EQ(rows[i][0], held.rows[i][0]) << "row " << i;  // text, quoted or not
    EXPECT_EQ(rows[i][1], held.rows[i][1]);                 // int64
    EXPECT_DOUBLE_EQ(AsNumber(rows[i][2]), AsNumber(held.rows[i][2]));
    EXPECT_EQ(rows[i][3], held.rows[i][3]);  // bool
    EXPECT_EQ(rows[i][4], held.rows[i][4]) << "a number in a text column stays text";
    EXPECT_EQ(rows[i][5], Value{});
  }
  // Written again, the same file: the footer is the table's own, once.
  EXPECT_EQ(CsvTextOf(back), CsvTextOf(held));
}

TEST(CsvFileRows, AFileThatIsNotTheTablesGivesNoRows) {
  Table t = Awkward(3);
  EXPECT_EQ(CsvFileRows(t, testutil::FreshTempDir() + "/missing.csv"), nullptr);
  EXPECT_EQ(CsvFileRows(t, WriteCsvText("other.csv", "name,count\nx,1\n")), nullptr);
  EXPECT_EQ(CsvFileRows(t, WriteCsvText("empty.csv", "")), nullptr);
  // Fewer records than the footer it should end with: no rows rather than wrong ones.
  Table header_only = t;
  const std::string header = "name,count,time_s,ok,rank,gap\n";
  auto short_of_footer = CsvFileRows(header_only, WriteCsvText("header.csv", header));
  ASSERT_NE(short_of_footer, nullptr);
  EXPECT_EQ(short_of_footer->parts(), 0u);
  header_only.footer.clear();
  auto none = CsvFileRows(header_only, WriteCsvText("header.csv", header));
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->parts(), 0u);
}

// report.json names the file; reading the report back gives the table its rows again, so the
// run history and `compare` see what the run saw.
TEST(CsvFileRows, AReportReadBackReadsItsCsvOnlyTables) {
  Report r;
  r.kind = "analyze";
  Section& s = r.AddSection("overview", "Overview");
  Table& t = s.tables.emplace_back(Awkward(10));
  const std::vector<std::vector<Value>> held = t.rows;
  t.KeepInCsvOnly();
  PackRows(t);
  const std::string dir = testutil::FreshTempDir();
  ASSERT_TRUE(WriteCsvFiles(r, dir, nullptr).ok());
  std::ofstream(dir + "/report.json") << RenderJsonString(r);
  auto back = ReadReportJson(dir + "/report.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const Table* bt = back->FindTable("overview", "awkward");
  ASSERT_NE(bt, nullptr);
  EXPECT_TRUE(bt->csv_only);
  EXPECT_TRUE(bt->rows.empty());
  const auto rows = RowsReadBack(*bt);
  ASSERT_EQ(rows.size(), held.size());
  EXPECT_EQ(rows[9][0], held[9][0]);
  EXPECT_EQ(bt->footer.size(), 1u);
  // Its CSV written again from the read-back report is the one the run wrote.
  const std::string again = testutil::FreshTempDir();
  ASSERT_TRUE(WriteCsvFiles(*back, again, nullptr).ok());
  std::ifstream a(dir + "/awkward.csv"), b(again + "/awkward.csv");
  std::stringstream sa, sb;
  sa << a.rdbuf(), sb << b.rdbuf();
  EXPECT_EQ(sb.str(), sa.str());
}

}  // namespace
}  // namespace trainprof::report
