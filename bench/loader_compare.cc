// The job's BatchLoader against LibTorch's own data loader (torch::data::make_data_loader with
// worker threads and Stack collation), both reading the same SampleSource, in one process:
// samples/s of whole epochs, alternating the two, for each worker count.
//
//   trainprof_loader_compare --format png_dir --dir /tmp/fm-png --workers 0,2 --epochs 3
#include <fmt/format.h>
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>

#include "jobs/batch_loader.h"

namespace {

using trainprof::jobs::SampleSource;

// A LibTorch Dataset over a SampleSource: one normalised [1, rows, cols] tensor per sample.
struct SourceDataset : torch::data::datasets::Dataset<SourceDataset> {
  explicit SourceDataset(const SampleSource* s) : src(s) {}
  torch::data::Example<> get(size_t i) override {
    auto raw = torch::empty({1, src->rows(), src->cols()}, torch::kUInt8);
    int64_t label = 0;
    trainprof::Status st = src->Read(static_cast<int64_t>(i), raw.data_ptr<uint8_t>(), &label);
    if (!st.ok()) throw std::runtime_error(st.ToString());  // LibTorch's loader reports throws
    return {raw.to(torch::kFloat32).div_(255.0).sub_(0.2860).div_(0.3530),
            torch::tensor(label, torch::kInt64)};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(src->count()); }
  const SampleSource* src;
};

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"BatchLoader vs LibTorch's data loader: samples/s of whole epochs"};
  trainprof::jobs::DataConfig data;
  std::vector<int64_t> workers{0, 2};
  int64_t epochs = 3, batch = 64;
  app.add_option("--format", data.format)->capture_default_str();
  app.add_option("--dir", data.dir)->capture_default_str();
  app.add_option("--workers", workers)->delimiter(',');
  app.add_option("--epochs", epochs)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto src = trainprof::jobs::OpenSource(data, trainprof::jobs::Split::kTrain);
  if (!src.ok()) {
    fmt::print(stderr, "error: {}\n", src.status().ToString());
    return 2;
  }
  fmt::print("{} | batch {} | {} epochs each, alternating\n", (*src)->Describe(), batch, epochs);
  fmt::print(
      "| workers | trainprof BatchLoader samples/s | LibTorch DataLoader samples/s | ratio |\n");
  fmt::print("|---|---|---|---|\n");
  for (int64_t w : workers) {
    double ours = 0, theirs = 0;
    int64_t n_ours = 0, n_theirs = 0;
    trainprof::jobs::LoaderOptions o;
    o.batch_size = batch;
    o.shuffle = true;
    o.num_workers = w;
    trainprof::jobs::BatchLoader loader(**src, o);
    auto theirs_loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
        SourceDataset(src->get()).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions()
            .batch_size(static_cast<size_t>(batch))
            .workers(static_cast<size_t>(w)));
    for (int64_t e = 0; e < epochs; ++e) {
      auto t0 = std::chrono::steady_clock::now();
      loader.StartEpoch(e, 0);
      trainprof::jobs::RawBatch b;
      while (*loader.Next(&b)) {
        // As the job: wrap the batch as tensors.
        auto images = torch::from_blob(b.images.data(), {b.n, 1, (*src)->rows(), (*src)->cols()});
        n_ours += images.size(0);
      }
      ours += Seconds(t0);
      t0 = std::chrono::steady_clock::now();
      for (auto& tb : *theirs_loader) n_theirs += tb.data.size(0);
      theirs += Seconds(t0);
    }
    fmt::print("| {} | {:.0f} | {:.0f} | {:.2f}x |\n", w, static_cast<double>(n_ours) / ours,
               static_cast<double>(n_theirs) / theirs,
               (static_cast<double>(n_ours) / ours) / (static_cast<double>(n_theirs) / theirs));
  }
  return 0;
}
