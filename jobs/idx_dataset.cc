#include "jobs/idx_dataset.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/atomic_file.h"

namespace trainprof::jobs {
namespace {

constexpr uint32_t kImageMagic = 0x00000803;
constexpr uint32_t kLabelMagic = 0x00000801;

// A gzip (or plain) file read through zlib, with errors that name the file.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {}
  ~GzReader() {
    if (f_ != nullptr) gzclose(f_);
  }
  Status Open() {
    errno = 0;
    f_ = gzopen(path_.c_str(), "rb");
    if (f_ == nullptr) return base::ErrnoStatus(fmt::format("cannot read {}", path_), errno);
    gzbuffer(f_, 1 << 17);
    return Status::Ok();
  }
  // Reads up to n bytes; returns how many were read, or an error for corrupt data.
  StatusOr<size_t> Read(void* dst, size_t n) {
    size_t done = 0;
    auto* p = static_cast<uint8_t*>(dst);
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(f_, p + done, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(f_, &errnum);
        return DataLoss(fmt::format("{}: corrupt gzip data after {} bytes: {}", path_,
                                    offset_ + done, msg ? msg : "unknown error"));
      }
      if (got == 0) {
        int errnum = 0;
        const char* msg = gzerror(f_, &errnum);
        if (errnum != Z_OK && errnum != Z_STREAM_END) {
          return DataLoss(fmt::format("{}: corrupt gzip data after {} bytes: {}", path_,
                                      offset_ + done, msg ? msg : "unknown error"));
        }
        break;
      }
      done += static_cast<size_t>(got);
    }
    offset_ += done;
    return done;
  }
  const std::string& path() const { return path_; }
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  gzFile f_ = nullptr;
  uint64_t offset_ = 0;
};

uint32_t BigEndian32(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// Reads the magic and `ndims` dimensions, checks the magic, then exactly the payload.
StatusOr<std::vector<uint8_t>> ReadIdx(const std::string& path, uint32_t magic, int ndims,
                                       const char* what, std::vector<int64_t>* dims) {
  GzReader r(path);
  TRAINPROF_RETURN_IF_ERROR(r.Open());
  uint8_t header[16];
  const size_t header_size = 4 + 4 * static_cast<size_t>(ndims);
  TRAINPROF_ASSIGN_OR_RETURN(size_t got, r.Read(header, header_size));
  if (got >= 4 && BigEndian32(header) != magic) {
    return InvalidArgument(
        fmt::format("{}: not an IDX {} file: magic number 0x{:08x} at byte 0, "
                    "expected 0x{:08x}",
                    path, what, BigEndian32(header), magic));
  }
  if (got < header_size) {
    return DataLoss(fmt::format("{}: truncated: the IDX header needs {} bytes, the file has {}",
                                path, header_size, got));
  }
  uint64_t total = 1;
  dims->clear();
  for (int i = 0; i < ndims; ++i) {
    uint32_t d = BigEndian32(header + 4 + 4 * i);
    if (d == 0 || d > (1u << 28)) {
      return InvalidArgument(fmt::format("{}: dimension {} is {} at byte {}: not a plausible size",
                                         path, i, d, 4 + 4 * i));
    }
    dims->push_back(d);
    total *= d;
    if (total > (uint64_t{1} << 34)) {
      return InvalidArgument(fmt::format("{}: dimensions claim over 16 GiB of data", path));
    }
  }
  std::vector<uint8_t> data(total);
  TRAINPROF_ASSIGN_OR_RETURN(got, r.Read(data.data(), data.size()));
  if (got < total) {
    return DataLoss(
        fmt::format("{}: truncated: the header promises {} bytes of {} data, the file "
                    "ends after {}",
                    path, total, what, got));
  }
  uint8_t extra;
  TRAINPROF_ASSIGN_OR_RETURN(got, r.Read(&extra, 1));
  if (got != 0) {
    return DataLoss(
        fmt::format("{}: wrong size: data continues past the {} bytes the header "
                    "promises (byte {})",
                    path, total, header_size + total));
  }
  return data;
}

}  // namespace

StatusOr<std::vector<uint8_t>> ReadIdxImages(const std::string& path, int64_t* count, int64_t* rows,
                                             int64_t* cols) {
  std::vector<int64_t> dims;
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<uint8_t> data,
                             ReadIdx(path, kImageMagic, 3, "image", &dims));
  *count = dims[0];
  *rows = dims[1];
  *cols = dims[2];
  return data;
}

StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path, int64_t* count) {
  std::vector<int64_t> dims;
  TRAINPROF_ASSIGN_OR_RETURN(std::vector<uint8_t> data,
                             ReadIdx(path, kLabelMagic, 1, "label", &dims));
  *count = dims[0];
  return data;
}

StatusOr<IdxDataset> LoadFashionMnist(const std::string& dir, Split split) {
  const char* prefix = split == Split::kTrain ? "train" : "t10k";
  std::string images = fmt::format("{}/{}-images-idx3-ubyte.gz", dir, prefix);
  std::string labels = fmt::format("{}/{}-labels-idx1-ubyte.gz", dir, prefix);
  for (const std::string& p : {images, labels}) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) {
      return NotFound(fmt::format(
          "Fashion-MNIST not found: {} is missing; install it with 'apt-get install {}' or set "
          "data.dir to a folder holding {}-images-idx3-ubyte.gz and {}-labels-idx1-ubyte.gz",
          p, kFashionMnistPackage, prefix, prefix));
    }
  }
  IdxDataset d;
  TRAINPROF_ASSIGN_OR_RETURN(d.images, ReadIdxImages(images, &d.count, &d.rows, &d.cols));
  int64_t nlabels = 0;
  TRAINPROF_ASSIGN_OR_RETURN(d.labels, ReadIdxLabels(labels, &nlabels));
  if (nlabels != d.count) {
    return InvalidArgument(
        fmt::format("{} holds {} labels but {} holds {} images", labels, nlabels, images, d.count));
  }
  for (size_t i = 0; i < d.labels.size(); ++i) {
    if (d.labels[i] > 9) {
      return InvalidArgument(fmt::format("{}: label {} at byte {} is {}, expected 0-9", labels, i,
                                         8 + i, d.labels[i]));
    }
  }
  return d;
}

}  // namespace trainprof::jobs
