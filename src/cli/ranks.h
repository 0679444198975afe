// Multi-rank `trainprof profile`: starting N local ranks (--nproc-per-node) and, inside each
// rank, the exchange of reports that ends with rank 0's merged report.
//
//   if (flags.nproc_per_node > 1 && env.launcher.empty()) return LaunchLocalRanks(n, timeout);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainprof::cli {

// The command line of this process (set by main), to start the ranks with.
void SetProgramArgs(int argc, char** argv);
const std::vector<std::string>& ProgramArgs();
// The path of this program (/proc/self/exe resolved), to start copies of it under its own name.
std::string SelfExe();

// Starts `n` copies of this command with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT = a free port) and waits for them.
// SIGTERM is forwarded; SIGINT reaches the ranks from the terminal. A rank that dies is named
// on stderr; ranks still running `grace_s` after that are killed. Returns the exit code: 0 when
// every rank succeeded, else the first failing rank's (128 + signal for a killed one).
int LaunchLocalRanks(int64_t n, double grace_s);

}  // namespace trainprof::cli
