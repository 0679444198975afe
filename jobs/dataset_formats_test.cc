#include "jobs/dataset_formats.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "jobs/batch_loader.h"
#include "util/golden.h"

namespace trainprof::jobs {
namespace {

// n 28x28 images whose pixels encode their index, labels i % 10.
IdxDataset Synthetic(int64_t n) {
  IdxDataset d;
  d.count = n;
  d.rows = 28;
  d.cols = 28;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < 28 * 28; ++p)
      d.images.push_back(static_cast<uint8_t>((i * 7 + p) % 256));
    d.labels.push_back(static_cast<uint8_t>(i % 10));
  }
  return d;
}

class DatasetFormats : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testutil::FreshTempDir(); }
  // Every sample of `src` equals the synthetic sample of the same index.
  static void ExpectSameAsSynthetic(const SampleSource& src, const IdxDataset& d) {
    ASSERT_EQ(src.count(), d.count);
    std::vector<uint8_t> px(static_cast<size_t>(src.pixels()));
    for (int64_t i = 0; i < d.count; ++i) {
      int64_t label = -1;
      ASSERT_TRUE(src.Read(i, px.data(), &label).ok());
      EXPECT_EQ(label, d.labels[static_cast<size_t>(i)]);
      EXPECT_TRUE(std::equal(px.begin(), px.end(), d.images.begin() + i * 784)) << "sample " << i;
    }
  }
  std::string dir_;
};

TEST_F(DatasetFormats, PngRoundTripAndBadPngs) {
  IdxDataset d = Synthetic(1);
  auto png = EncodeGrayPng(d.images.data(), 28, 28);
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(png->substr(1, 3), "PNG");
  std::vector<uint8_t> back(784);
  ASSERT_TRUE(DecodeGrayPng(*png, 28, 28, back.data()).ok());
  EXPECT_EQ(back, d.images);
  Status wrong = DecodeGrayPng(*png, 32, 32, back.data());
  EXPECT_NE(wrong.message().find("image is 28x28, expected 32x32"), std::string::npos)
      << wrong.ToString();
  Status garbage = DecodeGrayPng("GIF89a....", 28, 28, back.data());
  EXPECT_NE(garbage.message().find("not a PNG"), std::string::npos) << garbage.ToString();
}

TEST_F(DatasetFormats, PngDirExportReadsBackEverySample) {
  IdxDataset d = Synthetic(25);
  int64_t calls = 0, last = 0;
  ASSERT_TRUE(ExportPng(d, dir_, Split::kTrain, [&](int64_t done, int64_t total) {
                ++calls;
                last = done;
                EXPECT_EQ(total, 25);
              }).ok());
  EXPECT_EQ(calls, 25);
  EXPECT_EQ(last, 25);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/train/00024.png"));
  auto src = OpenSource({dir_, "png_dir", true, 0, 2}, Split::kTrain);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ExpectSameAsSynthetic(**src, d);
  // The test split was not exported: the error names the command that writes it.
  auto missing = OpenSource({dir_, "png_dir", true, 0, 2}, Split::kTest);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("trainprof dataset export-png -o " + dir_),
            std::string::npos)
      << missing.status().ToString();
}

TEST_F(DatasetFormats, PngDirBadLabelsAndMissingFileNameThePlace) {
  IdxDataset d = Synthetic(3);
  ASSERT_TRUE(ExportPng(d, dir_, Split::kTrain, nullptr).ok());
  const std::string labels = dir_ + "/train/labels.csv";
  ASSERT_TRUE(base::WriteFileAtomically(labels, "file,label\n00000.png,3\n00001.png,x\n").ok());
  auto bad = OpenSource({dir_, "png_dir", true, 0, 2}, Split::kTrain);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(labels + ":3: expected \"file,label\""), std::string::npos)
      << bad.status().ToString();

  ASSERT_TRUE(base::WriteFileAtomically(labels, "file,label\n00000.png,3\n00001.png,4\n").ok());
  std::filesystem::remove(dir_ + "/train/00001.png");
  auto src = OpenSource({dir_, "png_dir", true, 0, 2}, Split::kTrain);
  ASSERT_TRUE(src.ok());
  std::vector<uint8_t> px(784);
  int64_t label = 0;
  EXPECT_TRUE((*src)->Read(0, px.data(), &label).ok());
  Status gone = (*src)->Read(1, px.data(), &label);
  EXPECT_NE(gone.ToString().find("00001.png"), std::string::npos) << gone.ToString();
}

TEST_F(DatasetFormats, PackedExportReadsBackAndRejectsTruncation) {
  IdxDataset d = Synthetic(40);
  ASSERT_TRUE(ExportPacked(d, dir_, Split::kTest, nullptr).ok());
  const std::string path = dir_ + "/test.packed";
  EXPECT_EQ(std::filesystem::file_size(path), 32u + 40u * 785u);
  auto src = OpenSource({dir_, "packed", true, 0, 2}, Split::kTest);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  ExpectSameAsSynthetic(**src, d);
  src->reset();

  std::filesystem::resize_file(path, 32 + 39 * 785 + 100);
  auto cut = OpenSource({dir_, "packed", true, 0, 2}, Split::kTest);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status().ToString();
  ASSERT_TRUE(base::WriteFileAtomically(path, std::string(64, 'x')).ok());
  auto foreign = OpenSource({dir_, "packed", true, 0, 2}, Split::kTest);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("bad magic"), std::string::npos);
}

// Every batch of an epoch, labels only (they identify the sample: index % 10 is not unique, so
// the first pixel, (index * 7) % 256, is used with it).
std::vector<std::pair<int64_t, float>> Epoch(BatchLoader& l, int64_t epoch, int64_t limit = 0) {
  std::vector<std::pair<int64_t, float>> out;
  l.StartEpoch(epoch, limit);
  RawBatch b;
  while (true) {
    auto got = l.Next(&b);
    EXPECT_TRUE(got.ok());
    if (!got.ok() || !*got) break;
    for (int64_t i = 0; i < b.n; ++i) {
      out.emplace_back(b.labels[static_cast<size_t>(i)], b.images[static_cast<size_t>(i * 784)]);
    }
  }
  return out;
}

TEST_F(DatasetFormats, LoaderWorkersDeliverTheSameBatchesInOrder) {
  IdxDataset d = Synthetic(103);
  ASSERT_TRUE(ExportPacked(d, dir_, Split::kTrain, nullptr).ok());
  auto src = OpenSource({dir_, "packed", true, 0, 2}, Split::kTrain);
  ASSERT_TRUE(src.ok());
  LoaderOptions o;
  o.batch_size = 10;
  o.shuffle = true;
  o.seed = 7;
  BatchLoader inline_loader(**src, o);
  o.num_workers = 3;
  o.prefetch = 1;
  BatchLoader workers(**src, o);
  EXPECT_EQ(workers.batches(), 11);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    auto a = Epoch(inline_loader, epoch), b = Epoch(workers, epoch);
    EXPECT_EQ(a.size(), 103u);
    EXPECT_EQ(a, b) << "epoch " << epoch;
  }
  EXPECT_NE(Epoch(inline_loader, 0), Epoch(inline_loader, 1));  // reshuffled per epoch
  // An epoch abandoned after 2 of 11 batches, then a limited one.
  workers.StartEpoch(5, 0);
  RawBatch b;
  ASSERT_TRUE(*workers.Next(&b));
  EXPECT_EQ(Epoch(workers, 1, 3).size(), 30u);
  // Normalised with Fashion-MNIST's mean and std: pixel 0 -> -mean / std.
  EXPECT_NEAR(Epoch(workers, 1, 1)[0].second * 0.3530f + 0.2860f,
              static_cast<float>(Epoch(inline_loader, 1, 1)[0].second * 0.3530f + 0.2860f), 1e-6);
}

TEST_F(DatasetFormats, LoaderShardsLikeDistributedSampler) {
  IdxDataset d = Synthetic(21);
  ASSERT_TRUE(ExportPacked(d, dir_, Split::kTrain, nullptr).ok());
  auto src = OpenSource({dir_, "packed", true, 0, 2}, Split::kTrain);
  ASSERT_TRUE(src.ok());
  std::multiset<std::pair<int64_t, float>> seen;
  for (int64_t rank = 0; rank < 2; ++rank) {
    LoaderOptions o;
    o.batch_size = 4;
    o.shuffle = true;
    o.rank = rank;
    o.world_size = 2;
    o.num_workers = rank;  // the shard does not depend on the workers
    BatchLoader l(**src, o);
    EXPECT_EQ(l.shard_size(), 11);
    auto e = Epoch(l, 3);
    EXPECT_EQ(e.size(), 11u);
    seen.insert(e.begin(), e.end());
  }
  // 22 = 21 samples, one padded twice; every sample seen.
  EXPECT_EQ(seen.size(), 22u);
  std::set<std::pair<int64_t, float>> distinct(seen.begin(), seen.end());
  EXPECT_EQ(distinct.size(), 21u);
}

TEST_F(DatasetFormats, LoaderWorkerReadErrorEndsTheEpochWithTheFile) {
  IdxDataset d = Synthetic(30);
  ASSERT_TRUE(ExportPng(d, dir_, Split::kTrain, nullptr).ok());
  std::filesystem::remove(dir_ + "/train/00015.png");
  auto src = OpenSource({dir_, "png_dir", true, 0, 2}, Split::kTrain);
  ASSERT_TRUE(src.ok());
  LoaderOptions o;
  o.batch_size = 10;
  o.num_workers = 2;
  BatchLoader l(**src, o);
  l.StartEpoch(0, 0);
  RawBatch b;
  auto first = l.Next(&b);
  ASSERT_TRUE(first.ok() && *first);
  auto second = l.Next(&b);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().ToString().find("00015.png"), std::string::npos);
  auto after = l.Next(&b);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(*after);
}

}  // namespace
}  // namespace trainprof::jobs
