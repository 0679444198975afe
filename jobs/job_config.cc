#include "jobs/job_config.h"

#include "record/options_schema.h"

namespace trainprof::jobs {

extern const char kDefaultConfigYaml[];  // generated from configs/default.yaml

void AddJobKeys(base::ConfigSchema& schema, JobConfig& cfg) {
  AddOptionsKeys(schema, cfg.profiler);
  TrainingConfig& t = cfg.training;
  schema.AddInt("training.epochs", &t.epochs, 1, 100000, "Number of training epochs.");
  schema.AddInt("training.batch_size", &t.batch_size, 1, 65536, "Training batch size (samples).");
  schema.AddInt("training.val_batch_size", &t.val_batch_size, 1, 65536,
                "Validation batch size (samples).");
  schema.AddDouble("training.learning_rate", &t.learning_rate, 1e-9, 10.0,
                   "Adam learning rate.");
  schema.AddInt("training.limit_train_batches", &t.limit_train_batches, 0, 1000000000,
                "Training batches per epoch (0 = the whole training set), as Lightning's "
                "limit_train_batches.");
  schema.AddInt("training.limit_val_batches", &t.limit_val_batches, 0, 1000000000,
                "Validation batches per epoch (0 = the whole test set), as Lightning's "
                "limit_val_batches.");
  schema.AddInt("training.seed", &t.seed, 0, 2147483647,
                "Seed of the weight initialisation and of the shuffling.");
  schema.AddInt("training.threads", &t.threads, 0, 1024,
                "LibTorch intra-op threads (0 = LibTorch's default).");
  schema.AddString("training.progress", &t.progress,
                   "Progress display on stderr: a live bar on a terminal and periodic lines "
                   "otherwise (auto), always a bar, always lines, or off.",
                   {"auto", "bar", "lines", "off"});
  schema.AddString("data.dir", &cfg.data.dir,
                   "Folder with the Fashion-MNIST IDX files (train-images-idx3-ubyte.gz, ...), "
                   "as Debian's dataset-fashion-mnist installs them.");
  schema.AddString("data.format", &cfg.data.format,
                   "Dataset layout read by the job: idx (the packed .gz files).", {"idx"});
  schema.AddBool("data.shuffle", &cfg.data.shuffle, "Shuffle the training set every epoch.");
}

std::string_view DefaultConfigYaml() { return kDefaultConfigYaml; }

Status ApplyDefaultConfig(base::ConfigSchema& schema) {
  return schema.ApplyYamlText(DefaultConfigYaml(), "<embedded configs/default.yaml>");
}

}  // namespace trainprof::jobs
