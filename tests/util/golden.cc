#include "util/golden.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace trainprof::testutil {
namespace {

bool Updating() {
  const char* e = std::getenv("TRAINPROF_UPDATE_GOLDEN");
  return e != nullptr && std::string(e) == "1";
}

std::string GoldenPath(const std::string& name) { return SourceDir() + "/tests/golden/" + name; }

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Compares with placeholders; `path` is the JSON pointer of the value, for the message.
bool JsonMatches(const nlohmann::json& golden, const nlohmann::json& actual,
                 const std::string& path, std::string* why) {
  if (golden.is_string()) {
    const std::string& g = golden.get_ref<const std::string&>();
    if (g == "<any>") return true;
    if (g == "<number>" && actual.is_number()) return true;
    if (g == "<string>" && actual.is_string()) return true;
  }
  if (golden.type() != actual.type() && !(golden.is_number() && actual.is_number())) {
    *why = path + ": expected " + golden.dump() + ", got " + actual.dump();
    return false;
  }
  if (golden.is_object()) {
    for (auto it = golden.begin(); it != golden.end(); ++it) {
      if (!actual.contains(it.key())) {
        *why = path + "/" + it.key() + ": missing";
        return false;
      }
      if (!JsonMatches(it.value(), actual[it.key()], path + "/" + it.key(), why)) return false;
    }
    for (auto it = actual.begin(); it != actual.end(); ++it) {
      if (!golden.contains(it.key())) {
        *why = path + "/" + it.key() + ": not in the golden";
        return false;
      }
    }
    return true;
  }
  if (golden.is_array()) {
    if (golden.size() != actual.size()) {
      *why = path + ": expected " + std::to_string(golden.size()) + " elements, got " +
             std::to_string(actual.size());
      return false;
    }
    for (size_t i = 0; i < golden.size(); ++i) {
      if (!JsonMatches(golden[i], actual[i], path + "/" + std::to_string(i), why)) return false;
    }
    return true;
  }
  if (golden != actual) {
    *why = path + ": expected " + golden.dump() + ", got " + actual.dump();
    return false;
  }
  return true;
}

// The actual value, but wherever the old golden held a placeholder that still matches, the
// placeholder: updating a golden keeps what a reviewer marked as machine-dependent.
nlohmann::json KeepPlaceholders(const nlohmann::json& old, const nlohmann::json& actual) {
  std::string why;
  if (old.is_string() && old.get_ref<const std::string&>().front() == '<' &&
      JsonMatches(old, actual, "", &why)) {
    return old;
  }
  if (old.is_object() && actual.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = actual.begin(); it != actual.end(); ++it) {
      out[it.key()] =
          old.contains(it.key()) ? KeepPlaceholders(old[it.key()], it.value()) : it.value();
    }
    return out;
  }
  if (old.is_array() && actual.is_array() && old.size() == actual.size()) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < actual.size(); ++i) out.push_back(KeepPlaceholders(old[i], actual[i]));
    return out;
  }
  return actual;
}

}  // namespace

std::string SourceDir() { return TRAINPROF_SOURCE_DIR; }

bool SharedTracesPresent() {
  std::error_code ec;
  return std::filesystem::is_directory(SourceDir() + "/../shared/data/traces", ec);
}

namespace {

// Removes, when a test ends, the paths it made under the temp dir; a failed test's are kept for
// a look, and named on stderr. ctest runs hundreds of test processes: without this, every run
// of the suite would leave its folders (some of 200 MB) behind.
class TempPathCleaner : public ::testing::EmptyTestEventListener {
 public:
  static TempPathCleaner& Get() {
    // Appended on first use, from a test's body: gtest owns listeners and deletes them at exit.
    static TempPathCleaner* cleaner = [] {
      auto* c = new TempPathCleaner;
      ::testing::UnitTest::GetInstance()->listeners().Append(c);
      return c;
    }();
    return *cleaner;
  }
  void Add(const std::string& path) { paths_.push_back(path); }

 private:
  void OnTestEnd(const ::testing::TestInfo& info) override {
    for (const std::string& path : paths_) {
      if (info.result()->Failed()) {
        std::cerr << "kept " << path << " of the failed test\n";
        continue;
      }
      std::error_code ec;  // already gone is fine
      std::filesystem::remove_all(path, ec);
    }
    paths_.clear();
  }
  std::vector<std::string> paths_;
};

}  // namespace

std::string RemoveAfterTest(std::string path) {
  TempPathCleaner::Get().Add(path);
  return path;
}

std::string FreshTempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Parameterized tests have '/' in their names: keep the name one path component.
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  }
  const std::string dir =
      ::testing::TempDir() + "/trainprof_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return RemoveAfterTest(dir);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

::testing::AssertionResult MatchesGoldenText(const std::string& name, const std::string& actual) {
  const std::string path = GoldenPath(name);
  if (Updating()) {
    WriteText(path, actual);
    return ::testing::AssertionSuccess() << "updated " << path;
  }
  if (!std::filesystem::exists(path)) {
    return ::testing::AssertionFailure()
           << path << " does not exist; run with TRAINPROF_UPDATE_GOLDEN=1 to create it";
  }
  const std::string golden = ReadText(path);
  if (golden == actual) return ::testing::AssertionSuccess();
  std::istringstream g(golden), a(actual);
  std::string gl, al;
  int line = 1;
  while (true) {
    bool gok = static_cast<bool>(std::getline(g, gl));
    bool aok = static_cast<bool>(std::getline(a, al));
    if (!gok && !aok) break;
    if (gl != al || gok != aok) {
      return ::testing::AssertionFailure()
             << path << ":" << line << " differs\n  golden: " << gl << "\n  actual: " << al;
    }
    ++line;
  }
  return ::testing::AssertionFailure() << path << " differs (line endings)";
}

::testing::AssertionResult MatchesGoldenJson(const std::string& name, const std::string& actual) {
  const std::string path = GoldenPath(name);
  nlohmann::json a;
  try {
    a = nlohmann::json::parse(actual);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "actual output is not JSON: " << e.what();
  }
  if (Updating()) {
    nlohmann::json out = a;
    if (std::filesystem::exists(path)) {
      try {
        out = KeepPlaceholders(nlohmann::json::parse(ReadText(path)), a);
      } catch (const std::exception&) {
      }
    }
    WriteText(path, out.dump(1) + "\n");
    return ::testing::AssertionSuccess() << "updated " << path;
  }
  nlohmann::json g;
  try {
    g = nlohmann::json::parse(ReadText(path));
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << path << ": " << e.what();
  }
  std::string why;
  if (JsonMatches(g, a, "", &why)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << path << ": " << why;
}

int FreeTcpPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

std::string HttpExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    shutdown(fd, SHUT_WR);
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
      out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

}  // namespace trainprof::testutil
