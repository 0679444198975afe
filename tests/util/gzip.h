// gzip for tests: compress text into one gzip member, or read a .gz file whole.
//
//   std::string gz = testutil::GzipText(json);   // concatenated members make one valid file
//   std::string json = testutil::GunzipFile("trace.json.gz");
#pragma once

#include <string>

namespace trainprof::testutil {

// One gzip member holding `text` (best compression).
std::string GzipText(const std::string& text);
// The decompressed contents of a gzip file; empty when it cannot be read.
std::string GunzipFile(const std::string& path);

}  // namespace trainprof::testutil
