#include "session/system_extension.h"

#include <cstdlib>

#include "system/system_report.h"

namespace trainprof::session {

SystemExtension::SystemExtension(const Options& options, const std::string& run_dir,
                                 int64_t t0_steady_ns) {
  system::SamplerOptions so;
  so.nvml_library = system::NvmlLibraryFromEnv();
  so.rocm_smi_library = system::RocmSmiLibraryFromEnv();
  so.disk_path = run_dir;
  so.interval_s = options.system.interval_s;
  so.t0_ns = t0_steady_ns;
  sampler_ = system::SystemSampler::Create(std::move(so));
  sampler_->Start();
}

void SystemExtension::OnStop() { sampler_->Stop(); }

Status SystemExtension::OnFinish(FinishContext& ctx) {
  sampler_->Stop();
  const system::SystemData data = sampler_->TakeData();
  int64_t trained = 0;  // samples trained while the sampler ran (the whole session)
  for (const record::StepMark& m : ctx.steps) {
    if (m.stage == Stage::kTrain) trained += m.batch_size;
  }
  system::AddSystemSection(data, trained, ctx.report);
  if (ctx.trace != nullptr) {
    for (auto& track : system::CounterTracks(data)) ctx.trace->counters.push_back(std::move(track));
  }
  return Status::Ok();
}

}  // namespace trainprof::session
