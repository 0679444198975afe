// Reads the IDX files of MNIST-style datasets (Fashion-MNIST as Debian's dataset-fashion-mnist
// ships it), gzip-compressed or not, checking the magic number, the dimensions and the size.
//
//   StatusOr<jobs::IdxDataset> train = jobs::LoadFashionMnist("/usr/share/datasets/fashion-mnist",
//                                                             jobs::Split::kTrain);
//   const uint8_t* first_image = train->images.data();   // rows * cols bytes per image
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::jobs {

struct IdxDataset {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> images;  // count * rows * cols, row-major
  std::vector<uint8_t> labels;  // count
};

// Reads an IDX image file (magic 0x00000803) or label file (0x00000801). Errors name the file
// and say what is wrong: missing, not IDX (bad magic), truncated, trailing bytes, corrupt gzip.
StatusOr<std::vector<uint8_t>> ReadIdxImages(const std::string& path, int64_t* count, int64_t* rows,
                                             int64_t* cols);
StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path, int64_t* count);

enum class Split { kTrain, kTest };
inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Loads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz and checks they agree (same
// count, labels 0-9). A missing folder or file names the Debian package to install.
StatusOr<IdxDataset> LoadFashionMnist(const std::string& dir, Split split);

}  // namespace trainprof::jobs
