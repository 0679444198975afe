// The process figures of a sample: the tree of the root process (this one, or the command of
// `trainprof run`) and every descendant, found again at each sample so children that start
// later (DataLoader workers, torchrun's ranks) count. Totals go to the series; with
// per_process, every process also gets a ProcessStats row.
#include <cmath>
#include <cstdlib>

#include "system/sampler_state.h"

namespace trainprof::system {

// Processes of one tree read per sample, at most (a fork bomb must not stall the sampler).
constexpr size_t kMaxTree = 4096;
// /proc files of the tree kept open across samples, at most.
constexpr size_t kMaxKeptOpen = 256;

// Reads /proc/<pid>/<file> through a descriptor kept open across samples (the path lookup of
// open() is most of a small procfs read). A descriptor outlives no process: once the process
// is gone its reads fail with ESRCH, and descriptors unused in a sample are closed by
// SweepProcFiles(), so a reused pid never reads another process's file.
int SamplerState::ReadProcFile(const std::string& rel) {
  auto it = proc_fds.find(rel);
  if (it == proc_fds.end()) {
    // Past kMaxKeptOpen (a huge tree), files are opened per read: the profiled program's own
    // descriptor budget comes first.
    if (proc_fds.size() >= kMaxKeptOpen) return ReadSmallFile(Path(rel), &buf);
    const int fd = open(Path(rel).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {
        diag.Add(base::DiagnosticId::kSystemOutOfDescriptors, "/proc",
                 fmt::format("cannot open {}: {}; processes of the tree may be missing from "
                             "those samples",
                             Path(rel), std::strerror(errno)));
      }
      return errno;
    }
    it = proc_fds.emplace(rel, ProcFd{fd, 0}).first;
  }
  it->second.sample = sample_no;
  const int err = ReadFd(it->second.fd, &buf);
  if (err != 0) {
    close(it->second.fd);
    proc_fds.erase(it);
  }
  return err;
}

void SamplerState::SweepProcFiles() {
  for (auto it = proc_fds.begin(); it != proc_fds.end();) {
    if (it->second.sample == sample_no) {
      ++it;
      continue;
    }
    close(it->second.fd);
    it = proc_fds.erase(it);
  }
}

// The children of `pid` (every thread can fork; a one-thread process has one children file).
// `pid` is a copy: `out` may be the vector it came from, and grows here.
void SamplerState::Children(std::string pid, int64_t threads, std::vector<std::string>& out) {
  auto add = [&](const std::string& rel, bool keep_open) {
    if ((keep_open ? ReadProcFile(rel) : ReadSmallFile(Path(rel), &buf)) != 0) return;
    for (int64_t child : ParsePidList(buf)) out.push_back(std::to_string(child));
  };
  if (threads == 1 && pid != "self") {
    add("/proc/" + pid + "/task/" + pid + "/children", true);
    return;
  }
  std::vector<std::string> tids;
  ForEachEntry(Path("/proc/" + pid + "/task/"), [&](const char* tid) { tids.push_back(tid); });
  // One descriptor per thread would be too many (a rank has ~100 threads): read by path.
  for (const std::string& tid : tids) add("/proc/" + pid + "/task/" + tid + "/children", false);
}

namespace {

// The command line of a process, NUL-separated arguments joined by spaces.
std::string CommandLine(const std::string& path, std::string& buf, const std::string& comm) {
  if (ReadSmallFile(path, &buf) != 0 || buf.empty()) return comm;
  std::string out = buf.substr(0, 200);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  for (char& c : out) {
    if (c == '\0' || c == '\n' || c == '\t') c = ' ';
  }
  return out.empty() ? comm : out;
}

}  // namespace

int64_t SamplerState::ReadOneProcess(const std::string& pid, ProcTotals& t, bool root,
                                     int64_t t_ns) {
  const std::string rel = "/proc/" + pid + "/stat";
  PidStat ps;
  if (root && o.root_pid == 0) {
    if (!Read(rel) || !Parse(rel, ParsePidStat(buf), &ps)) return -1;
  } else {
    // A child may exit between listing and reading: not a problem worth a diagnostic.
    if (ReadProcFile(rel) != 0 || !Parse(rel, ParsePidStat(buf), &ps)) return 0;
  }
  const int64_t id = pid == "self" ? self_pid : std::atoll(pid.c_str());
  t.jiffies += ps.utime + ps.stime + ps.cutime + ps.cstime;
  // An ended process not yet waited for still has its CPU time, but no memory or threads.
  if (ps.state == 'Z') return 0;
  t.rss += static_cast<double>(ps.rss_pages) * page_size;
  t.vms += static_cast<double>(ps.vsize);
  t.threads += static_cast<double>(ps.threads);
  t.processes += 1;
  if (count_files) ForEachEntry(Path("/proc/" + pid + "/fd"), [&](const char*) { t.files += 1; });
  PidIo io;
  bool have_io = false;
  if (ReadProcFile("/proc/" + pid + "/io") == 0) {
    auto parsed = ParsePidIo(buf);
    have_io = parsed.ok();
    if (have_io) io = *parsed;
  }
  if (have_io) {
    // A reaped child's I/O is added to its parent's counters, as its CPU time to cutime: the
    // tree's total then stays whole, so rates come from the difference of totals.
    t.io_read += io.read_bytes;
    t.io_write += io.write_bytes;
  }
  if (o.per_process) UpdateProcessStats(id, pid, ps, have_io ? &io : nullptr, t_ns);
  return std::max<int64_t>(ps.threads, 1);
}

void SamplerState::UpdateProcessStats(int64_t id, const std::string& pid, const PidStat& ps,
                                      const PidIo* io, int64_t t_ns) {
  auto [it, added] = proc_index.try_emplace(id, data.processes.size());
  if (added) {
    ProcessStats p;
    p.pid = id;
    p.ppid = ps.ppid;
    p.first_ns = t_ns;
    // Its start (ticks after boot) on the sampler's clock: the boot clock runs with the steady
    // clock except while suspended.
    p.start_ns = static_cast<int64_t>(static_cast<double>(ps.starttime) / clk_tck * 1e9) +
                 boot_to_steady_ns - o.t0_ns;
    data.processes.push_back(std::move(p));
  }
  ProcessStats& p = data.processes[it->second];
  if (added || ps.comm != proc_comm[id]) {  // new, or it exec'd another program
    p.command = CommandLine(Path("/proc/" + pid + "/cmdline"), buf, ps.comm);
    proc_comm[id] = ps.comm;
  }
  p.last_ns = t_ns;
  p.cpu_s = static_cast<double>(ps.utime + ps.stime) / clk_tck;
  p.peak_rss_bytes = std::max(p.peak_rss_bytes, static_cast<double>(ps.rss_pages) * page_size);
  p.max_threads = std::max(p.max_threads, static_cast<double>(ps.threads));
  if (io != nullptr) {
    p.read_bytes = static_cast<double>(io->read_bytes);
    p.write_bytes = static_cast<double>(io->write_bytes);
  }
}

void SamplerState::ReadProcessGpu(const std::vector<int64_t>& pids) {
  double memory = 0, util = kNaN;
  std::map<int64_t, ProcessGpuUse> uses;
  for (const auto& source : sources)
    for (const auto& [pid, use] : source->ReadProcesses(pids)) {
      ProcessGpuUse& u = uses[pid];
      u.memory_bytes += use.memory_bytes;
      if (!std::isnan(use.util_percent))
        u.util_percent = (std::isnan(u.util_percent) ? 0 : u.util_percent) + use.util_percent;
    }
  for (const auto& [pid, use] : uses) {
    memory += use.memory_bytes;
    if (!std::isnan(use.util_percent)) util = (std::isnan(util) ? 0 : util) + use.util_percent;
    auto it = proc_index.find(pid);
    if (it == proc_index.end()) continue;
    ProcessStats& p = data.processes[it->second];
    p.peak_gpu_memory_bytes = std::max(p.peak_gpu_memory_bytes, use.memory_bytes);
    if (!std::isnan(use.util_percent)) {
      p.max_gpu_util_percent = std::max(p.max_gpu_util_percent, use.util_percent);
    }
  }
  Set("process_gpu_memory_bytes", memory);
  Set("process_gpu_util_percent", util);
}

void SamplerState::ReadProcess(double dt, int64_t t_ns) {
  ProcTotals t;
  ++sample_no;
  // Open files need a directory listing per process: at most twice a second.
  count_files = (sample_no - 1) % std::max<int64_t>(1, std::llround(0.5 / o.interval_s)) == 0;
  const std::string root = RootPid();
  const int64_t root_threads = ReadOneProcess(root, t, true, t_ns);
  if (root_threads < 0) {
    prev_proc_ok = false;
    return;
  }
  // Breadth first from the root, each process's children from its thread count.
  std::vector<std::string> tree;
  Children(root, root_threads, tree);
  for (size_t i = 0; i < tree.size() && i < kMaxTree; ++i) {
    const int64_t threads = ReadOneProcess(tree[i], t, false, t_ns);
    if (threads > 0) Children(tree[i], threads, tree);
  }
  SweepProcFiles();
  // The root has ended (the last sample of `trainprof run`): its CPU time still counts, but
  // the tree's memory and threads are no longer a figure of the run.
  if (root_threads > 0) {
    Set("process_rss_bytes", t.rss);
    Set("process_vms_bytes", t.vms);
    Set("process_threads", t.threads);
    if (count_files) last_files = t.files;
    Set("process_open_files", last_files);
    Set("process_count", t.processes);
  }
  if (prev_proc_ok && !std::isnan(dt) && dt > 0) {
    const double d = CounterDelta(t.jiffies, prev_proc, "process CPU time (with children)", diag);
    Set("process_cpu_percent", 100.0 * d / clk_tck / dt);
    // A child that ends without a parent in the tree to reap it takes its I/O along: the
    // total may then drop, which counts as no I/O, not as a counter gone backwards.
    Set("process_io_read_bytes_per_s",
        static_cast<double>(t.io_read - std::min(t.io_read, prev_io_read)) / dt);
    Set("process_io_write_bytes_per_s",
        static_cast<double>(t.io_write - std::min(t.io_write, prev_io_write)) / dt);
  }
  prev_io_read = t.io_read;
  prev_io_write = t.io_write;
  prev_proc = t.jiffies;
  prev_proc_ok = true;
  if (!gpus.empty()) {
    std::vector<int64_t> pids{root == "self" ? self_pid : o.root_pid};
    if (tree.size() > kMaxTree) tree.resize(kMaxTree);
    for (const std::string& pid : tree) pids.push_back(std::atoll(pid.c_str()));
    ReadProcessGpu(pids);
  }
}

}  // namespace trainprof::system
