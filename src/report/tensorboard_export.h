// A finished run as a TensorBoard event file, so `tensorboard --logdir <logdir>` shows its curves
// beside the training job's own: the rate curves per step (training_rate, training_step_time_s,
// validation_rate, ...), an analyze run's step times, the system series (system/<figure>), every
// headline metric (<section>/<key> at step 0) and summary.txt as a text panel ("summary").
//
//   TRAINPROF_RETURN_IF_ERROR(report::WriteTensorBoardEvents(report, run_dir, "tb/my-run"));
//
// The file is TensorBoard's format written from its public description: TFRecord framing
// (length, masked CRC-32C of the length, data, masked CRC-32C of the data) around serialized
// tensorflow.Event protobufs, encoded here by hand (no protobuf library). Wall times count from
// the run's start (meta created_utc), so curves of several runs line up by the clock.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/report.h"
#include "report/run_writer.h"
#include "trainprof/status.h"

namespace trainprof::report {

// Writes one new file, <logdir>/events.out.tfevents.<unix seconds>.<host>.<pid>.trainprof,
// atomically; creates `logdir` when missing. summary.txt is read from `run_dir` when it is there
// (a run without one simply has no text panel). Errors name the path: `logdir` cannot be created,
// the file cannot be written, or summary.txt is there but cannot be read.
Status WriteTensorBoardEvents(const Report& r, const std::string& run_dir,
                              const std::string& logdir);

// The run-folder writer (report/run_writers.h): output.tensorboard.
Status ExportToTensorBoard(const RunFiles& f);

// Scalars appended to one event file while a run trains (the live view, issue 57):
// <logdir>/events.out.tfevents.<unix seconds>.<host>.<pid>.trainprof-live, flushed after each
// Add(), so `tensorboard --logdir` shows the curves grow.
class TensorBoardStream {
 public:
  ~TensorBoardStream();
  // Errors name `logdir`: it cannot be created, or the file cannot be opened.
  static StatusOr<std::unique_ptr<TensorBoardStream>> Open(const std::string& logdir);
  // One event at `step` holding these (tag, value) scalars. Errors name the file.
  Status Add(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  const std::string& path() const { return path_; }

 private:
  TensorBoardStream() = default;
  std::string path_;
  std::FILE* file_ = nullptr;
};

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);
// The TFRecord form of a CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc32c(uint32_t crc);

// Seconds since the epoch of an ISO 8601 UTC time as written in created_utc
// ("2026-11-25T15:36:34Z", optionally with fractional seconds or a +hh:mm offset); nullopt when
// `text` is not one. The exporters use it for the run's start.
std::optional<double> ParseUtcIso8601(std::string_view text);

}  // namespace trainprof::report
