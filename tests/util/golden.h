// Golden-file checks for tests. A golden lives in tests/golden/<name>; run the tests with
// TRAINPROF_UPDATE_GOLDEN=1 (scripts/update-goldens.sh) to rewrite them from the actual output, so
// a reviewer sees the change as a diff.
//
//   EXPECT_TRUE(testutil::MatchesGoldenText("report_terminal.txt", text));
//   EXPECT_TRUE(testutil::MatchesGoldenJson("session_report.json", json_text));
//
// JSON goldens are compared after parsing, never byte for byte. In a JSON golden the string
// "<number>" matches any number, "<string>" any string, "<any>" anything, so values that depend
// on the machine (durations, host names) stay out of the file.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace trainprof::testutil {

// The folder with the project's sources (TRAINPROF_SOURCE_DIR).
std::string SourceDir();
// True when ../shared/data/traces (third-party traces with HTA's answers, for the conformance
// tests) is beside the checkout; a clone with nothing beside it has none.
bool SharedTracesPresent();
// A fresh empty folder under the test temp dir, named after the running test, removed when the
// test passes (kept when it fails).
std::string FreshTempDir();
// A loopback port the kernel just picked as free.
int FreeTcpPort();
// Sends `request` to 127.0.0.1:port, says it is done (shuts the writing side), and returns all
// the server answered until it closed ("" when nothing answers).
std::string HttpExchange(int port, const std::string& request);
// Has `path` (a file or folder) removed when the running test passes; returns it.
std::string RemoveAfterTest(std::string path);
std::string ReadText(const std::string& path);

::testing::AssertionResult MatchesGoldenText(const std::string& name, const std::string& actual);
::testing::AssertionResult MatchesGoldenJson(const std::string& name, const std::string& actual);

}  // namespace trainprof::testutil

// Skips the test, saying why, when the shared third-party traces are not there.
#define TRAINPROF_SKIP_WITHOUT_SHARED_TRACES()                                                  \
  if (!::trainprof::testutil::SharedTracesPresent())                                            \
  GTEST_SKIP() << "skipped: ../shared/data/traces (the third-party conformance traces) is not " \
                  "beside this checkout"
