// `trainprof mcp`: the Model Context Protocol server on stdio (src/mcp/server.h), for coding
// agents. stdout carries the protocol only; nothing else is printed there.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "mcp/server.h"

namespace trainprof::cli {

namespace {

struct McpFlags {
  mcp::ServerOptions options;
  int64_t max_rows = 500;
};

}  // namespace

void AddMcpCommand(CLI::App& app, std::function<int()>* run) {
  auto f = std::make_shared<McpFlags>();
  CLI::App* cmd = app.add_subcommand(
      "mcp", "Serve trainprof's analyses to coding agents (Model Context Protocol, stdio)");
  cmd->add_option("--root", f->options.roots,
                  "A folder the tools may read under (repeatable); a client that gives roots "
                  "replaces these. Default: the working folder")
      ->check(CLI::ExistingDirectory);
  AddDbOption(cmd, &f->options.db, /*records=*/false);
  cmd->add_option("--max-rows", f->max_rows, "The most table rows one call returns")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->footer(
      "Speaks MCP (JSON-RPC 2.0, protocol 2025-06-18 and 2025-11-25) on stdin and stdout, one "
      "message a line. Tools: analyze, table, findings, explain, diff, runs; resources: the run "
      "folders under the roots. It reads only under the roots and writes nothing. A client's "
      "config, e.g. Claude Code:\n  claude mcp add trainprof -- trainprof mcp --root "
      "/data/traces\nSee docs/agents.md.\n" +
      ExitCodesHelp(
          {{kExitOk, "the client closed the stream"}, {kExitBadInput, "bad command line"}}));
  cmd->callback([run, f] {
    *run = [f] {
      std::ios::sync_with_stdio(false);
      f->options.limits.max_rows = f->max_rows;
      return mcp::Serve(f->options, std::cin, std::cout);
    };
  });
}

}  // namespace trainprof::cli
