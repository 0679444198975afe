// Status and StatusOr<T>: how trainprof reports expected failures (bad file, bad config, missing
// dataset). Nothing in trainprof throws for those; functions return one of these instead.
//
//   trainprof::StatusOr<Options> opts = trainprof::LoadOptionsFile("x.yaml");
//   if (!opts.ok()) { fmt::print(stderr, "{}\n", opts.status().ToString()); return 2; }
//   Use(*opts);
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace trainprof {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad config value, bad flag, malformed input file
  kNotFound,            // a file or dataset that is not there
  kDataLoss,            // a truncated or corrupt file
  kFailedPrecondition,  // e.g. a second active Session
  kPermissionDenied,    // output folder not writable
  kCancelled,           // stopped by Ctrl-C / SIGTERM
  kInternal,
  kUnavailable,    // another rank or the store is gone, or did not answer in time
  kUnimplemented,  // a feature this build does not have (e.g. NCCL without CUDA LibTorch)
};

// The name of a code ("invalid argument", ...).
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The message alone (it already names the file and place); "ok" when ok.
  std::string ToString() const { return ok() ? std::string("ok") : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status UnimplementedError(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<0>(v_).ok()); }  // NOLINT
  StatusOr(T value) : v_(std::move(value)) {}                                         // NOLINT

  bool ok() const { return v_.index() == 1; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<0>(v_);
  }
  T& value() & { return std::get<1>(v_); }
  const T& value() const& { return std::get<1>(v_); }
  T&& value() && { return std::get<1>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace trainprof

#define TRAINPROF_CONCAT_INNER_(a, b) a##b
#define TRAINPROF_CONCAT_(a, b) TRAINPROF_CONCAT_INNER_(a, b)

#define TRAINPROF_RETURN_IF_ERROR(expr)                    \
  do {                                                     \
    ::trainprof::Status trainprof_status_ = (expr);        \
    if (!trainprof_status_.ok()) return trainprof_status_; \
  } while (0)

#define TRAINPROF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(tmp).value()

#define TRAINPROF_ASSIGN_OR_RETURN(lhs, expr) \
  TRAINPROF_ASSIGN_OR_RETURN_IMPL_(TRAINPROF_CONCAT_(trainprof_statusor_, __LINE__), lhs, expr)
