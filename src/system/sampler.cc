#include "system/sampler.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "system/sampler_state.h"

namespace trainprof::system {

using report::Severity;
using report::Unit;

int FindColumn(const std::vector<SeriesColumn>& columns, const std::string& key) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

// The sources, in SamplerSources() order: each adds its columns after those before it.
void SamplerState::Discover() {
  for (const SourceEntry& e : SamplerSources()) {
    std::unique_ptr<Source> source =
        e.make(SourceContext{o, &diag, static_cast<int>(gpus.size()), this});
    source_first.push_back(columns.size());
    source->AddColumns(columns);
    for (GpuInfo& g : source->gpus()) gpus.push_back(std::move(g));
    sources.push_back(std::move(source));
  }
  // A GPU source that found nothing is worth a note only when no other found a GPU.
  for (const auto& source : sources) {
    std::string why = source->why_not();
    const bool gpu_note = why.starts_with("GPU") || why.starts_with("AMD GPU");
    if (!why.empty() && !(gpu_note && !gpus.empty())) data.notes.push_back(std::move(why));
  }
}

namespace {

// The figures over every GPU (their average, from 2 GPUs) and the sampled process tree's GPU
// use (written by the host source's process walk, which asks the GPU sources).
class GpuSummarySource : public Source {
 public:
  explicit GpuSummarySource(const SamplerState& s) : s_(s) {}
  void AddColumns(std::vector<SeriesColumn>& cols) override {
    for (const GpuInfo& g : s_.gpus) first_.push_back(FindColumn(cols, GpuColumns(g.index)[0].key));
    auto add = [&](const char* key, const char* title, report::Unit unit, bool trace) {
      cols.push_back({key, title, unit, false, trace, ""});
    };
    if (s_.gpus.size() >= 2) {
      add("gpu_avg_utilization_percent", "GPU utilization (average over GPUs)", Unit::kPercent,
          false);
      add("gpu_avg_memory_used_bytes", "GPU memory used (average over GPUs)", Unit::kBytes, false);
      add("gpu_avg_memory_used_percent", "GPU memory used (average over GPUs)", Unit::kPercent,
          false);
      add("gpu_avg_power_w", "GPU power (average over GPUs)", Unit::kWatts, false);
    }
    if (!s_.gpus.empty()) {
      add("process_gpu_memory_bytes", "Process GPU memory (with children, all GPUs)", Unit::kBytes,
          true);
      add("process_gpu_util_percent", "Process GPU SM utilization (with children)", Unit::kPercent,
          false);
    }
  }
  void Read(const SampleRow& row) override {
    if (first_.size() < 2) return;
    constexpr GpuFigure kAveraged[] = {kGpuUtil, kGpuMemUsed, kGpuMemUsedPct, kGpuPower};
    for (size_t k = 0; k < std::size(kAveraged); ++k) {
      double sum = 0;
      int n = 0;
      for (int first : first_) {
        const double v = first < 0 ? kNaN : row.values[first + kAveraged[k]];
        if (!std::isnan(v)) sum += v, ++n;
      }
      row.values[row.first + k] = n > 0 ? sum / n : kNaN;
    }
  }

 private:
  const SamplerState& s_;
  std::vector<int> first_;  // each GPU's first column
};

}  // namespace

std::unique_ptr<Source> MakeGpuSummarySource(const SourceContext& c) {
  return std::make_unique<GpuSummarySource>(*c.sampler);
}

std::vector<SourceEntry>& SamplerSources() {
  static std::vector<SourceEntry> kSources = {
      {"host (/proc, /sys)", MakeHostSource},
      {"NVML", MakeNvmlSource},
      {"ROCm SMI", MakeRocmSmiSource},
      {"GPU summary", MakeGpuSummarySource},
      {"RAPL", MakeRaplSource},
  };
  return kSources;
}

std::string NvmlLibraryFromEnv() {
  const char* lib = std::getenv("TRAINPROF_NVML_LIBRARY");
  return lib != nullptr ? std::string(lib) : SamplerOptions().nvml_library;
}

// ---- SystemSampler ------------------------------------------------------------------------

SystemSampler::SystemSampler(std::unique_ptr<SamplerState> state) : s_(std::move(state)) {}

SystemSampler::~SystemSampler() { Stop(); }

std::unique_ptr<SystemSampler> SystemSampler::Create(SamplerOptions options) {
  auto s = std::make_unique<SamplerState>();
  s->o = std::move(options);
  if (s->o.root.empty()) s->o.root = "/";
  if (s->o.root == "/") s->o.root = "";  // paths are root + "/proc/..."
  s->Discover();
  s->data.columns = s->columns;
  s->data.gpus = s->gpus;
  s->data.interval_s = s->o.interval_s;
  s->row.assign(s->columns.size(), kNaN);
  return std::unique_ptr<SystemSampler>(new SystemSampler(std::move(s)));
}

const std::vector<SeriesColumn>& SystemSampler::columns() const { return s_->columns; }

void SystemSampler::SampleOnce() {
  SamplerState& s = *s_;
  const auto wall0 = std::chrono::steady_clock::now();
  const int64_t now = s.Now();
  const double dt = s.have_prev ? static_cast<double>(now - s.prev_t) * 1e-9 : kNaN;
  std::fill(s.row.begin(), s.row.end(), kNaN);
  for (size_t k = 0; k < s.sources.size(); ++k)
    s.sources[k]->Read(SampleRow{s.row.data(), s.source_first[k], dt, now - s.o.t0_ns});
  if (s.have_prev) {
    s.data.t_ns.push_back(now - s.o.t0_ns);
    s.data.values.insert(s.data.values.end(), s.row.begin(), s.row.end());
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    s.sample_total_s += took;
    ++s.timed_samples;
    s.data.sample_max_s = std::max(s.data.sample_max_s, took);
    std::lock_guard<std::mutex> lock(latest_mu_);
    latest_.t_ns = now - s.o.t0_ns;
    latest_.values = s.row;
  }
  s.have_prev = true;
  s.prev_t = now;
}

SystemSampler::Latest SystemSampler::LatestSample() const {
  std::lock_guard<std::mutex> lock(latest_mu_);
  return latest_;
}

void SystemSampler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  running_ = true;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void SystemSampler::Run() {
  const double cpu0 = ThreadCpuSeconds();
  const auto wall0 = std::chrono::steady_clock::now();
  SampleOnce();  // baseline
  int64_t reads = 1;
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(s_->o.interval_s * 1e9));
  auto next = wall0 + period;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (cv_.wait_until(lock, next, [this] { return stop_; })) break;
    lock.unlock();
    SampleOnce();
    ++reads;
    lock.lock();
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // fell behind (machine overloaded): skip, no burst
  }
  lock.unlock();
  // A last sample, so the end of the run (and a run shorter than one interval) is covered.
  if (std::chrono::steady_clock::now() - wall0 > std::chrono::milliseconds(10)) {
    SampleOnce();
    ++reads;
  }
  s_->data.reads = reads;
  s_->data.thread_cpu_s = ThreadCpuSeconds() - cpu0;
  s_->data.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

void SystemSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stop_ = true;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SystemData SystemSampler::TakeData() {
  SamplerState& s = *s_;
  SystemData d = std::move(s.data);
  d.diagnostics = s.diag.Take();
  d.sample_mean_s = s.timed_samples > 0 ? s.sample_total_s / s.timed_samples : 0;
  d.energy.clear();
  for (const auto& source : s.sources)
    for (EnergyDevice& e : source->Energy()) d.energy.push_back(std::move(e));
  // The CPU first, then the GPUs by index, whatever the order of the sources' columns.
  std::stable_partition(d.energy.begin(), d.energy.end(),
                        [](const EnergyDevice& e) { return e.device.starts_with("CPU"); });
  s.data = SystemData();
  s.data.columns = s.columns;
  s.data.gpus = d.gpus;
  s.data.interval_s = d.interval_s;
  return d;
}

}  // namespace trainprof::system
