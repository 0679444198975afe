// A long table's rows kept as bytes instead of Values: a tenth of the memory, given back a block
// at a time through the table's RowSource when its CSV (or any ForEachRowBlock reader) asks. For
// the csv-only tables of a many-rank report, built whole and then held until the report is
// written.
//
//   t.KeepInCsvOnly();
//   PackRows(t);  // t.rows is empty now; t.ForEachRowBlock gives the same rows back
#pragma once

#include "report/report.h"

namespace trainprof::report {

// Moves `t.rows` into a packed RowSource (t.source), in blocks of kPackedBlockRows rows. Only
// for a csv_only table without a source; anything else is left as it is.
void PackRows(Table& t);

inline constexpr size_t kPackedBlockRows = 4096;

}  // namespace trainprof::report
