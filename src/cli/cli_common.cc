// Options and help texts every subcommand shares.
#include <fmt/format.h>

#include "base/text.h"
#include "cli/commands.h"

namespace trainprof::cli {

CLI::Option* AddOutputDirOption(CLI::App* sub, std::string* dir, const std::string& help) {
  CLI::Option* opt = sub->add_option("-o,--output-dir", *dir, help);
  // The spelling analyze, diff and dataset used before: still accepted, hidden, with a warning.
  const std::string command = sub->get_name();
  sub->add_option("--out", *dir)->group("")->each([command](const std::string&) {
    fmt::print(stderr,
               "trainprof {}: warning: --out is the old name of -o/--output-dir, which "
               "every command now uses; --out still works\n",
               command);
  });
  return opt;
}

void AddRunFolderOptions(CLI::App* sub, Options::Output* out) {
  AddOutputDirOption(sub, &out->dir, "Run folders are created below this folder")
      ->default_val("runs");
  sub->add_option("--run-dir", out->run_dir, "Write into exactly this folder instead");
  sub->add_flag("--overwrite", out->overwrite,
                "--run-dir may name a folder holding an earlier run, whose files are removed "
                "first");
  AddExportOptions(sub, out);
}

std::string ExitCodesHelp(const std::vector<std::pair<int, std::string>>& codes) {
  std::string out = "Exit codes:\n";
  for (const auto& [code, what] : codes) out += fmt::format("  {:<4} {}\n", code, what);
  return out;
}

bool HasSubcommand(const CLI::App& app, std::string_view name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->get_name() == name) return true;
  return false;
}

int CheckSubcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || HasSubcommand(app, argv[1])) return 0;
  const std::string word = argv[1];
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string near = base::NearestWord(word, names);
  std::string all;
  for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
  fmt::print(stderr, "trainprof: unknown command '{}'{}; commands: {} (trainprof --help)\n", word,
             near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near), all);
  return kExitBadInput;
}

void PrintError(const Status& s) { fmt::print(stderr, "trainprof: {}\n", s.message()); }

int ExitFor(const Status& s) {
  return s.code() == StatusCode::kUnavailable ? kExitFailure : kExitBadInput;
}

}  // namespace trainprof::cli
