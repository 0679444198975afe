#include "report/run_folder.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <streambuf>
#include <thread>

#include "base/atomic_file.h"
#include "base/text.h"
#include "report/csv.h"
#include "report/html.h"
#include "report/json.h"
#include "report/run_dir_lock.h"
#include "report/terminal.h"

namespace trainprof::report {

// Creates the run folder: output.run_dir as given, else <dir>/<UTC time>-<name>[-N].
StatusOr<std::string> CreateRunDir(const Options::Output& out, int64_t unix_ns) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!out.run_dir.empty()) {
    fs::create_directories(out.run_dir, ec);
    if (ec) {
      return base::ErrnoStatus(
          fmt::format("cannot create run folder {} (output.run_dir)", out.run_dir), ec.value());
    }
    TRAINPROF_RETURN_IF_ERROR(ClaimRunDir(out.run_dir, out.overwrite, /*fresh=*/false));
    return out.run_dir;
  }
  fs::create_directories(out.dir, ec);
  if (ec) {
    return base::ErrnoStatus(fmt::format("cannot create output folder {} (output.dir)", out.dir),
                             ec.value());
  }
  std::string stem = fmt::format("{}/{}-{}", out.dir, base::UtcCompact(unix_ns), out.name);
  for (int i = 1; i < 1000; ++i) {
    std::string dir = i == 1 ? stem : fmt::format("{}-{}", stem, i);
    if (fs::create_directory(dir, ec)) {
      TRAINPROF_RETURN_IF_ERROR(ClaimRunDir(dir, false, /*fresh=*/true));
      return dir;
    }
    if (ec) {
      return base::ErrnoStatus(fmt::format("cannot create run folder {} (output.dir)", dir),
                               ec.value());
    }
  }
  return InvalidArgument(
      fmt::format("cannot create run folder {}: 999 folders of that name", stem));
}

namespace {

// An ostream's buffer that writes through an AtomicFile, so a renderer streams a report of any
// size to its file without holding the text (report.html of 1,000 ranks: 130 MB).
class AtomicFileBuf : public std::streambuf {
 public:
  explicit AtomicFileBuf(base::AtomicFile& f) : f_(f) { setp(buf_, buf_ + sizeof(buf_)); }
  ~AtomicFileBuf() override { Flush(); }

 protected:
  int sync() override {
    Flush();
    return 0;
  }
  int_type overflow(int_type c) override {
    Flush();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n <= epptr() - pptr()) {
      std::memcpy(pptr(), s, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
    } else {
      Flush();
      f_.Write({s, static_cast<size_t>(n)});
    }
    return n;
  }

 private:
  void Flush() {
    if (pptr() > pbase()) f_.Write({pbase(), static_cast<size_t>(pptr() - pbase())});
    setp(buf_, buf_ + sizeof(buf_));
  }
  base::AtomicFile& f_;
  char buf_[1 << 16];
};

}  // namespace

Status WriteRendered(const Renderer& renderer, const Report& r, const std::string& path) {
  base::AtomicFile f;
  TRAINPROF_RETURN_IF_ERROR(f.Open(path));
  {
    AtomicFileBuf buf(f);
    std::ostream out(&buf);
    renderer.Render(r, out);
    out.flush();
  }
  return f.Commit();
}

}  // namespace trainprof::report
