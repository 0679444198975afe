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
  schema.AddDouble("training.learning_rate", &t.learning_rate, 1e-9, 10.0, "Adam learning rate.");
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
  schema.AddString("training.device", &t.device,
                   "Where the model trains: cpu; cuda (each rank on the GPU of its local rank; "
                   "needs trainprof built against a CUDA LibTorch, and a GPU); auto (cuda when "
                   "LibTorch sees a GPU, else cpu).",
                   {"cpu", "cuda", "auto"});
  schema.AddString("data.dir", &cfg.data.dir,
                   "Folder of the dataset in data.format: for idx the Fashion-MNIST IDX files "
                   "(train-images-idx3-ubyte.gz, ...) as Debian's dataset-fashion-mnist installs "
                   "them; for png_dir and packed a folder written by `trainprof dataset "
                   "export-png` / `export-packed`.");
  schema.AddString("data.format", &cfg.data.format,
                   "Dataset layout read by the job: idx (the .gz files, decompressed into memory "
                   "once), png_dir (one PNG file per sample, read and decoded on every access), "
                   "packed (one uncompressed file of fixed-size records, memory-mapped).",
                   {"idx", "png_dir", "packed"});
  schema.AddBool("data.shuffle", &cfg.data.shuffle,
                 "Shuffle the training set every epoch (the same order on every rank, which "
                 "then takes its shard, as DistributedSampler).");
  schema.AddInt("data.num_workers", &cfg.data.num_workers, 0, 256,
                "Data-loader worker threads (DataLoader's num_workers); 0 = the training loop "
                "reads each batch itself.");
  schema.AddString("distributed.backend", &cfg.distributed.backend,
                   "Process-group backend of multi-rank runs (--nproc-per-node, torchrun, "
                   "srun): gloo on CPU; nccl needs a trainprof built against a CUDA LibTorch.",
                   {"gloo", "nccl"});
  schema.AddDouble("distributed.timeout_s", &cfg.distributed.timeout_s, 1, 86400,
                   "Seconds a rank waits for the others (joining, each all-reduce, the final "
                   "report exchange) before it fails with an error naming the missing rank.");
  schema.AddInt("data.prefetch", &cfg.data.prefetch, 1, 1024,
                "Batches each worker keeps loaded ahead (DataLoader's prefetch_factor).");
  schema.AddDouble("data.delay_ms", &cfg.data.delay_ms, 0, 60000,
                   "A fixed delay, in milliseconds, spent busy on every batch the loader reads: "
                   "slow decoding on purpose, to see a data-loading bottleneck or test a "
                   "regression gate (0 = none).");
}

std::string_view DefaultConfigYaml() { return kDefaultConfigYaml; }

Status ApplyDefaultConfig(base::ConfigSchema& schema) {
  return schema.ApplyYamlText(DefaultConfigYaml(), "<embedded configs/default.yaml>");
}

}  // namespace trainprof::jobs
