// A csv-only table read back from report.json gets its rows from the CSV written beside it, so
// `trainprof compare`, `gate`, `export` and the MCP server see many ranks' per-step tables as the
// run that wrote them did (report.json names the file in "rows_in" and holds no row).
//
//   report::AttachCsvRows(report, "runs/x");  // each csv-only table reads runs/x/<id>.csv
//   t.ForEachRowBlock(...);                    // block by block, the file read a block at a time
//
// Its header is checked when attached; the file is scanned once when its rows are first asked
// for (where each block of kPackedBlockRows rows starts) and read again a block at a time, so
// its rows are never all in memory and a table nobody reads costs one line's read. Cells come back
// typed as the CSV writer wrote them: a text column as text, "true"/"false" in a flag column as a
// bool, an empty cell as an empty value, an integer as int64, any other number as a double (a
// double that was whole comes back as int64; report::AsNumber reads both alike).
#pragma once

#include <memory>
#include <string>

#include "report/report.h"

namespace trainprof::report {

// The rows of `t` as its CSV at `path` holds them, less the footer rows the writer appended after
// them (`t.footer`, which report.json keeps). Null when the file is missing or unreadable, or its
// header is not `t`'s column keys: the table then stays without rows, as before. A file with
// fewer records than the footer gives no rows.
std::shared_ptr<const RowSource> CsvFileRows(const Table& t, const std::string& path);

// Gives every csv-only table of `r` without rows a CsvFileRows source from `dir`/<id>.csv.
void AttachCsvRows(Report& r, const std::string& dir);

}  // namespace trainprof::report
