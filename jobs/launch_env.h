// Where this process sits in a multi-process (data-parallel) run, read from the variables the
// launchers set, so the same binary runs under any of them:
//   torchrun (and `trainprof profile --nproc-per-node N`): RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; TORCHELASTIC_USE_AGENT_STORE=True when the
//     agent already serves the store;
//   Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE, the first
//     host of SLURM_JOB_NODELIST as MASTER_ADDR unless set, and MASTER_PORT unless set
//     = 15000 + the last four digits of SLURM_JOB_ID (PyTorch Lightning's rule).
// torchrun's variables win when both are set; with neither, the process is a single rank.
//
//   auto env = jobs::ParseLaunchEnv([](const char* k) { return std::getenv(k); });
//   if (env.ok() && env->world_size > 1) ...
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trainprof/status.h"

namespace trainprof::jobs {

struct LaunchEnv {
  std::string launcher;  // "torchrun", "slurm" or "" (one process)
  int64_t rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int64_t master_port = 29500;
  bool agent_store = false;  // the launcher's agent serves the store; rank 0 only connects
};

using GetEnv = std::function<const char*(const char*)>;

// Errors (InvalidArgument naming the variable and its value): a non-numeric or out-of-range
// number, RANK >= WORLD_SIZE, a missing WORLD_SIZE next to RANK, an unparsable nodelist.
StatusOr<LaunchEnv> ParseLaunchEnv(const GetEnv& getenv);

// The first host of a Slurm nodelist: "node[07-09,12],gpu3" -> "node07", "a,b" -> "a".
StatusOr<std::string> FirstSlurmHost(std::string_view nodelist);

}  // namespace trainprof::jobs
