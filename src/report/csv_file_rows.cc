#include "report/csv_file_rows.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "report/packed_rows.h"

namespace trainprof::report {
namespace {

// Splits `text` (whole records, as the CSV writer quotes them) into rows of fields, calling
// `row` with each record's fields.
template <typename F>
void ForEachRecord(std::string_view text, F&& row) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') {
        fields.back() += c;
      } else if (i + 1 < text.size() && text[i + 1] == '"') {
        fields.back() += '"', ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      row(fields);
      fields.assign(1, std::string());
    } else {
      fields.back() += c;
    }
  }
  if (fields.size() > 1 || !fields[0].empty()) row(fields);  // a last record without '\n'
}

template <typename T>
bool ParseWhole(const std::string& s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// A cell as the CSV writer's AppendMachine wrote its value (see the header).
Value CellValue(std::string&& s, Unit unit) {
  if (s.empty()) return Value{};
  if (unit == Unit::kText) return std::move(s);
  if (s == "true" || s == "false") return s == "true";
  if (int64_t i = 0; ParseWhole(s, i)) return i;
  if (double d = 0; ParseWhole(s, d)) return d;
  return std::move(s);
}

// Where the records of a CSV file start: the byte offset after each '\n' outside quotes.
struct RecordStarts {
  std::vector<uint64_t> block_starts;  // every kPackedBlockRows-th data record's offset
  uint64_t data_end = 0;               // the end of the last data record (footer rows follow)
  size_t data_rows = 0;
};

// Calls `f(offset)` after each record's '\n' outside quotes, reading the file `chunk` bytes at a
// time, until `f` returns false; at the end of the file, once more with its size. False when the
// file cannot be read.
template <typename F>
bool ForEachRecordEnd(const std::string& path, size_t chunk, F&& f) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bool quoted = false;
  uint64_t offset = 0;
  std::vector<char> buf(chunk);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    const auto n = static_cast<size_t>(in.gcount());
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '"') quoted = !quoted;  // an escaped quote toggles twice
      if (buf[i] == '\n' && !quoted && !f(offset + i + 1)) return true;
    }
    offset += n;
  }
  f(offset);  // the end of a last record without '\n'
  return true;
}

// The CSV's header record, or nothing when the file cannot be read or has no whole line.
std::optional<std::vector<std::string>> ReadHeader(const std::string& path) {
  uint64_t end = 0;
  // A header is a line: a small first read, not a scan's block, for every table read back.
  const bool read = ForEachRecordEnd(path, size_t{4} << 10, [&](uint64_t at) {
    end = at;
    return false;
  });
  if (!read || end == 0) return std::nullopt;
  std::string text(end, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(text.data(), static_cast<std::streamsize>(end));
  std::vector<std::string> header;
  ForEachRecord(text, [&](std::vector<std::string>& f) { header = std::move(f); });
  return header;
}

bool ScanRecords(const std::string& path, size_t footer_rows, RecordStarts& out) {
  std::vector<uint64_t> starts;  // every record's start but the header's (0), then the end
  const bool read = ForEachRecordEnd(path, size_t{1} << 20, [&](uint64_t at) {
    if (starts.empty() || starts.back() != at) starts.push_back(at);
    return true;
  });
  if (!read || starts.empty()) return false;
  const size_t records = starts.size() - 1;  // data and footer records after the header
  if (records < footer_rows) return false;
  out.data_rows = records - footer_rows;
  out.data_end = starts[out.data_rows];
  for (size_t r = 0; r < out.data_rows; r += kPackedBlockRows)
    out.block_starts.push_back(starts[r]);
  return true;
}

// The file is scanned for its blocks when first asked, so reading a report back costs nothing
// for the tables nobody reads.
class CsvFileSource : public RowSource {
 public:
  CsvFileSource(std::string path, std::vector<Unit> units, size_t footer_rows)
      : path_(std::move(path)), units_(std::move(units)), footer_rows_(footer_rows) {}

  size_t parts() const override { return Starts().block_starts.size(); }

  // The file is read again here; should it have changed since it was scanned, the block gives
  // what it now holds in that byte range.
  void AppendRows(size_t part, std::vector<std::vector<Value>>& rows) const override {
    const RecordStarts& starts = Starts();
    const uint64_t begin = starts.block_starts[part];
    const uint64_t end = part + 1 < parts() ? starts.block_starts[part + 1] : starts.data_end;
    std::string text(end - begin, '\0');
    std::ifstream in(path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(begin));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    ForEachRecord(text, [&](std::vector<std::string>& fields) {
      std::vector<Value>& row = rows.emplace_back();
      row.reserve(units_.size());
      for (size_t c = 0; c < units_.size(); ++c)
        row.push_back(c < fields.size() ? CellValue(std::move(fields[c]), units_[c]) : Value{});
    });
  }

 private:
  const RecordStarts& Starts() const {
    std::call_once(scanned_, [&] {
      if (!ScanRecords(path_, footer_rows_, starts_)) starts_ = RecordStarts{};
    });
    return starts_;
  }

  std::string path_;
  std::vector<Unit> units_;
  size_t footer_rows_;
  mutable std::once_flag scanned_;
  mutable RecordStarts starts_;
};

}  // namespace

std::shared_ptr<const RowSource> CsvFileRows(const Table& t, const std::string& path) {
  std::vector<Unit> units;
  std::vector<std::string> keys;
  for (const Column& c : t.columns) units.push_back(c.unit), keys.push_back(c.key);
  if (ReadHeader(path) != keys) return nullptr;
  return std::make_shared<CsvFileSource>(path, std::move(units), t.footer.size());
}

void AttachCsvRows(Report& r, const std::string& dir) {
  for (Section& s : r.sections) {
    for (Table& t : s.tables) {
      if (!t.csv_only || t.source != nullptr || !t.rows.empty()) continue;
      t.source = CsvFileRows(t, (std::filesystem::path(dir) / (t.id + ".csv")).string());
    }
  }
}

}  // namespace trainprof::report
