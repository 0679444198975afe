// The Report: one value holding everything a user sees, built by collectors and read by every
// renderer (terminal, CSV, JSON). Renderers never compute metrics; collectors never format.
//
//   report::Report r;
//   report::Section& s = r.AddSection("time", "Time report");
//   report::Table& t = s.AddTable("time_report", "Time per action",
//       {{"action", "Action", Unit::kText}, {"total_s", "Total", Unit::kSeconds}});
//   t.rows.push_back({std::string("forward"), 1.25});
//   report::RenderTerminal(r, std::cout);
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/diagnostics.h"

namespace trainprof::report {

inline constexpr int kSchemaVersion = 2;  // report/json.h says what each version changed

// How a value is shown. Values are stored in base units: seconds, bytes, percent (0-100).
enum class Unit {
  kText,
  kCount,      // integer count, shown with thousands separators
  kNumber,     // plain number
  kSeconds,    // duration, shown in ns/µs/ms/s/min as fits
  kBytes,      // shown in B/KiB/MiB/GiB
  kPercent,    // 0-100
  kPerSecond,  // a rate; the column title names what is counted
  kBool,
  kBytesPerSecond,  // shown in B/s, KiB/s, MiB/s, ...
  kWatts,
  kJoules,  // shown in J, kJ, MJ
  kCelsius,
  kMegahertz,
  kByRow,          // a column whose unit differs per row: Table::row_units says which
  kPercentPoints,  // a difference of two percentages, shown signed: "+33.3 pp"
  kId,             // an integer that names something (a PID): no thousands separators
};
const char* UnitName(Unit unit);  // "text", "count", "seconds", ... (used in report.json)

using Value = std::variant<std::monostate, int64_t, double, std::string, bool>;

// A row of `cells`, each made in place. rows.push_back(MakeRow(a, b)) copies a text cell once;
// rows.push_back({a, b}) copies it twice (into the initializer list, then out of it) and
// allocates twice. The per-rank tables of many ranks make millions of rows (csv_batch.h).
template <typename... T>
void AppendCells(std::vector<Value>& row, T&&... cells) {
  (row.emplace_back(std::forward<T>(cells)), ...);
}
template <typename... T>
std::vector<Value> MakeRow(T&&... cells) {
  std::vector<Value> row;
  row.reserve(sizeof...(T));
  AppendCells(row, std::forward<T>(cells)...);
  return row;
}

// The value as a number: int64 and double as they are, anything else (empty, text) NaN.
double AsNumber(const Value& v);

struct Column {
  std::string key;    // machine name: CSV header and JSON key ("mean_s")
  std::string title;  // human name for the terminal ("Mean")
  Unit unit = Unit::kText;
  bool in_terminal = true;  // false: only in CSV and JSON (machine keys, units of kByRow rows)
  // A change of the row's quantity (compare's deltas): a percent row shows percentage points.
  bool change = false;
  // The terminal cuts longer text to this many bytes, keeping the part that tells it apart from
  // the column's other rows (base::EllipsizeApart); 0: never. The value
  // itself stays whole: report.json, the CSV and report.html have every kernel's full name.
  size_t terminal_width = 0;
};

enum class TableKind {
  kTable,   // printed in the terminal
  kSeries,  // a time series: not printed row by row in the terminal, written to CSV and JSON
  kDetail,  // too long for the terminal (e.g. one row per CPU core): only in CSV and JSON
};

// How report.html draws a table, chosen by the code that builds it. Plain data, written to
// report.json and read back with the table, so a report rendered from report.json (a pooled
// `profile --repeat` report, the sections `trainprof run` takes from a session) keeps its charts.
//
//   t.charts.push_back({.kind = ChartKind::kBars, .title = "Total time per action",
//                       .label = "action", .values = {"total_s"}, .limit = 15});
enum class ChartKind {
  kNone,
  kBars,   // one bar per row: `label` column, `values` columns stacked
  kLines,  // a line per `values` column against the `label` column (x)
};

struct ChartHint {
  ChartKind kind = ChartKind::kNone;
  // The chart's id in report.html; the table's when empty. Line hints of one section with the
  // same id are one chart: the later ones add their lines to the first one's (two stages'
  // throughput in one chart).
  std::string id;
  std::string title;                // the chart's title; the table's when empty
  std::string label;                // column key: bar labels, or the x axis
  std::vector<std::string> values;  // column keys: stacked segments, or one line each
  // Legend names, parallel to `values`; the column titles when empty.
  std::vector<std::string> names;
  // Bars: `limit` rows, the largest by the magnitude of their sum; 0: every row, in table order.
  size_t limit = 20;
  bool horizontal = true;  // bars: horizontal, or vertical (one per step)
  // Bars: the label as a pattern of column keys in braces ("rank {rank} stream {stream}"),
  // instead of the `label` column's text.
  std::string label_format;
  std::string label_trim;  // bars: a prefix cut from label texts ("ProfilerStep": "#12")
  // Lines: one set of lines per distinct value of this column, named "<value> <name>".
  std::string split_by;
  bool mark_peak = false;  // lines: a dot at the highest value
  std::string y_suffix;    // lines: after each y tick ("samples/s")
  // Rows whose `highlight_key` cell equals `highlight_value` are drawn in red (a crossed bound,
  // the straggler), in the chart and in the table.
  std::string highlight_key;
  Value highlight_value;
};

// Rows made when a table is written, one part at a time (one part per rank), instead of held in
// Table::rows: a per-rank table of many ranks goes to its CSV without all its rows in memory at
// once. A source reads what its report was built from, so that must outlive the writing.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual size_t parts() const = 0;
  // Appends part `part`'s rows (each columns.size() values) to `rows`, between BeginPart(part)
  // and EndPart(part).
  virtual void AppendRows(size_t part, std::vector<std::vector<Value>>& rows) const = 0;
  // What a part needs (a rank's detail read back from a scratch file) is made ready here and let
  // go at EndPart; calls nest, so a batch's tables share one readying per part.
  virtual void BeginPart(size_t /*part*/) const {}
  virtual void EndPart(size_t /*part*/) const {}
  // The CSV writer has every row of the part in its file: what the part was read back from may
  // go once it is let go, where the source's owner allows it (DetailStore::RetireOnceWritten).
  virtual void PartWritten(size_t /*part*/) const {}
  // Sources with the same key (not null) have the same parts: the CSV writer writes their tables
  // together, part by part, each part made ready once for all of them.
  virtual const void* batch() const { return nullptr; }
};

// Rows of a table the terminal shows; a longer one is a detail table (Table::MarkLong).
inline constexpr size_t kMaxTerminalRows = 30;

struct Table {
  std::string id;     // file name stem of its CSV ("time_report" -> time_report.csv)
  std::string title;  // heading in the terminal
  TableKind kind = TableKind::kTable;
  std::vector<Column> columns;
  std::vector<std::vector<Value>> rows;    // each row has columns.size() values
  std::vector<std::vector<Value>> footer;  // e.g. the Total row; rendered after a rule
  std::vector<std::string> notes;          // one line each, printed under the table
  // Only for tables with kByRow columns: the unit of each row (parallel to rows). Such a table
  // should also carry the unit as a text column so CSV and JSON readers see it.
  std::vector<Unit> row_units;
  std::vector<ChartHint> charts;  // report.html's charts of this table; none by default
  // Rows only in the table's CSV (<id>.csv): report.json lists the table's columns and names
  // the file ("rows_in"), report.html names it too, neither holds a row or draws a chart. For
  // per-rank detail of many ranks, so report.json stays a cross-rank summary a person can open.
  bool csv_only = false;
  // Where the rows come from when they are not held in `rows` (csv_only tables only; null:
  // `rows`). The CSV writer asks it part by part; ForEachRowBlock reads either.
  std::shared_ptr<const RowSource> source;

  // Calls `f` with blocks of rows, in order: `rows` at once, or each part of `source`.
  template <typename F>
  void ForEachRowBlock(F&& f) const {
    if (source == nullptr) return f(rows);
    std::vector<std::vector<Value>> block;
    for (size_t p = 0; p < source->parts(); ++p) {
      block.clear();
      source->BeginPart(p);
      source->AppendRows(p, block);
      source->EndPart(p);
      f(static_cast<const std::vector<std::vector<Value>>&>(block));
    }
  }

  // A table longer than a terminal screen (kMaxTerminalRows) is kept for the CSV, report.json
  // and report.html only: a detail table.
  void MarkLong() {
    if (rows.size() > kMaxTerminalRows) kind = TableKind::kDetail;
  }
  // Its rows in its CSV only (report.json and report.html name the file), shown as a detail
  // table.
  void KeepInCsvOnly() {
    csv_only = true;
    if (kind == TableKind::kTable) kind = TableKind::kDetail;
  }

  // The index of the column `key`, or -1.
  int ColumnIndex(std::string_view key) const;
  // The unit a cell of column `c` in row `row` is shown in: kByRow resolved through row_units,
  // and a percentage in a change column shown as percentage points.
  Unit CellUnit(size_t c, size_t row) const;
};

// A headline figure ("training throughput: 412.3 batches/s").
struct Metric {
  std::string key;
  std::string title;
  Value value;
  Unit unit = Unit::kNumber;
  std::string suffix;  // printed after the value in the terminal, e.g. "batches/s"
};

enum class Severity { kInfo, kWarning, kError };
const char* SeverityName(Severity s);  // "info", "warning", "error"

struct Finding {
  Severity severity = Severity::kInfo;
  std::string text;
  // Set by analyze's rules (analysis/findings.h): the rule that made it ("dataloader"), the ranks
  // it is about, and the step time it could save, in seconds per step (NaN: no estimate).
  // report.json writes them when `rule` is set, so a reader (an agent through `trainprof mcp`)
  // can find the evidence behind the text.
  std::string rule;
  std::vector<int64_t> ranks;
  double saves_s = std::numeric_limits<double>::quiet_NaN();
};

struct Section {
  std::string id;
  std::string title;
  std::vector<Metric> metrics;
  std::deque<Table> tables;  // deque: references from AddTable() stay valid
  std::vector<Finding> findings;
  std::vector<std::string> notes;
  // Set when the section has nothing to show (a GPU view of a CPU-only trace): why, in one line.
  // The terminal and report.html print the title and this line only; report.json keeps it all.
  std::string no_data;

  Table& AddTable(std::string table_id, std::string table_title, std::vector<Column> cols,
                  TableKind kind = TableKind::kTable);
  void AddMetric(std::string key, std::string title, Value v, Unit unit, std::string suffix = "");
  // nullptr when there is none of that id / key.
  const Table* FindTable(std::string_view table_id) const;
  const Metric* FindMetric(std::string_view key) const;
};

// Something about the input or the recording the user should know (dropped events, ...): the
// one record type of base/diagnostics.h, named by its DiagnosticId.
using Diagnostic = base::Diagnostic;
using base::DiagnosticId;

// base::DataSeverity as a report severity: info, data loss -> warning, error (report.json's,
// the terminal's and report.html's spelling of a diagnostic's severity).
Severity SeverityFor(base::DataSeverity s);

struct MetaEntry {
  std::string key;
  Value value;
  bool in_terminal = true;  // false: only in report.json (pid, clock source, ...)
};

struct Report {
  int schema_version = kSchemaVersion;
  std::string kind = "profile";  // "profile" or "analyze"
  std::string title;             // e.g. "trainprof profile: fashion-mnist"
  // Flat key/value metadata: "trainprof_version", "created_utc", "host.name", "run_dir", ...
  // Dotted keys are nested in report.json ("host": {"name": ...}).
  std::vector<MetaEntry> meta;
  // The configuration as dotted keys ("time.verbose" -> false); nested again in report.json.
  std::vector<std::pair<std::string, Value>> config;
  std::deque<Section> sections;  // deque: references from AddSection() stay valid
  std::vector<Diagnostic> diagnostics;

  Section& AddSection(std::string id, std::string title);
  const Section* FindSection(const std::string& id) const;
  // Table `table_id` of section `section_id`; nullptr when either is missing.
  const Table* FindTable(const std::string& section_id, std::string_view table_id) const;
  void AddMeta(std::string key, Value value, bool in_terminal = true);
  // The value of meta entry `key`, or nullptr.
  const Value* FindMeta(std::string_view key) const;
};

// How another report's sections join a report (AdoptSections): the analysis of traces a run
// wrote, in `trainprof run`'s report or a torch Session's.
struct AdoptRule {
  std::vector<std::string> skip;  // section ids left out
  std::string id_prefix;          // put before an id the report has already ("trace_")
  std::string title_prefix;       // put before every title
  bool diagnostics = true;        // `from`'s diagnostics come too
};

// Appends `from`'s sections (and diagnostics) to `into`, in order, as `rule` says.
void AdoptSections(Report& into, Report from, const AdoptRule& rule);

}  // namespace trainprof::report
