#include "jobs/fashion_mnist_job.h"

#include <fmt/format.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include "jobs/progress.h"
#include "trainprof/scope.h"
#include "trainprof/torch.h"

namespace trainprof::jobs {

std::atomic<int> g_stop_signal{0};

namespace {

using trainprof::ActionKind;

// The tutorial's CIFAR10CNN with one input channel: 28 -> conv5 24 -> pool 12 -> conv5 8 ->
// pool 4, so fc1 takes 16 * 4 * 4 features.
struct CnnImpl : torch::nn::Module {
  CnnImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 5)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, 5)))),
        fc1(register_module("fc1", torch::nn::Linear(16 * 4 * 4, 120))),
        fc2(register_module("fc2", torch::nn::Linear(120, 84))),
        fc3(register_module("fc3", torch::nn::Linear(84, 10))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = x.flatten(1);
    x = torch::relu(fc1->forward(x));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }

  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2, fc3;
};
TORCH_MODULE(Cnn);

struct Batch {
  torch::Tensor images;  // [n, 1, 28, 28] float, normalised
  torch::Tensor labels;  // [n] int64
};

// A single-process data loader over an in-memory IDX dataset: gathers the samples of a batch and
// normalises them with Fashion-MNIST's mean and std.
class Loader {
 public:
  Loader(const IdxDataset& d, int64_t batch_size, bool shuffle, uint64_t seed)
      : d_(d), batch_size_(batch_size), shuffle_(shuffle), rng_(seed), order_(d.count) {
    std::iota(order_.begin(), order_.end(), 0);
  }
  void StartEpoch() {
    if (shuffle_) std::shuffle(order_.begin(), order_.end(), rng_);
    pos_ = 0;
  }
  int64_t batches() const { return (d_.count + batch_size_ - 1) / batch_size_; }
  bool Next(Batch* out) {
    if (pos_ >= d_.count) return false;
    const int64_t n = std::min(batch_size_, d_.count - pos_);
    const int64_t pixels = d_.rows * d_.cols;
    auto images = torch::empty({n, 1, d_.rows, d_.cols}, torch::kUInt8);
    auto labels = torch::empty({n}, torch::kInt64);
    uint8_t* img = images.data_ptr<uint8_t>();
    int64_t* lab = labels.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t idx = order_[pos_ + i];
      std::memcpy(img + i * pixels, d_.images.data() + idx * pixels, pixels);
      lab[i] = d_.labels[idx];
    }
    pos_ += n;
    out->images = images.to(torch::kFloat32).div_(255.0).sub_(0.2860).div_(0.3530);
    out->labels = labels;
    return true;
  }

 private:
  const IdxDataset& d_;
  int64_t batch_size_;
  bool shuffle_;
  std::mt19937_64 rng_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
};

bool Stopped() { return g_stop_signal.load(std::memory_order_relaxed) != 0; }

}  // namespace

StatusOr<FashionMnistData> LoadData(const DataConfig& data) {
  FashionMnistData d;
  TRAINPROF_ASSIGN_OR_RETURN(d.train, LoadFashionMnist(data.dir, Split::kTrain));
  TRAINPROF_ASSIGN_OR_RETURN(d.test, LoadFashionMnist(data.dir, Split::kTest));
  return d;
}

StatusOr<JobResult> RunFashionMnist(const JobConfig& cfg, const FashionMnistData& data,
                                    Session& session) {
  const TrainingConfig& tc = cfg.training;
  JobResult res;
  // Before the model exists, so every allocation of the training is tracked.
  TRAINPROF_ASSIGN_OR_RETURN(std::unique_ptr<TorchProfiler> torch_prof,
                             TorchProfiler::Attach(session));
  try {
    torch::manual_seed(static_cast<uint64_t>(tc.seed));
    if (tc.threads > 0) torch::set_num_threads(static_cast<int>(tc.threads));
    Cnn model;
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(tc.learning_rate));
    Loader train(data.train, tc.batch_size, cfg.data.shuffle, static_cast<uint64_t>(tc.seed));
    Loader val(data.test, tc.val_batch_size, false, 0);
    const int64_t train_batches = tc.limit_train_batches > 0
                                      ? std::min(tc.limit_train_batches, train.batches())
                                      : train.batches();
    const int64_t val_batches =
        tc.limit_val_batches > 0 ? std::min(tc.limit_val_batches, val.batches()) : val.batches();
    session.SetMeta("model", "CIFAR10CNN (PyTorch profiler tutorial), 1x28x28 input");
    session.SetMeta("dataset", fmt::format("Fashion-MNIST ({}), {} train / {} test samples",
                                           cfg.data.dir, data.train.count, data.test.count));
    session.SetMeta("device", "cpu");
    session.SetMeta("torch_threads", std::to_string(torch::get_num_threads()));
    Progress progress(tc.progress);

    for (int64_t epoch = 0; epoch < tc.epochs && !Stopped(); ++epoch) {
      session.SetEpoch(epoch);
      // ---- training ----
      {
        TRAINPROF_SCOPE_KIND("run_training_epoch", ActionKind::kLoop);
        model->train();
        train.StartEpoch();
        session.SetBatchSize(tc.batch_size);
        session.SetStage(Stage::kTrain);
        progress.Begin(fmt::format("epoch {}/{} train", epoch + 1, tc.epochs), train_batches);
        for (int64_t b = 0; b < train_batches && !Stopped(); ++b) {
          Batch batch;
          {
            TRAINPROF_SCOPE_KIND("[_TrainingEpochLoop].train_dataloader_next",
                                 ActionKind::kDataLoader);
            if (!train.Next(&batch)) break;
          }
          // The model summary's extra forward pass on the first real batch (model_summary.*);
          // a failure is in the report, and training goes on.
          if (epoch == 0 && b == 0) (void)torch_prof->SummarizeModel(model, batch.images);
          session.SetBatchSize(batch.images.size(0));
          {
            TRAINPROF_SCOPE_KIND("run_training_batch", ActionKind::kLoop);
            torch::Tensor loss;
            {
              TRAINPROF_SCOPE_KIND("training_step", ActionKind::kStep);
              torch::Tensor logits;
              {
                TRAINPROF_SCOPE_KIND("[Model].forward", ActionKind::kForward);
                logits = model->forward(batch.images);
              }
              TRAINPROF_SCOPE("[Model].loss");
              loss = torch::nn::functional::cross_entropy(logits, batch.labels);
            }
            {
              TRAINPROF_SCOPE_KIND("optimizer_zero_grad", ActionKind::kOptimizer);
              optimizer.zero_grad();
            }
            {
              TRAINPROF_SCOPE_KIND("backward", ActionKind::kBackward);
              loss.backward();
            }
            {
              TRAINPROF_SCOPE_KIND("optimizer_step", ActionKind::kOptimizer);
              optimizer.step();
            }
            res.last_train_loss = loss.item<double>();
          }
          session.Step();
          ++res.train_steps;
          progress.Update(b + 1, fmt::format("loss {:.3f}", res.last_train_loss));
        }
        progress.End();
      }
      if (Stopped()) break;
      // ---- validation ----
      {
        TRAINPROF_SCOPE_KIND("run_validation", ActionKind::kLoop);
        torch::NoGradGuard no_grad;
        model->eval();
        val.StartEpoch();
        session.SetStage(Stage::kValidation);
        progress.Begin(fmt::format("epoch {}/{} val  ", epoch + 1, tc.epochs), val_batches);
        double loss_sum = 0;
        int64_t correct = 0, seen = 0;
        for (int64_t b = 0; b < val_batches && !Stopped(); ++b) {
          Batch batch;
          {
            TRAINPROF_SCOPE_KIND("[_EvaluationLoop].val_next", ActionKind::kDataLoader);
            if (!val.Next(&batch)) break;
          }
          session.SetBatchSize(batch.images.size(0));
          {
            TRAINPROF_SCOPE_KIND("validation_step", ActionKind::kStep);
            torch::Tensor logits;
            {
              TRAINPROF_SCOPE_KIND("[Model].forward", ActionKind::kForward);
              logits = model->forward(batch.images);
            }
            loss_sum += torch::nn::functional::cross_entropy(
                            logits, batch.labels,
                            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                            .item<double>();
            correct += logits.argmax(1).eq(batch.labels).sum().item<int64_t>();
            seen += batch.images.size(0);
          }
          session.Step();
          ++res.val_steps;
          progress.Update(b + 1, "");
        }
        if (seen > 0) {
          res.val_loss = loss_sum / static_cast<double>(seen);
          res.val_accuracy = static_cast<double>(correct) / static_cast<double>(seen);
        }
        progress.End(seen > 0 ? fmt::format("val loss {:.3f}, accuracy {:.1f} %", res.val_loss,
                                            100.0 * res.val_accuracy)
                              : "");
      }
      session.SetStage(Stage::kTrain);
    }
  } catch (const std::exception& e) {
    return InternalError(fmt::format("LibTorch failed during training: {}", e.what()));
  }
  res.stop_signal = g_stop_signal.load();
  return res;
}

}  // namespace trainprof::jobs
