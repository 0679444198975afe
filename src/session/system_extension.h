// The system sampler (system/sampler.h) as a Session extension: the Session attaches one when
// system.enabled is true, so it owns no sampler of its own; `trainprof run` uses the sampler
// directly, without a Session.
//
//   auto ext = std::make_shared<session::SystemExtension>(options, run_dir, t0_steady_ns);
//   TRAINPROF_RETURN_IF_ERROR(session::AttachExtension(session, ext));
#pragma once

#include <memory>
#include <string>

#include "session/extension.h"
#include "system/sampler.h"

namespace trainprof::session {

class SystemExtension : public Extension {
 public:
  // Starts sampling every options.system.interval_s (NVML: system::NvmlLibraryFromEnv()).
  SystemExtension(const Options& options, const std::string& run_dir, int64_t t0_steady_ns);
  void OnStep(int64_t) override {}
  void OnStop() override;
  // Adds the system section (energy per trained sample from the training steps) and the
  // counter tracks of trace.json.
  Status OnFinish(FinishContext& ctx) override;
  bool Claims(std::string_view key) const override { return key == "system.enabled"; }
  // The running sampler (the live view reads its latest sample).
  const system::SystemSampler& sampler() const { return *sampler_; }

 private:
  std::unique_ptr<system::SystemSampler> sampler_;
};

}  // namespace trainprof::session
