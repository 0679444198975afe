#include "history/run_db.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "base/clock.h"
#include "base/text.h"
#include "history/step_series.h"
#include "report/format.h"

namespace trainprof::history {
namespace {

constexpr int kApplicationId = 0x74707266;  // "tprf": marks the file as trainprof's
// 1: the first six key figures; 2: step_time_median added (older rows have none); 3: device,
// steps and step_log_sd (the within-run noise the run-to-run spread is corrected for).
constexpr int kSchemaVersion = 3;
constexpr int kBusyTimeoutMs = 10000;

constexpr const char* kTextFields[] = {
    "id",      "created_utc", "kind",       "name",        "title",
    "host",    "git_commit",  "git_branch", "config_hash", "trainprof_version",
    "run_dir", "device"};

// The record's text fields, parallel to kTextFields.
template <typename Record>
auto TextOf(Record& r) {
  return std::array{&r.id,      &r.created_utc, &r.kind,       &r.name,        &r.title,
                    &r.host,    &r.git_commit,  &r.git_branch, &r.config_hash, &r.trainprof_version,
                    &r.run_dir, &r.device};
}

// Names users type for the stored columns.
constexpr std::pair<const char*, const char*> kAliases[] = {{"commit", "git_commit"},
                                                            {"branch", "git_branch"},
                                                            {"created", "created_utc"},
                                                            {"version", "trainprof_version"},
                                                            {"dir", "run_dir"}};

std::string Columns() {
  std::string cols = "seq";
  for (const char* f : kTextFields) cols += fmt::format(", {}", f);
  for (const FigureInfo& f : kFigures) cols += fmt::format(", {}", f.key);
  return cols + ", steps, step_log_sd";
}

// An owning statement.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return s_; }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, double v) {
    if (std::isfinite(v)) {
      sqlite3_bind_double(s_, i, v);
    } else {
      sqlite3_bind_null(s_, i);
    }
  }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

std::string Err(sqlite3* db, const std::string& path, std::string_view what) {
  return fmt::format("{}: {}: {}", path, what, sqlite3_errmsg(db));
}

RunRecord ReadRow(sqlite3_stmt* s) {
  RunRecord r;
  r.seq = sqlite3_column_int64(s, 0);
  int col = 1;
  for (std::string* t : TextOf(r)) {
    const unsigned char* v = sqlite3_column_text(s, col++);
    *t = v != nullptr ? reinterpret_cast<const char*>(v) : "";
  }
  for (size_t i = 0; i < kFigures.size(); ++i, ++col) {
    if (sqlite3_column_type(s, col) != SQLITE_NULL)
      r.figures.values[i] = sqlite3_column_double(s, col);
  }
  r.steps = sqlite3_column_int64(s, col++);
  if (sqlite3_column_type(s, col) != SQLITE_NULL) r.step_log_sd = sqlite3_column_double(s, col);
  return r;
}

// One --where expression as SQL with its bound value.
struct Condition {
  std::string sql;
  std::string text;
  double number = 0;
  bool numeric = false;
};

StatusOr<Condition> ParseWhere(std::string_view expr) {
  static constexpr const char* kOps[] = {"!=", "<=", ">=", "=", "<", ">", "~"};
  size_t at = std::string_view::npos;
  const char* op = nullptr;
  for (size_t i = 0; i < expr.size() && op == nullptr; ++i) {
    for (const char* o : kOps) {
      if (expr.substr(i, std::strlen(o)) == o) {
        at = i, op = o;
        break;
      }
    }
  }
  auto bad = [&](const std::string& why) {
    return InvalidArgument(fmt::format("--where '{}': {}", expr, why));
  };
  if (op == nullptr)
    return bad("expected FIELD OP VALUE with OP one of = != < <= > >= ~ (contains)");
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
      s = s.substr(1, s.size() - 2);
    return std::string(s);
  };
  std::string field = trim(expr.substr(0, at));
  std::string value = trim(expr.substr(at + std::strlen(op)));
  for (auto [alias, column] : kAliases)
    if (field == alias) field = column;
  Condition c;
  const bool text = std::ranges::any_of(kTextFields, [&](const char* f) { return field == f; });
  c.numeric = FigureIndex(field) >= 0;
  if (!text && !c.numeric) {
    std::vector<std::string> all(std::begin(kTextFields), std::end(kTextFields));
    for (const FigureInfo& f : kFigures) all.push_back(f.key);
    std::string near = base::NearestWord(field, all);
    return bad(fmt::format("unknown field \"{}\"{}; fields: {}", field,
                           near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                           WhereFields()));
  }
  if (value.empty()) return bad("no value after the operator");
  if (std::string_view(op) == "~") {
    c.sql = fmt::format("instr({}, ?) > 0", field);
    c.text = value;
    c.numeric = false;
    return c;
  }
  c.sql = fmt::format("{} {} ?", field, op);
  if (c.numeric) {
    char* end = nullptr;
    c.number = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0')
      return bad(fmt::format("\"{}\" is a number field; \"{}\" is not a number", field, value));
  } else {
    c.text = value;
  }
  return c;
}

}  // namespace

std::string WhereFields() {
  std::string out;
  for (const char* f : kTextFields) out += fmt::format("{}{}", out.empty() ? "" : ", ", f);
  for (const FigureInfo& f : kFigures) out += fmt::format(", {}", f.key);
  return out;
}

std::vector<std::pair<std::string, std::string>> RecordFields(const RunRecord& r) {
  const auto text = TextOf(r);
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < std::size(kTextFields); ++i) out.emplace_back(kTextFields[i], *text[i]);
  for (size_t i = 0; i < kFigures.size(); ++i) {
    const double v = r.figures.values[i];
    // "16.1 ms (0.0161234)": the figure as people read it, and the number --where compares.
    out.emplace_back(kFigures[i].key,
                     std::isfinite(v)
                         ? fmt::format("{} ({:.6g})", report::FormatHuman(v, kFigures[i].unit), v)
                         : "");
  }
  return out;
}

bool IsDefaultDbPath(const std::string& flag) {
  const char* env = std::getenv("TRAINPROF_DB");
  return flag.empty() && (env == nullptr || *env == '\0');
}

std::string DbPath(const std::string& flag) {
  if (IsDefaultDbPath(flag)) return "runs/trainprof.db";
  const std::string p = flag.empty() ? std::getenv("TRAINPROF_DB") : flag;
  return p == "off" || p == "none" ? "" : p;
}

namespace {

// analyze: the trace file or folder's name with its parent folder's ("h100/graph.json.gz"): two
// models' traces often share a file name.
std::string InputName(std::string input) {
  while (input.size() > 1 && input.back() == '/') input.pop_back();
  const std::filesystem::path p(input);
  const std::string parent = p.parent_path().filename().string();
  const bool named = !parent.empty() && parent != "." && parent != ".." && parent != "/";
  return named ? parent + "/" + p.filename().string() : p.filename().string();
}

}  // namespace

RunRecord RecordFromReport(const report::Report& r, const std::string& run_dir,
                           const GitInfo& git) {
  RunRecord rec;
  const int64_t now = base::WallNowNs();
  std::random_device rd;
  rec.id = fmt::format("{}-{:06x}", base::UtcCompact(now), rd() & 0xffffff);
  rec.created_utc = report::MetaText(r, "created_utc");
  if (rec.created_utc.empty() || rec.created_utc == "-") rec.created_utc = base::UtcIso8601(now);
  rec.kind = r.kind;
  rec.title = r.title;
  for (const auto& [k, v] : r.config)
    if (k == "output.name") rec.name = report::FormatHuman(v, report::Unit::kText);
  if (rec.name.empty()) rec.name = InputName(report::MetaText(r, "input"));
  rec.host = report::MetaText(r, "host.name");
  rec.git_commit = git.commit;
  rec.git_branch = git.branch;
  rec.config_hash = ConfigHash(r);
  rec.trainprof_version = report::MetaText(r, "trainprof_version");
  std::error_code ec;
  auto abs = std::filesystem::absolute(run_dir, ec);
  rec.run_dir = ec ? run_dir : abs.lexically_normal().string();
  rec.figures = ExtractKeyFigures(r);
  rec.device = RunDevice(r);
  std::vector<double> steps;
  for (const auto& group : ExtractSteps(r).step_time_s)
    steps.insert(steps.end(), group.begin(), group.end());
  const RunNoise noise = RunNoiseOf(steps);
  rec.steps = noise.steps;
  rec.step_log_sd = noise.log_sd;
  return rec;
}

StatusOr<std::unique_ptr<RunDb>> RunDb::Open(const std::string& path, bool create) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (!create) {
      return NotFound(fmt::format(
          "{}: no run history there (trainprof profile and analyze record each run; --db or "
          "TRAINPROF_DB names another database)",
          path));
    }
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  }
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = Err(db, path, "cannot open the run history");
    sqlite3_close(db);
    return InvalidArgument(msg);
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<RunDb> out(new RunDb(db, path));
  TRAINPROF_RETURN_IF_ERROR(out->Init(create));
  return out;
}

RunDb::~RunDb() { sqlite3_close(db_); }

Status RunDb::Init(bool create) {
  // The file's marks, read in one statement so they come from one snapshot: read one by one, a
  // database another process creates in between would look like someone else's (its tables
  // already there, our application_id not yet seen).
  int app = 0, version = 0, tables = 0;
  {
    Stmt s(db_,
           "SELECT (SELECT application_id FROM pragma_application_id), "
           "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)");
    const int rc = s.ok() ? sqlite3_step(s.get()) : sqlite3_errcode(db_);
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT || sqlite3_errcode(db_) == SQLITE_NOTADB) {
      return InvalidArgument(
          fmt::format("{}: not an SQLite database (damaged, or another kind of file); move it "
                      "away and trainprof starts a new history",
                      path_));
    }
    if (rc != SQLITE_ROW) return InvalidArgument(Err(db_, path_, "cannot read the run history"));
    app = sqlite3_column_int(s.get(), 0);
    version = sqlite3_column_int(s.get(), 1);
    tables = sqlite3_column_int(s.get(), 2);
  }
  if (app == 0) {
    if (tables > 0) {
      return InvalidArgument(fmt::format(
          "{}: an SQLite database, but not trainprof's run history (it has {} other tables)", path_,
          tables));
    }
    if (!create) return NotFound(fmt::format("{}: an empty database, no runs recorded", path_));
    // Two processes may create it at once: the second finds it made inside its transaction.
    const std::string schema = fmt::format(
        "BEGIN IMMEDIATE;"
        "CREATE TABLE IF NOT EXISTS runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL "
        "UNIQUE, created_utc TEXT, kind TEXT, name TEXT, title TEXT, host TEXT, git_commit TEXT, "
        "git_branch TEXT, config_hash TEXT, trainprof_version TEXT, run_dir TEXT, device TEXT{}, "
        "steps INTEGER, step_log_sd REAL);"
        "CREATE INDEX IF NOT EXISTS runs_commit ON runs(git_commit);"
        "PRAGMA application_id = {};"
        "PRAGMA user_version = {};"
        "COMMIT;",
        [] {
          std::string cols;
          for (const FigureInfo& f : kFigures) cols += fmt::format(", {} REAL", f.key);
          return cols;
        }(),
        kApplicationId, kSchemaVersion);
    char* err = nullptr;
    if (sqlite3_exec(db_, schema.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = fmt::format("{}: cannot create the run history: {}", path_,
                                    err != nullptr ? err : "unknown error");
      sqlite3_free(err);
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return InvalidArgument(msg);
    }
    app = kApplicationId;
    version = kSchemaVersion;
  }
  if (app != kApplicationId) {
    return InvalidArgument(fmt::format(
        "{}: an SQLite database of another program (application_id {:#x}), not trainprof's run "
        "history",
        path_, static_cast<unsigned>(app)));
  }
  if (version > kSchemaVersion) {
    return FailedPrecondition(fmt::format(
        "{}: run history schema {} is newer than this trainprof reads ({}); use a newer "
        "trainprof",
        path_, version, kSchemaVersion));
  }
  if (version < kSchemaVersion) TRAINPROF_RETURN_IF_ERROR(Migrate());
  // WAL: readers never block the writer, writers queue behind the busy timeout. Asked on every
  // open (a no-op once set), so a switch that lost a race with another process's reader at
  // creation is made by the next one.
  sqlite3_exec(db_, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  return Status::Ok();
}

// Schema 1 -> 2: the step_time_median column; 2 -> 3: device, steps and step_log_sd. In one write
// transaction that reads the version again, so that two processes opening an old history at
// once migrate it once.
Status RunDb::Migrate() {
  char* err = nullptr;
  auto fail = [&](const char* what) {
    std::string msg =
        fmt::format("{}: {}: {}", path_, what, err != nullptr ? err : "unknown error");
    sqlite3_free(err);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return UnavailableError(msg);
  };
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, &err) != SQLITE_OK)
    return fail("cannot upgrade the run history");
  int version = 0;
  {
    Stmt s(db_, "PRAGMA user_version");
    if (s.ok() && sqlite3_step(s.get()) == SQLITE_ROW) version = sqlite3_column_int(s.get(), 0);
  }
  std::string sql;
  if (version < 2) sql += "ALTER TABLE runs ADD COLUMN step_time_median REAL;";
  if (version < 3) {
    sql +=
        "ALTER TABLE runs ADD COLUMN device TEXT; ALTER TABLE runs ADD COLUMN steps INTEGER; "
        "ALTER TABLE runs ADD COLUMN step_log_sd REAL;";
  }
  if (version < kSchemaVersion &&
      sqlite3_exec(db_, fmt::format("{} PRAGMA user_version = {}", sql, kSchemaVersion).c_str(),
                   nullptr, nullptr, &err) != SQLITE_OK) {
    return fail("cannot upgrade the run history to schema 3");
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, &err) != SQLITE_OK)
    return fail("cannot upgrade the run history");
  return Status::Ok();
}

Status RunDb::Insert(const RunRecord& r) {
  std::string placeholders = "?";
  const size_t n = std::size(kTextFields) + kFigures.size() + 2;
  for (size_t i = 1; i < n; ++i) placeholders += ", ?";
  std::string cols = Columns().substr(std::string("seq, ").size());
  Stmt s(db_, fmt::format("INSERT INTO runs ({}) VALUES ({})", cols, placeholders));
  if (!s.ok()) return InvalidArgument(Err(db_, path_, "cannot record the run"));
  int i = 1;
  for (const std::string* t : TextOf(r)) s.Bind(i++, *t);
  for (double v : r.figures.values) s.Bind(i++, v);
  s.Bind(i++, r.steps);
  s.Bind(i++, r.step_log_sd);
  if (sqlite3_step(s.get()) != SQLITE_DONE)
    return UnavailableError(Err(db_, path_, "cannot record the run"));
  return Status::Ok();
}

StatusOr<std::vector<RunRecord>> RunDb::List(const Query& q) const {
  std::vector<Condition> conds;
  std::string where;
  for (const std::string& w : q.where) {
    TRAINPROF_ASSIGN_OR_RETURN(Condition c, ParseWhere(w));
    where += fmt::format("{} {}", where.empty() ? " WHERE" : " AND", c.sql);
    conds.push_back(std::move(c));
  }
  std::string sql = fmt::format("SELECT {} FROM runs{} ORDER BY seq DESC", Columns(), where);
  if (q.last > 0) sql += fmt::format(" LIMIT {}", q.last);
  Stmt s(db_, sql);
  if (!s.ok()) return InvalidArgument(Err(db_, path_, "cannot list runs"));
  int i = 1;
  for (const Condition& c : conds) {
    if (c.numeric) {
      s.Bind(i++, c.number);
    } else {
      s.Bind(i++, c.text);
    }
  }
  std::vector<RunRecord> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) out.push_back(ReadRow(s.get()));
  if (rc != SQLITE_DONE) return InvalidArgument(Err(db_, path_, "cannot list runs"));
  return out;
}

StatusOr<RunRecord> RunDb::Find(std::string_view name) const {
  std::string sql;
  std::string bind;
  int64_t offset = 0;
  if (name == "latest" || name.starts_with("latest~")) {
    if (name.size() > 7) {
      char* end = nullptr;
      const std::string n(name.substr(7));
      offset = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || offset < 0)
        return InvalidArgument(fmt::format("{}: expected latest~N with N a whole number", name));
    }
    sql = fmt::format("SELECT {} FROM runs ORDER BY seq DESC LIMIT 1 OFFSET {}", Columns(), offset);
  } else {
    sql = fmt::format(
        "SELECT {} FROM runs WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 ORDER BY id = ?1 "
        "DESC, seq DESC LIMIT 3",
        Columns());
    bind = std::string(name);
  }
  Stmt s(db_, sql);
  if (!s.ok()) return InvalidArgument(Err(db_, path_, "cannot read the run history"));
  if (!bind.empty()) s.Bind(1, bind);
  std::vector<RunRecord> found;
  while (sqlite3_step(s.get()) == SQLITE_ROW) found.push_back(ReadRow(s.get()));
  if (found.empty()) {
    return NotFound(offset > 0 ? fmt::format("{}: the history in {} holds fewer runs", name, path_)
                               : fmt::format("{}: no run of that id in {}", name, path_));
  }
  if (found.size() > 1 && found[0].id != name) {
    return InvalidArgument(
        fmt::format("{}: several runs in {} start so ({}, {}, ...); give more "
                    "of the id",
                    name, path_, found[0].id, found[1].id));
  }
  return found[0];
}

StatusOr<std::optional<RunRecord>> RunDb::NewestAtCommits(const std::vector<std::string>& commits,
                                                          std::string_view kind,
                                                          std::string_view exclude_id) const {
  // A temporary table of the commits keeps the query one index lookup per commit.
  if (commits.empty()) return std::optional<RunRecord>();
  sqlite3_exec(db_,
               "CREATE TEMP TABLE IF NOT EXISTS ancestors(c TEXT PRIMARY KEY); "
               "DELETE FROM ancestors;",
               nullptr, nullptr, nullptr);
  {
    Stmt ins(db_, "INSERT OR IGNORE INTO ancestors VALUES (?)");
    if (!ins.ok()) return InvalidArgument(Err(db_, path_, "cannot read the run history"));
    sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr);
    for (const std::string& c : commits) {
      ins.Bind(1, c);
      sqlite3_step(ins.get());
      sqlite3_reset(ins.get());
    }
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  Stmt s(db_, fmt::format("SELECT {} FROM runs WHERE git_commit IN (SELECT c FROM ancestors) AND "
                          "kind = ? AND id != ? ORDER BY seq DESC LIMIT 1",
                          Columns()));
  if (!s.ok()) return InvalidArgument(Err(db_, path_, "cannot read the run history"));
  s.Bind(1, std::string(kind));
  s.Bind(2, std::string(exclude_id));
  if (sqlite3_step(s.get()) == SQLITE_ROW) return std::optional<RunRecord>(ReadRow(s.get()));
  return std::optional<RunRecord>();
}

StatusOr<RunRecord> RecordRun(const report::Report& r, const std::string& run_dir,
                              const std::string& db_flag, std::string* db_path) {
  *db_path = DbPath(db_flag);
  if (db_path->empty()) return RunRecord{};
  TRAINPROF_ASSIGN_OR_RETURN(auto db, RunDb::Open(*db_path, /*create=*/true));
  RunRecord rec = RecordFromReport(r, run_dir, ReadGitInfo());
  TRAINPROF_RETURN_IF_ERROR(db->Insert(rec));
  return rec;
}

}  // namespace trainprof::history
