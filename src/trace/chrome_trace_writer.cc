#include "trace/chrome_trace_writer.h"

#include <charconv>
#include <cmath>

#include "base/text.h"

namespace trainprof::trace {
namespace {

constexpr size_t kFlushBytes = 1 << 20;

void AppendInt(std::string& out, int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof(tmp), v);
  out.append(tmp, r.ptr);
}

}  // namespace

Status ChromeTraceWriter::Open(const std::string& path) {
  TRAINPROF_RETURN_IF_ERROR(file_.Open(path));
  target_ = nullptr;
  buf_.clear();
  buf_.reserve(kFlushBytes + 4096);
  buf_ += "{\"traceEvents\":[\n";
  first_ = true;
  open_ = true;
  return Status::Ok();
}

void ChromeTraceWriter::OpenString(std::string* out) {
  target_ = out;
  buf_.clear();
  buf_ += "{\"traceEvents\":[\n";
  first_ = true;
  open_ = true;
}

NameId ChromeTraceWriter::InternName(std::string_view name) {
  std::string escaped;
  base::AppendJsonEscaped(escaped, name);
  names_.push_back(std::move(escaped));
  return static_cast<NameId>(names_.size() - 1);
}

void ChromeTraceWriter::BeginEvent() {
  if (!first_) buf_ += ",\n";
  first_ = false;
}

void ChromeTraceWriter::AppendTimeUs(int64_t ns) {
  if (ns < 0) {
    buf_ += '-';
    ns = -ns;
  }
  AppendInt(buf_, ns / 1000);
  const int64_t frac = ns % 1000;
  if (frac != 0) {
    char d[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10)};
    buf_.append(d, 4);
  }
}

void ChromeTraceWriter::MaybeFlush() {
  if (buf_.size() < kFlushBytes) return;
  bytes_ += buf_.size();
  if (target_ != nullptr) {
    target_->append(buf_);
  } else {
    file_.Write(buf_);
  }
  buf_.clear();
}

void ChromeTraceWriter::ProcessName(int64_t pid, std::string_view name) {
  BeginEvent();
  buf_ += R"({"name":"process_name","ph":"M","pid":)";
  AppendInt(buf_, pid);
  buf_ += R"(,"tid":0,"args":{"name":")";
  base::AppendJsonEscaped(buf_, name);
  buf_ += "\"}}";
}

void ChromeTraceWriter::ThreadName(int64_t pid, int64_t tid, std::string_view name) {
  BeginEvent();
  buf_ += R"({"name":"thread_name","ph":"M","pid":)";
  AppendInt(buf_, pid);
  buf_ += R"(,"tid":)";
  AppendInt(buf_, tid);
  buf_ += R"(,"args":{"name":")";
  base::AppendJsonEscaped(buf_, name);
  buf_ += "\"}}";
}

void ChromeTraceWriter::Complete(NameId name, std::string_view cat, int64_t ts_ns, int64_t dur_ns,
                                 int64_t pid, int64_t tid, int64_t step, std::string_view args) {
  BeginEvent();
  buf_ += R"({"ph":"X","cat":")";
  buf_ += cat;
  buf_ += R"(","name":")";
  buf_ += names_[name];
  buf_ += R"(","pid":)";
  AppendInt(buf_, pid);
  buf_ += R"(,"tid":)";
  AppendInt(buf_, tid);
  buf_ += R"(,"ts":)";
  AppendTimeUs(ts_ns);
  buf_ += R"(,"dur":)";
  AppendTimeUs(dur_ns);
  if (step >= 0 || !args.empty()) {
    buf_ += R"(,"args":{)";
    if (step >= 0) {
      buf_ += R"("step":)";
      AppendInt(buf_, step);
      if (!args.empty()) buf_ += ',';
    }
    buf_ += args;
    buf_ += "}}";
  } else {
    buf_ += '}';
  }
  MaybeFlush();
}

void ChromeTraceWriter::Counter(std::string_view name, int64_t ts_ns, int64_t pid, double value) {
  BeginEvent();
  buf_ += R"({"ph":"C","name":")";
  base::AppendJsonEscaped(buf_, name);
  buf_ += R"(","pid":)";
  AppendInt(buf_, pid);
  buf_ += R"(,"ts":)";
  AppendTimeUs(ts_ns);
  buf_ += R"(,"args":{"value":)";
  if (std::isfinite(value)) {
    char tmp[32];
    auto r = std::to_chars(tmp, tmp + sizeof(tmp), value);
    buf_.append(tmp, r.ptr);
  } else {
    buf_ += '0';
  }
  buf_ += "}}";
  MaybeFlush();
}

void ChromeTraceWriter::Flow(uint64_t id, int64_t ts_ns, int64_t pid, int64_t tid, bool start) {
  BeginEvent();
  buf_ += start ? R"({"ph":"s")" : R"({"ph":"f","bp":"e")";
  buf_ += R"(,"cat":"ac2g","name":"ac2g","id":)";
  AppendInt(buf_, static_cast<int64_t>(id));
  buf_ += R"(,"pid":)";
  AppendInt(buf_, pid);
  buf_ += R"(,"tid":)";
  AppendInt(buf_, tid);
  buf_ += R"(,"ts":)";
  AppendTimeUs(ts_ns);
  buf_ += '}';
  MaybeFlush();
}

void ChromeTraceWriter::OtherData(std::string key, std::string value) {
  other_.emplace_back(std::move(key), std::move(value));
}

void ChromeTraceWriter::TopLevel(std::string key, std::string json) {
  top_.emplace_back(std::move(key), std::move(json));
}

Status ChromeTraceWriter::Close() {
  if (!open_) return InternalError("trace writer: Close() without Open()");
  open_ = false;
  buf_ += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{";
  for (size_t i = 0; i < other_.size(); ++i) {
    if (i > 0) buf_ += ',';
    buf_ += '"';
    base::AppendJsonEscaped(buf_, other_[i].first);
    buf_ += "\":\"";
    base::AppendJsonEscaped(buf_, other_[i].second);
    buf_ += '"';
  }
  buf_ += '}';
  for (const auto& [key, json] : top_) {
    buf_ += ",\"";
    base::AppendJsonEscaped(buf_, key);
    buf_ += "\":";
    buf_ += json;
  }
  buf_ += "}\n";
  bytes_ += buf_.size();
  if (target_ != nullptr) {
    target_->append(buf_);
    buf_.clear();
    return Status::Ok();
  }
  file_.Write(buf_);
  buf_.clear();
  return file_.Commit();
}

}  // namespace trainprof::trace
