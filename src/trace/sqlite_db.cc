#include "trace/sqlite_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

namespace trainprof::trace {

// '%', '?' and '#' escaped.
std::string ImmutableUri(const std::string& path) {
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#')
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else
      uri += c;
  }
  return uri + "?mode=ro&immutable=1";
}

bool SqliteRow::Null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

int64_t SqliteRow::Int(int col) const { return sqlite3_column_int64(s_, col); }

std::string_view SqliteRow::Text(int col) const {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  if (t == nullptr) return {};
  return {t, static_cast<size_t>(sqlite3_column_bytes(s_, col))};
}

StatusOr<SqliteDb> SqliteDb::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(ImmutableUri(path).c_str(), &raw,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteDb db;
  db.path_ = path;
  db.db_.reset(raw, sqlite3_close);
  if (rc != SQLITE_OK) {
    return InvalidArgument(fmt::format("{}: cannot open as an SQLite database: {}", path,
                                       raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  // Opening is lazy: the first read says whether the bytes are a database.
  TRAINPROF_RETURN_IF_ERROR(db.Each("SELECT count(*) FROM sqlite_master", [](const SqliteRow&) {}));
  return db;
}

bool SqliteDb::HasTable(std::string_view table) const { return !Columns(table).empty(); }

std::set<std::string> SqliteDb::Columns(std::string_view table) const {
  std::set<std::string> out;
  // Table names are the caller's constants, never the user's.
  (void)Each(fmt::format("PRAGMA table_info({})", table),
             [&](const SqliteRow& r) { out.emplace(r.Text(1)); });
  return out;
}

Status SqliteDb::Each(const std::string& sql,
                      const std::function<void(const SqliteRow&)>& row) const {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> s(raw, sqlite3_finalize);
  if (rc == SQLITE_OK) {
    const SqliteRow r(s.get());
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) row(r);
    if (rc == SQLITE_DONE) return Status::Ok();
  }
  return InvalidArgument(fmt::format("{}: {}", path_, sqlite3_errmsg(db_.get())));
}

}  // namespace trainprof::trace
