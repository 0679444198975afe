// Run history: one row per finished run in an SQLite database (default runs/trainprof.db), with
// the run's id, time, host, git commit and branch, config hash, trainprof version, folder and key
// figures. Several ranks or jobs may write at once: the database is in WAL mode and every
// connection waits up to 10 s for a lock, so no row is lost.
//
//   TRAINPROF_ASSIGN_OR_RETURN(auto db, history::RunDb::Open(history::DbPath(""), true));
//   TRAINPROF_RETURN_IF_ERROR(db->Insert(history::RecordFromReport(report, dir, git)));
//   auto runs = db->List({.last = 20, .where = {"kind = profile"}});
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history/git.h"
#include "history/key_figures.h"
#include "history/noise.h"
#include "report/report.h"
#include "trainprof/status.h"

struct sqlite3;

namespace trainprof::history {

struct RunRecord {
  int64_t seq = 0;  // insertion order (1, 2, ...): "latest" is the highest
  std::string id;   // "20261123T041501Z-3f9a2c": UTC time and 6 random hex digits
  std::string created_utc, kind, name, title, host, git_commit, git_branch, config_hash,
      trainprof_version, run_dir;
  std::string device;  // "cpu", "cuda", or analyze's device list; "" in rows older than schema 3
  KeyFigures figures;
  // The within-run noise of its training steps (schema 3): their count and the robust standard
  // deviation of their log times (NaN when unknown); history/noise.h's variance components.
  int64_t steps = 0;
  double step_log_sd = kNoValue;
};

// The record of a finished run (a fresh id). `run_dir` is stored as an absolute path.
RunRecord RecordFromReport(const report::Report& r, const std::string& run_dir, const GitInfo& git);

// The database to use: `flag` (--db), else $TRAINPROF_DB, else runs/trainprof.db. "off" or
// "none" (from either) means no history: an empty string is returned (a database file named
// "none" is never what was meant).
std::string DbPath(const std::string& flag);
// True when DbPath(flag) is the default runs/trainprof.db: neither --db nor $TRAINPROF_DB named
// one, so nobody asked for a history there.
bool IsDefaultDbPath(const std::string& flag);

class RunDb {
 public:
  // Opens the database at `path`, creating it (and its folder) when `create` is set.
  // Errors, each naming the file: it does not exist (NotFound, when !create); it is not an SQLite
  // database; it is another program's database; its schema is newer than this trainprof's.
  static StatusOr<std::unique_ptr<RunDb>> Open(const std::string& path, bool create);
  ~RunDb();
  RunDb(const RunDb&) = delete;
  RunDb& operator=(const RunDb&) = delete;

  // Errors: the row could not be written (disk full, locked for over 10 s).
  Status Insert(const RunRecord& r);

  struct Query {
    size_t last = 20;                // newest N (0: all)
    std::vector<std::string> where;  // each "FIELD OP VALUE", all must hold
  };
  // Newest first. Errors: a --where expression that does not parse (InvalidArgument, naming it).
  StatusOr<std::vector<RunRecord>> List(const Query& q) const;

  // A run by id, by a unique prefix of an id, or "latest" / "latest~N" (N runs before the
  // latest). Errors: NotFound; InvalidArgument when a prefix matches several runs.
  StatusOr<RunRecord> Find(std::string_view name) const;

  // The newest run of `kind` whose commit is one of `commits`, other than `exclude_id`.
  StatusOr<std::optional<RunRecord>> NewestAtCommits(const std::vector<std::string>& commits,
                                                     std::string_view kind,
                                                     std::string_view exclude_id) const;

  const std::string& path() const { return path_; }

 private:
  RunDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Init(bool create);
  Status Migrate();
  sqlite3* db_;
  std::string path_;
};

// Adds a finished run to the history at DbPath(db_flag), creating the database if needed.
// Returns the stored record (its id, and run_dir as stored); an empty id when the history is
// off. Errors: the database cannot be opened or written (the message names it).
StatusOr<RunRecord> RecordRun(const report::Report& r, const std::string& run_dir,
                              const std::string& db_flag, std::string* db_path);

// The fields --where accepts, for help texts: "id, created_utc, kind, ...".
std::string WhereFields();

// A record as (field, value) pairs under the names --where accepts; an unmeasured figure is "".
std::vector<std::pair<std::string, std::string>> RecordFields(const RunRecord& r);

}  // namespace trainprof::history
