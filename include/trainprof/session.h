// A profiling Session: owns the run folder, follows the training loop (stage, epoch, step,
// batch size), drives the profiling schedule, and on Finish() builds the report and writes
// report.json, the CSVs, summary.txt and trace.json. One Session may be active per process.
//
//   auto session = trainprof::Session::Create(options);   // or CreateFromConfigFile("p.yaml")
//   if (!session.ok()) return Fail(session.status());
//   trainprof::Session& s = **session;
//   s.SetBatchSize(64);
//   for (int epoch = 0; epoch < 2; ++epoch) {
//     s.SetEpoch(epoch);
//     s.SetStage(trainprof::Stage::kTrain);
//     for (auto& batch : loader) { TRAINPROF_SCOPE("run_training_batch"); ...; s.Step(); }
//   }
//   trainprof::Status st = s.Finish();   // prints the reports when output.print is true
//
// Every method is safe to call from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainprof/options.h"
#include "trainprof/scope.h"
#include "trainprof/stage.h"
#include "trainprof/status.h"

namespace trainprof {

class SessionImpl;
class Session;
namespace session {
class Extension;  // collectors of optional libraries (src/session/extension.h)
Status AttachExtension(Session& session, std::shared_ptr<Extension> extension);
}  // namespace session

class Session {
 public:
  // Validates the options, creates the run folder and starts recording.
  // Errors: invalid options (InvalidArgument), run folder not creatable (PermissionDenied or
  // InvalidArgument naming the folder), another Session active (FailedPrecondition).
  static StatusOr<std::unique_ptr<Session>> Create(Options options);
  // Create() with options read from a YAML file (see docs/config.md).
  static StatusOr<std::unique_ptr<Session>> CreateFromConfigFile(const std::string& path);

  ~Session();  // Finish()es a session that was not finished (errors are then lost).
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts a stage: its first step begins now.
  void SetStage(Stage stage);
  void SetEpoch(int64_t epoch);
  void SetBatchSize(int64_t batch_size);
  // The number of worker threads or processes of the program's data loader (0: the loop fetches
  // its batches itself). The speed report uses it to say how many workers would hide a wait.
  void SetDataLoaderWorkers(int64_t workers);
  // Ends the current step of the current stage and begins the next; advances the schedule.
  void Step();

  Stage stage() const;
  int64_t epoch() const;
  int64_t global_step() const;    // training steps done so far
  int64_t profiler_step() const;  // Step() calls so far, all stages (the schedule's step)
  const std::string& run_dir() const;
  const Options& options() const;

  // Adds "key: value" to the report's metadata (model name, dataset, device, ...).
  void SetMeta(const std::string& key, const std::string& value);
  // Adds a configuration value of the program (e.g. "training.epochs") to report.json's config.
  void AddConfigValue(const std::string& key, bool value);
  void AddConfigValue(const std::string& key, int64_t value);
  void AddConfigValue(const std::string& key, double value);
  void AddConfigValue(const std::string& key, const std::string& value);
  // Adds a one-line note shown under the report's title (e.g. "stopped by Ctrl-C at step 12").
  void AddNote(const std::string& note);

  // Stops recording, builds the report and writes every output. Safe to call twice (the
  // second call does nothing). Errors name the file that could not be written; the other
  // outputs are still attempted.
  Status Finish();
  // The text printed to the terminal (also in summary.txt); empty before Finish().
  const std::string& summary() const;

 private:
  friend Status session::AttachExtension(Session&, std::shared_ptr<session::Extension>);
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace trainprof
