#include "jobs/launch_env.h"

#include <fmt/format.h>

#include <charconv>

namespace trainprof::jobs {
namespace {

// The variable as an integer in [lo, hi]; `fallback` when unset or empty.
StatusOr<int64_t> IntVar(const GetEnv& getenv, const char* name, int64_t lo, int64_t hi,
                         int64_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::string_view s(v);
  int64_t out = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || out < lo || out > hi) {
    return InvalidArgument(fmt::format(
        "environment variable {}=\"{}\": expected an integer from {} to {}", name, s, lo, hi));
  }
  return out;
}

bool Set(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0';
}

// SLURM_NTASKS_PER_NODE is "4" or, for uneven layouts, "4(x2),3": the first count.
int64_t LeadingInt(const char* v, int64_t fallback) {
  if (v == nullptr) return fallback;
  int64_t out = 0;
  std::string_view s(v);
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && out > 0 ? out : fallback;
}

}  // namespace

StatusOr<std::string> FirstSlurmHost(std::string_view list) {
  // The first entry ends at the first comma outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < list.size(); ++end) {
    if (list[end] == '[') ++depth;
    if (list[end] == ']') --depth;
    if (list[end] == ',' && depth == 0) break;
  }
  std::string_view first = list.substr(0, end);
  const size_t open = first.find('[');
  if (first.empty() || depth != 0 || (open == 0)) {
    return InvalidArgument(fmt::format("SLURM_JOB_NODELIST=\"{}\": not a Slurm host list", list));
  }
  if (open == std::string_view::npos) return std::string(first);
  // "node[07-09,12]": the prefix, then the first number of the first range, zero padding kept.
  std::string_view ranges = first.substr(open + 1);
  size_t n = 0;
  while (n < ranges.size() && ranges[n] >= '0' && ranges[n] <= '9') ++n;
  if (n == 0 || first.back() != ']') {
    return InvalidArgument(fmt::format("SLURM_JOB_NODELIST=\"{}\": not a Slurm host list", list));
  }
  return std::string(first.substr(0, open)) + std::string(ranges.substr(0, n));
}

StatusOr<LaunchEnv> ParseLaunchEnv(const GetEnv& getenv) {
  LaunchEnv e;
  constexpr int64_t kMaxRanks = 1 << 20;
  if (Set(getenv, "RANK") || Set(getenv, "WORLD_SIZE")) {
    e.launcher = "torchrun";
    if (!Set(getenv, "RANK") || !Set(getenv, "WORLD_SIZE")) {
      return InvalidArgument(
          fmt::format("environment: {} is set but {} is not; torchrun-style launchers set both",
                      Set(getenv, "RANK") ? "RANK" : "WORLD_SIZE",
                      Set(getenv, "RANK") ? "WORLD_SIZE" : "RANK"));
    }
    TRAINPROF_ASSIGN_OR_RETURN(e.world_size, IntVar(getenv, "WORLD_SIZE", 1, kMaxRanks, 1));
    TRAINPROF_ASSIGN_OR_RETURN(e.rank, IntVar(getenv, "RANK", 0, kMaxRanks, 0));
    TRAINPROF_ASSIGN_OR_RETURN(e.local_rank, IntVar(getenv, "LOCAL_RANK", 0, kMaxRanks, e.rank));
    TRAINPROF_ASSIGN_OR_RETURN(e.local_world_size,
                               IntVar(getenv, "LOCAL_WORLD_SIZE", 1, kMaxRanks, e.world_size));
    const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
    e.agent_store = agent != nullptr && std::string_view(agent) == "True";
  } else if (Set(getenv, "SLURM_PROCID") && Set(getenv, "SLURM_NTASKS")) {
    e.launcher = "slurm";
    TRAINPROF_ASSIGN_OR_RETURN(e.world_size, IntVar(getenv, "SLURM_NTASKS", 1, kMaxRanks, 1));
    TRAINPROF_ASSIGN_OR_RETURN(e.rank, IntVar(getenv, "SLURM_PROCID", 0, kMaxRanks, 0));
    TRAINPROF_ASSIGN_OR_RETURN(e.local_rank, IntVar(getenv, "SLURM_LOCALID", 0, kMaxRanks, 0));
    e.local_world_size = LeadingInt(getenv("SLURM_NTASKS_PER_NODE"), 1);
    if (!Set(getenv, "MASTER_ADDR") && Set(getenv, "SLURM_JOB_NODELIST")) {
      TRAINPROF_ASSIGN_OR_RETURN(e.master_addr, FirstSlurmHost(getenv("SLURM_JOB_NODELIST")));
    }
    if (!Set(getenv, "MASTER_PORT")) {
      TRAINPROF_ASSIGN_OR_RETURN(int64_t job, IntVar(getenv, "SLURM_JOB_ID", 0, INT64_MAX, 0));
      e.master_port = 15000 + job % 10000;
    }
  } else {
    return e;
  }
  if (e.rank >= e.world_size) {
    return InvalidArgument(fmt::format(
        "environment: rank {} is not below the world size {} ({})", e.rank, e.world_size,
        e.launcher == "slurm" ? "SLURM_PROCID, SLURM_NTASKS" : "RANK, WORLD_SIZE"));
  }
  if (Set(getenv, "MASTER_ADDR")) e.master_addr = getenv("MASTER_ADDR");
  if (Set(getenv, "MASTER_PORT")) {
    TRAINPROF_ASSIGN_OR_RETURN(e.master_port, IntVar(getenv, "MASTER_PORT", 1, 65535, 29500));
  }
  return e;
}

}  // namespace trainprof::jobs
