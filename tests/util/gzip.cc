#include "util/gzip.h"

#include <zlib.h>

namespace trainprof::testutil {

std::string GzipText(const std::string& text) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string GunzipFile(const std::string& path) {
  gzFile z = gzopen(path.c_str(), "rb");
  if (z == nullptr) return "";
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(z, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  gzclose(z);
  return text;
}

}  // namespace trainprof::testutil
