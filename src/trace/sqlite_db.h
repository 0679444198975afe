// A SQLite database opened for reading only, and never written: a user's Nsight Systems profile
// must stay as it is (a read-write open may grow it), so the file is opened read-only with
// `immutable=1`, which also skips locking and journal files beside it.
//
//   StatusOr<SqliteDb> db = SqliteDb::Open("run.sqlite");
//   db->Each("SELECT id, value FROM StringIds", [&](const SqliteRow& r) { names[r.Int(0)] = ...;
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "trainprof/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace trainprof::trace {

// The URI that opens `path` read-only and immutable (no locks, no journal looked for), for
// sqlite3_open_v2 with SQLITE_OPEN_URI.
std::string ImmutableUri(const std::string& path);

// One result row; valid only inside the callback that receives it.
class SqliteRow {
 public:
  explicit SqliteRow(sqlite3_stmt* s) : s_(s) {}
  bool Null(int col) const;
  int64_t Int(int col) const;            // 0 for NULL
  std::string_view Text(int col) const;  // "" for NULL

 private:
  sqlite3_stmt* s_;
};

class SqliteDb {
 public:
  // Errors: the file cannot be opened, or is not an SQLite database (naming the file).
  static StatusOr<SqliteDb> Open(const std::string& path);

  bool HasTable(std::string_view table) const;
  // The table's column names; empty when there is no such table.
  std::set<std::string> Columns(std::string_view table) const;
  // Runs `sql`, calling `row` for each result row. Errors: the statement failed (the message
  // names the file and SQLite's words).
  Status Each(const std::string& sql, const std::function<void(const SqliteRow&)>& row) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::shared_ptr<sqlite3> db_;
};

}  // namespace trainprof::trace
