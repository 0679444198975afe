// The three layouts the built-in job reads Fashion-MNIST from (data.format), as the PyTorch
// profiler tutorial compares them:
//   idx      the packed .gz files, decompressed into memory once;
//   png_dir  one PNG file per sample plus labels.csv, read and decoded on every access, as the
//            tutorial's Dataset does ("one small file per sample");
//   packed   one uncompressed file per split, fixed-size records, memory-mapped.
// `trainprof dataset export-png` and `export-packed` write the last two from the first.
//
//   auto src = jobs::OpenSource({.dir = "/tmp/fm-png", .format = "png_dir"}, jobs::Split::kTrain);
//   std::vector<uint8_t> pixels((*src)->pixels());
//   int64_t label;
//   TRAINPROF_RETURN_IF_ERROR((*src)->Read(17, pixels.data(), &label));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "jobs/idx_dataset.h"
#include "jobs/job_config.h"
#include "trainprof/status.h"

namespace trainprof::jobs {

// Samples of one split, read by index. Read() is safe to call from several threads at once.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  int64_t count() const { return count_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t pixels() const { return rows_ * cols_; }
  // Copies sample `index` (0 <= index < count()): pixels() bytes, row-major, and its label.
  // Errors name the file and what is wrong with it (unreadable, not a PNG, wrong size).
  virtual Status Read(int64_t index, uint8_t* pixels, int64_t* label) const = 0;
  // "png_dir /tmp/fm-png/train (60,000 files)"
  virtual std::string Describe() const = 0;

 protected:
  int64_t count_ = 0, rows_ = 0, cols_ = 0;
};

// Opens one split in data.format from data.dir. Errors: a missing folder or file (naming the
// export command that makes it), a malformed labels.csv (file and line), a packed file with a
// bad header or size.
StatusOr<std::unique_ptr<SampleSource>> OpenSource(const DataConfig& data, Split split);

// Encodes an 8-bit grayscale image as PNG / decodes one, checking its size. Errors: libpng's
// message, or the size found.
StatusOr<std::string> EncodeGrayPng(const uint8_t* pixels, int64_t rows, int64_t cols);
Status DecodeGrayPng(std::string_view png, int64_t rows, int64_t cols, uint8_t* out);

// Called after each sample written: (samples done, samples in all).
using ExportProgress = std::function<void(int64_t done, int64_t total)>;
inline constexpr const char* kPngLabelsFile = "labels.csv";
inline constexpr const char* kPackedMagic = "TPPACK01";

// Writes <out>/<split>/NNNNN.png for every sample and then <out>/<split>/labels.csv
// ("file,label"), which marks the split complete. Errors name the file that failed.
Status ExportPng(const IdxDataset& d, const std::string& out_dir, Split split,
                 const ExportProgress& progress);
// Writes <out>/<split>.packed: a 32-byte header (magic "TPPACK01", count, rows, cols as
// little-endian int64) and count records of 1 label byte + rows*cols pixel bytes.
Status ExportPacked(const IdxDataset& d, const std::string& out_dir, Split split,
                    const ExportProgress& progress);

const char* SplitName(Split split);  // "train", "test"

}  // namespace trainprof::jobs
