// Configuration of the built-in training job run by `trainprof profile`: the profiler keys
// (trainprof::Options) plus training.* and data.*. Defaults come from the embedded
// configs/default.yaml; every key is listed in docs/config.md.
//
//   jobs::JobConfig cfg;
//   base::ConfigSchema schema;
//   jobs::AddJobKeys(schema, cfg);
//   TRAINPROF_RETURN_IF_ERROR(jobs::ApplyDefaultConfig(schema));
//   TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile("my.yaml"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/config_schema.h"
#include "trainprof/options.h"

namespace trainprof::jobs {

struct TrainingConfig {
  int64_t epochs = 2;
  int64_t batch_size = 64;
  int64_t val_batch_size = 256;
  double learning_rate = 1e-3;
  int64_t limit_train_batches = 0;  // 0 = the whole training set each epoch
  int64_t limit_val_batches = 0;    // 0 = the whole test set each epoch
  int64_t seed = 42;
  int64_t threads = 0;  // LibTorch intra-op threads; 0 = LibTorch's default
  std::string progress = "auto";
  // cpu | cuda (each rank on cuda:<local rank>) | auto (cuda when LibTorch sees a GPU).
  std::string device = "cpu";
};

struct DataConfig {
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::string format = "idx";  // idx | png_dir | packed (jobs/dataset_formats.h)
  bool shuffle = true;
  int64_t num_workers = 0;  // loader worker threads; 0 = the training loop loads
  int64_t prefetch = 2;     // batches each worker keeps ready
  double delay_ms = 0;      // a fixed busy delay per batch read: slow decoding, on purpose
};

struct DistributedConfig {
  std::string backend = "gloo";  // gloo (CPU) | nccl (CUDA LibTorch builds)
  double timeout_s = 300;        // a collective or rendezvous waiting longer fails
};

struct JobConfig {
  Options profiler;
  TrainingConfig training;
  DataConfig data;
  DistributedConfig distributed;
};

// Registers every key (profiler, training.*, data.*) bound to the fields of `cfg`.
void AddJobKeys(base::ConfigSchema& schema, JobConfig& cfg);
// The embedded configs/default.yaml.
std::string_view DefaultConfigYaml();
// Applies the embedded default config.
Status ApplyDefaultConfig(base::ConfigSchema& schema);

}  // namespace trainprof::jobs
