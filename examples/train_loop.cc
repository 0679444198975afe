// A training loop instrumented with trainprof: scopes, a decorator-style wrapper, steps and
// stages. It burns a little CPU instead of training a model, so it needs nothing but trainprof.
#include <trainprof/session.h>

#include <cmath>
#include <cstdio>

namespace {

double Work(int n) {
  double x = 0;
  for (int i = 0; i < n; ++i) x += std::sqrt(static_cast<double>(i));
  return x;
}

}  // namespace

int main() {
  trainprof::Options options;
  options.output.dir = "runs";
  options.output.name = "example";
  options.speed.warmup_batches = 2;
  auto created = trainprof::Session::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "example: %s\n", created.status().ToString().c_str());
    return 2;
  }
  trainprof::Session& session = **created;
  // Any callable, profiled under an action name.
  auto load_batch = trainprof::Profiled(
      "[_TrainingEpochLoop].train_dataloader_next", [] { return Work(20000); },
      trainprof::ActionKind::kDataLoader);

  double sink = 0;
  session.SetBatchSize(32);
  for (int epoch = 0; epoch < 2; ++epoch) {
    session.SetEpoch(epoch);
    session.SetStage(trainprof::Stage::kTrain);
    TRAINPROF_SCOPE_KIND("run_training_epoch", trainprof::ActionKind::kLoop);
    for (int batch = 0; batch < 20; ++batch) {
      sink += load_batch();
      TRAINPROF_SCOPE_KIND("run_training_batch", trainprof::ActionKind::kLoop);
      {
        TRAINPROF_SCOPE_KIND("[Model].forward", trainprof::ActionKind::kForward);
        sink += Work(100000);
      }
      {
        TRAINPROF_SCOPE_KIND("backward", trainprof::ActionKind::kBackward);
        sink += Work(200000);
      }
      session.Step();
    }
  }
  trainprof::Status status = session.Finish();  // prints the reports, writes the run folder
  if (!status.ok()) {
    std::fprintf(stderr, "example: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("run folder: %s (checksum %.0f)\n", session.run_dir().c_str(), sink);
  return 0;
}
