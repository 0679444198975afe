#include "jobs/idx_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "util/golden.h"

namespace trainprof::jobs {
namespace {

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testutil::FreshTempDir(); }

  static std::vector<uint8_t> Header(uint32_t magic, std::vector<uint32_t> dims) {
    std::vector<uint8_t> h;
    auto be = [&](uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(v >> s));
    };
    be(magic);
    for (uint32_t d : dims) be(d);
    return h;
  }
  std::string WriteGz(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::string path = dir_ + "/" + name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(f);
    return path;
  }
  // Three 2x2 images with labels 0, 9, 4, as train files of a dataset folder.
  void WriteTinyDataset(const char* prefix, uint8_t bad_label = 4) {
    auto img = Header(0x803, {3, 2, 2});
    for (int i = 0; i < 12; ++i) img.push_back(static_cast<uint8_t>(i * 20));
    WriteGz(std::string(prefix) + "-images-idx3-ubyte.gz", img);
    auto lab = Header(0x801, {3});
    lab.insert(lab.end(), {0, 9, bad_label});
    WriteGz(std::string(prefix) + "-labels-idx1-ubyte.gz", lab);
  }

  std::string dir_;
};

TEST_F(IdxTest, ReadsImagesAndLabels) {
  WriteTinyDataset("train");
  auto d = LoadFashionMnist(dir_, Split::kTrain);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->count, 3);
  EXPECT_EQ(d->rows, 2);
  EXPECT_EQ(d->cols, 2);
  ASSERT_EQ(d->images.size(), 12u);
  EXPECT_EQ(d->images[11], 220);
  EXPECT_EQ(d->labels, (std::vector<uint8_t>{0, 9, 4}));
}

TEST_F(IdxTest, BadMagicIsNamed) {
  auto bytes = Header(0x801, {3, 2, 2});
  bytes.resize(bytes.size() + 12);
  std::string p = WriteGz("x.gz", bytes);
  int64_t n, r, c;
  auto got = ReadIdxImages(p, &n, &r, &c);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), p + ": not an IDX image file: magic number 0x00000801 at byte "
                                        "0, expected 0x00000803");
}

TEST_F(IdxTest, TruncatedPayloadIsDataLoss) {
  auto bytes = Header(0x803, {3, 2, 2});
  bytes.resize(bytes.size() + 7);  // 12 bytes promised
  std::string p = WriteGz("t.gz", bytes);
  int64_t n, r, c;
  auto got = ReadIdxImages(p, &n, &r, &c);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(), p + ": truncated: the header promises 12 bytes of image data, "
                                        "the file ends after 7");
}

TEST_F(IdxTest, TruncatedHeaderIsDataLoss) {
  std::string p = WriteGz("h.gz", {0, 0, 8, 1, 0});
  int64_t n;
  auto got = ReadIdxLabels(p, &n);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("the IDX header needs 8 bytes, the file has 5"),
            std::string::npos);
}

TEST_F(IdxTest, TrailingBytesAreWrongSize) {
  auto bytes = Header(0x801, {2});
  bytes.insert(bytes.end(), {1, 2, 3});
  std::string p = WriteGz("l.gz", bytes);
  int64_t n;
  auto got = ReadIdxLabels(p, &n);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("wrong size: data continues past the 2 bytes"),
            std::string::npos);
}

TEST_F(IdxTest, CorruptGzipIsDataLoss) {
  // A gzip header followed by bytes that are not a deflate stream.
  std::string p = dir_ + "/c.gz";
  std::ofstream(p, std::ios::binary)
      << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) << std::string(64, '\xff');
  int64_t n;
  auto got = ReadIdxLabels(p, &n);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find(p + ": corrupt gzip data"), std::string::npos)
      << got.status().message();
}

TEST_F(IdxTest, MissingDatasetNamesThePackageAndKey) {
  auto got = LoadFashionMnist(dir_ + "/nowhere", Split::kTest);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("apt-get install dataset-fashion-mnist"),
            std::string::npos);
  EXPECT_NE(got.status().message().find("data.dir"), std::string::npos);
  EXPECT_NE(got.status().message().find("t10k-images-idx3-ubyte.gz"), std::string::npos);
}

TEST_F(IdxTest, LabelOutOfRangeIsNamedWithItsByte) {
  WriteTinyDataset("t10k", 12);
  auto got = LoadFashionMnist(dir_, Split::kTest);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("label 2 at byte 10 is 12, expected 0-9"),
            std::string::npos);
}

// The dataset Debian ships (installed by scripts/install-deps.sh).
TEST(FashionMnist, DebianPackageLoads) {
  auto test = LoadFashionMnist(kFashionMnistDir, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(test->count, 10000);
  EXPECT_EQ(test->rows, 28);
  EXPECT_EQ(test->cols, 28);
  int64_t per_class[10] = {0};
  for (uint8_t l : test->labels) ++per_class[l];
  for (int64_t c : per_class) EXPECT_EQ(c, 1000);  // Fashion-MNIST's test split is balanced
}

}  // namespace
}  // namespace trainprof::jobs
