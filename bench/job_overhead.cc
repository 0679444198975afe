// Profiling cost on the real job: step time of `trainprof profile`'s training job with the time
// and speed reports on, against the same job with the profiler off (every scope then costs one
// branch), in one process, alternating the two (ABBA order per pair, so drift cancels).
//
//   trainprof_job_overhead [--pairs 10] [--batches 200]
//
// Prints the median step time of each mode and the overhead in %.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "jobs/fashion_mnist_job.h"
#include "jobs/job_config.h"

namespace {

using namespace trainprof;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Seconds per training step of one run, or a negative value on error.
double RunOnce(const jobs::JobConfig& base, const jobs::FashionMnistData& data, bool profile,
               const std::string& dir) {
  jobs::JobConfig cfg = base;
  cfg.profiler.time.enabled = profile;
  cfg.profiler.speed.enabled = profile;
  cfg.profiler.output.run_dir = dir;
  cfg.profiler.output.print = false;
  auto session = Session::Create(cfg.profiler);
  if (!session.ok()) {
    fmt::print(stderr, "error: {}\n", session.status().ToString());
    return -1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto result = jobs::RunFashionMnist(cfg, data, **session);
  const auto t1 = std::chrono::steady_clock::now();
  Status fin = (*session)->Finish();
  std::filesystem::remove_all(dir);
  if (!result.ok() || !fin.ok()) {
    fmt::print(stderr, "error: {}\n",
               result.ok() ? fin.ToString() : result.status().ToString());
    return -1;
  }
  const int64_t steps = result->train_steps + result->val_steps;
  return std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(steps);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t pairs = 10, batches = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--pairs") == 0) pairs = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--batches") == 0) batches = std::atoll(argv[i + 1]);
  }
  jobs::JobConfig cfg;
  base::ConfigSchema schema;
  jobs::AddJobKeys(schema, cfg);
  if (Status s = jobs::ApplyDefaultConfig(schema); !s.ok()) {
    fmt::print(stderr, "error: {}\n", s.ToString());
    return 1;
  }
  cfg.training.epochs = 1;
  cfg.training.limit_train_batches = batches;
  cfg.training.limit_val_batches = 2;
  cfg.training.progress = "off";
  auto data = jobs::LoadData(cfg.data);
  if (!data.ok()) {
    fmt::print(stderr, "error: {}\n", data.status().ToString());
    return 1;
  }
  const std::string dir = fmt::format("/tmp/trainprof_overhead_{}", getpid());
  RunOnce(cfg, *data, true, dir);  // warm-up: page cache, allocator, LibTorch kernels
  std::vector<double> on, off, ratio;
  for (int64_t p = 0; p < pairs; ++p) {
    const bool on_first = p % 2 == 0;
    double a = RunOnce(cfg, *data, on_first, dir);
    double b = RunOnce(cfg, *data, !on_first, dir);
    if (a < 0 || b < 0) return 1;
    const double t_on = on_first ? a : b, t_off = on_first ? b : a;
    on.push_back(t_on);
    off.push_back(t_off);
    ratio.push_back(t_on / t_off);
    fmt::print("pair {:2}: on {:.4f} ms/step, off {:.4f} ms/step, on/off {:.4f}\n", p,
               t_on * 1e3, t_off * 1e3, t_on / t_off);
  }
  fmt::print("median step time: profiler on {:.4f} ms, off {:.4f} ms; median on/off ratio {:.4f} "
             "=> overhead {:+.2f} %\n",
             Median(on) * 1e3, Median(off) * 1e3, Median(ratio), (Median(ratio) - 1) * 100);
  return 0;
}
