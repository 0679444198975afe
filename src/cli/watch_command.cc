// `trainprof watch RUN_DIR`: the live view of a running job from another terminal, read-only:
// it reads <RUN_DIR>/live.json (live/snapshot.h), which the job's Session rewrites every
// live.interval_s when its live.mode is on, and prints a line each time it changes, until the
// job finishes. --port also serves the live page (live/page.h) with what it reads.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "live/page.h"
#include "live/snapshot.h"

namespace trainprof::cli {

namespace {

struct WatchFlags {
  std::string run_dir;
  bool once = false;
  double interval_s = 1.0;
  double wait_s = 10.0;  // how long a live.json may take to appear
  int port = 0;          // serve the live page too (0: no page)
  std::string host = "127.0.0.1";
};

// The live page, showing each snapshot the watch loop reads. Null when --port is 0; an error
// when the port cannot be had.
StatusOr<std::unique_ptr<live::LivePage>> ServePage(const WatchFlags& f) {
  if (f.port == 0) return std::unique_ptr<live::LivePage>();
  TRAINPROF_ASSIGN_OR_RETURN(auto page, live::LivePage::Start(f.host, f.port));
  fmt::print(stderr, "trainprof watch: live page at http://{}:{}/ (Ctrl-C stops it)\n", f.host,
             page->port());
  return page;
}

// The snapshot in RUN_DIR, or nullopt while there is none; errors: a file that is not one.
StatusOr<std::optional<live::LiveSnapshot>> ReadSnapshot(const std::string& path) {
  StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return std::optional<live::LiveSnapshot>{};
  TRAINPROF_ASSIGN_OR_RETURN(live::LiveSnapshot s, live::ParseLiveJson(*text, path));
  return std::optional<live::LiveSnapshot>{s};
}

int Watch(const WatchFlags& f) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(f.run_dir)) {
    PrintError(NotFound(fmt::format("{}: no such run folder", f.run_dir)));
    return kExitBadInput;
  }
  const std::string path = f.run_dir + "/live.json";
  StatusOr<std::unique_ptr<live::LivePage>> page = ServePage(f);
  if (!page.ok()) {
    PrintError(page.status());
    return kExitBadInput;
  }
  const bool redraw = !f.once && isatty(STDOUT_FILENO);
  const auto start = std::chrono::steady_clock::now();
  std::string last;
  for (;;) {
    StatusOr<std::optional<live::LiveSnapshot>> s = ReadSnapshot(path);
    if (!s.ok()) {
      PrintError(s.status());
      return kExitBadInput;
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!s->has_value()) {
      if (f.once || waited > f.wait_s) {
        PrintError(NotFound(fmt::format(
            "{} has no live.json after {:.0f} s: is the job running with its live view on "
            "(--set live.mode=lines, or live: {{mode: lines}} in its config)?",
            f.run_dir, waited)));
        return kExitBadInput;
      }
    } else {
      if (*page != nullptr) (*page)->Publish(live::LiveJson(**s));
      if (const std::string line = live::LiveLine(**s); line != last) {
        fmt::print(fmt::runtime(redraw ? "\r\033[2K{}" : "{}\n"), line);
        std::fflush(stdout);
        last = line;
        if ((*s)->finished || f.once) break;
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(f.interval_s));
  }
  if (redraw) fmt::print("\n");
  if (*page != nullptr) {  // the page keeps the finished run's last snapshot until Ctrl-C
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return kExitOk;
}

}  // namespace

void AddWatchCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<WatchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "watch", "Watch a running job's live view from another terminal (read-only)");
  cmd->add_option("RUN_DIR", f->run_dir, "The job's run folder")->required();
  cmd->add_flag("--once", f->once, "Print the latest snapshot once and exit");
  cmd->add_option("--interval", f->interval_s, "Seconds between two reads")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--wait", f->wait_s, "Seconds to wait for live.json to appear")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--port", f->port,
                  "Also serve the live page on this port (http://HOST:PORT/), updated every "
                  "second, until Ctrl-C")
      ->check(CLI::Range(1, 65535));
  cmd->add_option("--host", f->host, "The address the page listens on")->capture_default_str();
  cmd->footer(
      "The job writes RUN_DIR/live.json when its live view is on (config live.mode: lines or "
      "view; docs/live.md). watch prints a line each time it changes (one line redrawn in "
      "place on a terminal) and ends when the job finishes.\n" +
      ExitCodesHelp(
          {{kExitOk, "the job finished (or --once printed)"},
           {kExitBadInput, "no run folder, no live.json, not a live.json, or the port is taken"}}));
  cmd->callback([run, f] { *run = [f] { return Watch(*f); }; });
}

}  // namespace trainprof::cli
