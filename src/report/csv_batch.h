// The CSV files of tables whose rows come from sources of one RowSource::batch (many ranks'
// per-rank tables), written by several threads at once. The parts go in chunks of a few; a
// thread takes the next (chunk, table) in that order, readies the chunk's parts once while it
// works in it, renders the table's rows of it, and each table's chunks reach its file in order
// (a chunk done early waits in memory for the one before it). Every thread works until the
// batch is done, so the threads finish together whatever the tables' sizes: halves of the
// tables, one a thread, left one thread writing alone for half the time at 10,000 ranks.
//
//   CsvBatch batch(tables, paths);
//   base::ParallelFor(2, 2, [&](size_t) { batch.Work(); });
//   for (size_t i = 0; i < tables.size(); ++i) first_error = batch.result(i);
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "report/report.h"
#include "trainprof/status.h"

namespace trainprof::report {

// A CSV file's text goes to the file in blocks of about this many bytes.
inline constexpr size_t kCsvFlushBytes = size_t{1} << 16;

// A table's header row of column keys (RFC 4180 quoting), and its rows, as the CSV holds them.
void AppendCsvHeader(std::string& out, const Table& t);
void AppendCsvRows(std::string& out, const Table& t, const std::vector<std::vector<Value>>& rows);

class CsvBatch {
 public:
  // Opens every file (one that cannot be opened keeps its error in result() and is left out).
  CsvBatch(const std::vector<const Table*>& tables, const std::vector<std::string>& paths);
  ~CsvBatch();
  CsvBatch(const CsvBatch&) = delete;
  CsvBatch& operator=(const CsvBatch&) = delete;

  // Renders and writes (chunk, table) items until none is left; safe on any number of threads.
  void Work();
  // Table i's status once every Work() has returned: its file committed, or why not.
  const Status& result(size_t i) const { return out_[i].status; }

 private:
  struct Output {  // one table's file, filled in chunk order
    std::mutex mu;
    base::AtomicFile file;
    std::string text;                     // written at every kCsvFlushBytes
    size_t next = 0;                      // the chunk its file takes next
    std::map<size_t, std::string> early;  // chunks rendered before `next`
    Status status = Status::Ok();
  };
  struct Held;  // the chunk a thread holds ready

  // The parts of a chunk: [first, end).
  std::pair<size_t, size_t> PartsOf(size_t chunk) const;
  void Render(size_t chunk, size_t table, Held& held) const;
  void Deliver(size_t chunk, size_t table, const std::string& text);

  std::vector<const Table*> tables_;
  std::vector<size_t> open_;  // the tables whose file opened
  std::unique_ptr<Output[]> out_;
  size_t parts_ = 0, chunks_ = 0;
  std::atomic<size_t> next_{0};
  std::unique_ptr<std::atomic<size_t>[]> rendered_;  // per chunk: its (chunk, table) items done
  std::atomic<int> workers_{0};  // Work() calls so far: every other one readies a chunk backwards
};

}  // namespace trainprof::report
