#include "report/csv.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include "base/atomic_file.h"
#include "base/parallel.h"
#include "report/csv_batch.h"
#include "report/format.h"

namespace trainprof::report {
namespace {

// Whether a field needs quotes: one pass over the bytes (find_first_of looks each byte up in the
// set with a memchr, which was most of many ranks' CSV writing).
bool NeedsQuotes(std::string_view s) {
  for (char c : s)
    if (c == ',' || c == '"' || c == '\n' || c == '\r') return true;
  return false;
}

void Field(std::string& out, std::string_view s) {
  if (!NeedsQuotes(s)) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void Row(std::ostream& out, const std::vector<std::string>& fields) {
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) line += ',';
    Field(line, fields[i]);
  }
  line += '\n';
  out << line;
}

// A value as FormatMachine writes it, appended without a string of its own.
void AppendMachine(std::string& out, const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return Field(out, *s);
  if (const auto* d = std::get_if<double>(&v)) {
    if (std::isfinite(*d)) AppendShortest(out, *d);
    return;
  }
  if (const auto* i = std::get_if<int64_t>(&v)) {
    const fmt::format_int text(*i);
    out.append(text.data(), text.size());
    return;
  }
  if (const auto* b = std::get_if<bool>(&v)) out += *b ? "true" : "false";
}

// The table's CSV, handed to `sink` a block at a time (the header, then each block of rows).
template <typename Sink>
void RenderCsv(const Table& t, Sink&& sink) {
  std::string text;
  AppendCsvHeader(text, t);
  t.ForEachRowBlock([&](const std::vector<std::vector<Value>>& rows) {
    AppendCsvRows(text, t, rows);
    if (text.size() >= kCsvFlushBytes) {
      sink(std::string_view(text));
      text.clear();
    }
  });
  AppendCsvRows(text, t, t.footer);
  sink(std::string_view(text));
}

Status WriteCsvTable(const Table& t, const std::string& path) {
  base::AtomicFile f;
  TRAINPROF_RETURN_IF_ERROR(f.Open(path));
  RenderCsv(t, [&](std::string_view text) { f.Write(text); });
  return f.Commit();
}

}  // namespace

void AppendCsvRows(std::string& out, const Table& t, const std::vector<std::vector<Value>>& rows) {
  for (const auto& r : rows) {
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (i > 0) out += ',';
      if (i < r.size()) AppendMachine(out, r[i]);
    }
    out += '\n';
  }
}

void AppendCsvHeader(std::string& out, const Table& t) {
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (i > 0) out += ',';
    Field(out, t.columns[i].key);
  }
  out += '\n';
}

void RenderCsvTable(const Table& t, std::ostream& out) {
  RenderCsv(t, [&](std::string_view text) { out << text; });
}

void RenderCsvMetrics(const Section& s, std::ostream& out) {
  Row(out, {"key", "title", "value", "unit"});
  for (const Metric& m : s.metrics) {
    Row(out, {m.key, m.title, FormatMachine(m.value), UnitName(m.unit)});
  }
}

Status WriteCsvFiles(const Report& r, const std::string& dir, std::vector<std::string>* written) {
  struct File {
    std::string name;
    const Section* metrics = nullptr;  // <section>_metrics.csv
    const Table* table = nullptr;      // <table>.csv
  };
  std::vector<File> files;
  for (const Section& s : r.sections) {
    if (!s.metrics.empty()) files.push_back({s.id + "_metrics.csv", &s, nullptr});
    for (const Table& t : s.tables) {
      // Read back from a report.json: its rows are in the CSV written with the report.
      if (t.csv_only && t.source == nullptr && t.rows.empty()) continue;
      files.push_back({t.id + ".csv", nullptr, &t});
    }
  }
  // One file a name, the last table's, as when the files were written one after another (a run
  // whose operators section was added twice): from two threads, which of two writers of one
  // file renames last would depend on timing.
  std::set<std::string> later;
  for (size_t i = files.size(); i-- > 0;)
    if (!later.insert(files[i].name).second) files.erase(files.begin() + static_cast<long>(i));
  // Two threads: many ranks' tables are tens of MB of text, formatted value by value. A batch's
  // tables (one key of RowSource::batch) are written by both threads together (CsvBatch); the
  // other files one a thread, after them.
  std::map<const void*, std::vector<size_t>> batches;
  std::vector<size_t> single;
  for (size_t i = 0; i < files.size(); ++i) {
    const Table* t = files[i].table;
    const void* key = t != nullptr && t->source != nullptr ? t->source->batch() : nullptr;
    if (key != nullptr) batches[key].push_back(i);
    if (key == nullptr) single.push_back(i);
  }
  auto path = [&](size_t i) { return fmt::format("{}/{}", dir, files[i].name); };
  std::vector<std::unique_ptr<CsvBatch>> writers;
  for (const auto& [key, members] : batches) {
    std::vector<const Table*> tables;
    std::vector<std::string> paths;
    for (size_t k : members) tables.push_back(files[k].table), paths.push_back(path(k));
    writers.push_back(std::make_unique<CsvBatch>(tables, paths));
  }
  constexpr size_t kThreads = 2;
  std::vector<Status> results(files.size(), Status::Ok());
  base::ParallelFor(writers.size() * kThreads + single.size(), kThreads, [&](size_t j) {
    if (j < writers.size() * kThreads) return writers[j / kThreads]->Work();
    const size_t i = single[j - writers.size() * kThreads];
    if (files[i].table != nullptr) {
      results[i] = WriteCsvTable(*files[i].table, path(i));
      return;
    }
    std::ostringstream text;
    RenderCsvMetrics(*files[i].metrics, text);
    results[i] = base::WriteFileAtomically(path(i), text.str());
  });
  size_t w = 0;
  for (const auto& [key, members] : batches) {
    for (size_t k = 0; k < members.size(); ++k) results[members[k]] = writers[w]->result(k);
    ++w;
  }
  Status first = Status::Ok();
  for (size_t i = 0; i < files.size(); ++i) {
    if (!results[i].ok()) {
      if (first.ok()) first = results[i];
      continue;
    }
    if (written != nullptr) written->push_back(files[i].name);
  }
  return first;
}

}  // namespace trainprof::report
