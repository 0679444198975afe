#include "jobs/dataset_formats.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <png.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/atomic_file.h"

namespace trainprof::jobs {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kPackedHeader = 32;

std::string SplitDir(const std::string& dir, Split split) {
  return (fs::path(dir) / SplitName(split)).string();
}
std::string PngName(int64_t index) { return fmt::format("{:05d}.png", index); }
std::string PackedPath(const std::string& dir, Split split) {
  return (fs::path(dir) / (std::string(SplitName(split)) + ".packed")).string();
}

// The whole IDX dataset in memory (data.format: idx).
class IdxSource final : public SampleSource {
 public:
  IdxSource(IdxDataset d, std::string dir) : d_(std::move(d)), dir_(std::move(dir)) {
    count_ = d_.count;
    rows_ = d_.rows;
    cols_ = d_.cols;
  }
  Status Read(int64_t index, uint8_t* pixels, int64_t* label) const override {
    std::memcpy(pixels, d_.images.data() + index * this->pixels(),
                static_cast<size_t>(this->pixels()));
    *label = d_.labels[static_cast<size_t>(index)];
    return Status::Ok();
  }
  std::string Describe() const override {
    return fmt::format("idx {} ({} samples, in memory)", dir_, count_);
  }

 private:
  IdxDataset d_;
  std::string dir_;
};

// One PNG per sample, read from disk and decoded on every Read() (data.format: png_dir).
class PngDirSource final : public SampleSource {
 public:
  PngDirSource(std::string dir, std::vector<std::string> files, std::vector<uint8_t> labels)
      : dir_(std::move(dir)), files_(std::move(files)), labels_(std::move(labels)) {
    count_ = static_cast<int64_t>(files_.size());
    rows_ = 28;
    cols_ = 28;
  }
  Status Read(int64_t index, uint8_t* pixels, int64_t* label) const override {
    const std::string path = dir_ + "/" + files_[static_cast<size_t>(index)];
    TRAINPROF_ASSIGN_OR_RETURN(std::string bytes, base::ReadFile(path));
    if (Status s = DecodeGrayPng(bytes, rows_, cols_, pixels); !s.ok()) {
      return InvalidArgument(fmt::format("{}: {}", path, s.message()));
    }
    *label = labels_[static_cast<size_t>(index)];
    return Status::Ok();
  }
  std::string Describe() const override {
    return fmt::format("png_dir {} ({} files, one read and PNG decode per sample)", dir_, count_);
  }

 private:
  std::string dir_;
  std::vector<std::string> files_;
  std::vector<uint8_t> labels_;
};

// Fixed-size records in one memory-mapped file (data.format: packed).
class PackedSource final : public SampleSource {
 public:
  PackedSource(std::string path, const uint8_t* map, size_t size, int64_t count, int64_t rows,
               int64_t cols)
      : path_(std::move(path)), map_(map), size_(size) {
    count_ = count;
    rows_ = rows;
    cols_ = cols;
  }
  ~PackedSource() override { munmap(const_cast<uint8_t*>(map_), size_); }
  Status Read(int64_t index, uint8_t* pixels, int64_t* label) const override {
    const uint8_t* rec = map_ + kPackedHeader + index * (1 + this->pixels());
    *label = rec[0];
    std::memcpy(pixels, rec + 1, static_cast<size_t>(this->pixels()));
    return Status::Ok();
  }
  std::string Describe() const override {
    return fmt::format("packed {} ({} records, memory-mapped)", path_, count_);
  }

 private:
  std::string path_;
  const uint8_t* map_;
  size_t size_;
};

int64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}
void StoreLe64(std::string& out, int64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
}

StatusOr<std::unique_ptr<SampleSource>> OpenPngDir(const std::string& dir, Split split) {
  const std::string split_dir = SplitDir(dir, split);
  const std::string labels_path = split_dir + "/" + kPngLabelsFile;
  if (!fs::exists(labels_path)) {
    return NotFound(
        fmt::format("{} not found: data.format png_dir reads a folder written by "
                    "`trainprof dataset export-png -o {}`",
                    labels_path, dir));
  }
  TRAINPROF_ASSIGN_OR_RETURN(std::string text, base::ReadFile(labels_path));
  std::vector<std::string> files;
  std::vector<uint8_t> labels;
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view row(text.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    if (line == 1 || row.empty()) continue;  // the "file,label" header
    const size_t comma = row.find(',');
    int label = -1;
    if (comma != std::string_view::npos) {
      std::string_view l = row.substr(comma + 1);
      auto r = std::from_chars(l.data(), l.data() + l.size(), label);
      if (r.ec != std::errc() || r.ptr != l.data() + l.size()) label = -1;
    }
    if (comma == 0 || comma == std::string_view::npos || label < 0 || label > 9) {
      return InvalidArgument(
          fmt::format("{}:{}: expected \"file,label\" with a label 0-9, got "
                      "\"{}\"",
                      labels_path, line, row));
    }
    files.emplace_back(row.substr(0, comma));
    labels.push_back(static_cast<uint8_t>(label));
  }
  if (files.empty()) return InvalidArgument(fmt::format("{}: no samples", labels_path));
  return std::unique_ptr<SampleSource>(
      new PngDirSource(split_dir, std::move(files), std::move(labels)));
}

StatusOr<std::unique_ptr<SampleSource>> OpenPacked(const std::string& dir, Split split) {
  const std::string path = PackedPath(dir, split);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return NotFound(
          fmt::format("{} not found: data.format packed reads a file written by "
                      "`trainprof dataset export-packed -o {}`",
                      path, dir));
    }
    return base::ErrnoStatus(path, errno);
  }
  struct stat st {};
  fstat(fd, &st);
  const auto size = static_cast<size_t>(st.st_size);
  void* map =
      size >= kPackedHeader ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  const int err = errno;
  close(fd);
  if (size < kPackedHeader) {
    return InvalidArgument(
        fmt::format("{}: {} bytes, shorter than the 32-byte header", path, size));
  }
  if (map == MAP_FAILED) return base::ErrnoStatus("mmap " + path, err);
  const auto* p = static_cast<const uint8_t*>(map);
  const int64_t count = LoadLe64(p + 8), rows = LoadLe64(p + 16), cols = LoadLe64(p + 24);
  std::string error;
  if (std::memcmp(p, kPackedMagic, 8) != 0) {
    error = fmt::format("{}: not a trainprof packed file (bad magic at byte 0)", path);
  } else if (count <= 0 || rows <= 0 || cols <= 0 || rows > 4096 || cols > 4096) {
    error = fmt::format("{}: bad header: count {}, rows {}, cols {}", path, count, rows, cols);
  } else if (static_cast<int64_t>(size) != kPackedHeader + count * (1 + rows * cols)) {
    error = fmt::format(
        "{}: {} bytes, but the header says {} records of {} bytes ({} bytes): "
        "truncated or not written by this version",
        path, size, count, 1 + rows * cols, kPackedHeader + count * (1 + rows * cols));
  }
  if (!error.empty()) {
    munmap(map, size);
    return InvalidArgument(error);
  }
  return std::unique_ptr<SampleSource>(new PackedSource(path, p, size, count, rows, cols));
}

}  // namespace

const char* SplitName(Split split) { return split == Split::kTrain ? "train" : "test"; }

StatusOr<std::unique_ptr<SampleSource>> OpenSource(const DataConfig& data, Split split) {
  if (data.format == "png_dir") return OpenPngDir(data.dir, split);
  if (data.format == "packed") return OpenPacked(data.dir, split);
  if (data.format != "idx") {
    return InvalidArgument(
        fmt::format("data.format: unknown format \"{}\" (idx, png_dir, packed)", data.format));
  }
  TRAINPROF_ASSIGN_OR_RETURN(IdxDataset d, LoadFashionMnist(data.dir, split));
  return std::unique_ptr<SampleSource>(new IdxSource(std::move(d), data.dir));
}

StatusOr<std::string> EncodeGrayPng(const uint8_t* pixels, int64_t rows, int64_t cols) {
  png_image img;
  std::memset(&img, 0, sizeof(img));
  img.version = PNG_IMAGE_VERSION;
  img.width = static_cast<png_uint_32>(cols);
  img.height = static_cast<png_uint_32>(rows);
  img.format = PNG_FORMAT_GRAY;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, pixels, 0, nullptr)) {
    return InternalError(fmt::format("libpng: {}", img.message));
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, pixels, 0, nullptr)) {
    return InternalError(fmt::format("libpng: {}", img.message));
  }
  out.resize(size);
  return out;
}

Status DecodeGrayPng(std::string_view png, int64_t rows, int64_t cols, uint8_t* out) {
  png_image img;
  std::memset(&img, 0, sizeof(img));
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, png.data(), png.size())) {
    return InvalidArgument(fmt::format("not a PNG ({})", img.message));
  }
  if (img.width != static_cast<png_uint_32>(cols) || img.height != static_cast<png_uint_32>(rows)) {
    png_image_free(&img);
    return InvalidArgument(
        fmt::format("image is {}x{}, expected {}x{}", img.width, img.height, cols, rows));
  }
  img.format = PNG_FORMAT_GRAY;
  if (!png_image_finish_read(&img, nullptr, out, 0, nullptr)) {
    return InvalidArgument(fmt::format("corrupt PNG ({})", img.message));
  }
  return Status::Ok();
}

Status ExportPng(const IdxDataset& d, const std::string& out_dir, Split split,
                 const ExportProgress& progress) {
  const std::string dir = SplitDir(out_dir, split);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return InvalidArgument(fmt::format("cannot create {}: {}", dir, ec.message()));
  // A re-export first drops the old labels file, so a half-written folder is never complete.
  fs::remove(dir + "/" + kPngLabelsFile, ec);
  std::string labels = "file,label\n";
  const int64_t pixels = d.rows * d.cols;
  for (int64_t i = 0; i < d.count; ++i) {
    TRAINPROF_ASSIGN_OR_RETURN(std::string png,
                               EncodeGrayPng(d.images.data() + i * pixels, d.rows, d.cols));
    const std::string name = PngName(i);
    const std::string path = dir + "/" + name;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return base::ErrnoStatus(path, errno);
    const ssize_t n = write(fd, png.data(), png.size());
    const int err = errno;
    if (close(fd) != 0 || n != static_cast<ssize_t>(png.size())) {
      return base::ErrnoStatus(path, n < 0 ? err : ENOSPC);
    }
    labels += fmt::format("{},{}\n", name, d.labels[static_cast<size_t>(i)]);
    if (progress) progress(i + 1, d.count);
  }
  return base::WriteFileAtomically(dir + "/" + kPngLabelsFile, labels);
}

Status ExportPacked(const IdxDataset& d, const std::string& out_dir, Split split,
                    const ExportProgress& progress) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return InvalidArgument(fmt::format("cannot create {}: {}", out_dir, ec.message()));
  const int64_t pixels = d.rows * d.cols;
  std::string out(kPackedMagic, 8);
  out.reserve(static_cast<size_t>(kPackedHeader + d.count * (1 + pixels)));
  StoreLe64(out, d.count);
  StoreLe64(out, d.rows);
  StoreLe64(out, d.cols);
  for (int64_t i = 0; i < d.count; ++i) {
    out.push_back(static_cast<char>(d.labels[static_cast<size_t>(i)]));
    out.append(reinterpret_cast<const char*>(d.images.data() + i * pixels),
               static_cast<size_t>(pixels));
    if (progress && ((i + 1) % 1000 == 0 || i + 1 == d.count)) progress(i + 1, d.count);
  }
  return base::WriteFileAtomically(PackedPath(out_dir, split), out);
}

}  // namespace trainprof::jobs
