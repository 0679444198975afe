#include "base/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "base/clock.h"

namespace trainprof::base {
namespace {
constexpr int64_t kBarIntervalNs = 100'000'000;     // redraw the bar at most 10 times a second
constexpr int64_t kLineIntervalNs = 5'000'000'000;  // a plain line every 5 s
constexpr int kBarWidth = 24;
}  // namespace

Progress::Progress(std::string_view mode) {
  if (mode == "off") {
    mode_ = Mode::kOff;
  } else if (mode == "bar" || (mode == "auto" && isatty(STDERR_FILENO))) {
    mode_ = Mode::kBar;
  } else {
    mode_ = Mode::kLines;
  }
}

void Progress::Begin(std::string label, int64_t total, std::string unit) {
  label_ = std::move(label);
  unit_ = std::move(unit);
  total_ = total;
  done_ = 0;
  begin_ns_ = last_print_ns_ = base::SteadyNowNs();
  last_extra_.clear();
}

void Progress::Update(int64_t done, std::string_view extra) {
  done_ = done;
  if (mode_ == Mode::kOff) return;
  const int64_t now = base::SteadyNowNs();
  if (now - last_print_ns_ < (mode_ == Mode::kBar ? kBarIntervalNs : kLineIntervalNs)) return;
  last_print_ns_ = now;
  last_extra_ = std::string(extra);
  Print(false, extra);
}

void Progress::End(std::string_view extra) {
  if (mode_ == Mode::kOff) return;
  Print(true, extra.empty() ? std::string_view(last_extra_) : extra);
}

void Progress::Print(bool final, std::string_view extra) {
  const double elapsed = static_cast<double>(base::SteadyNowNs() - begin_ns_) * 1e-9;
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  std::string tail = fmt::format("{:.1f} {}/s", rate, unit_.empty() ? "it" : unit_);
  if (!final && rate > 0 && done_ < total_)
    tail += fmt::format(", about {:.0f} s left", static_cast<double>(total_ - done_) / rate);
  if (!extra.empty()) tail += fmt::format(", {}", extra);
  const std::string unit = unit_.empty() ? "" : " " + unit_;
  if (mode_ == Mode::kBar) {
    const int filled =
        total_ > 0 ? static_cast<int>(kBarWidth * std::min<int64_t>(done_, total_) / total_) : 0;
    fmt::print(stderr, "\r{} {:>5}/{}{} [{}{}] {}\x1b[K{}", label_, done_, total_, unit,
               std::string(filled, '#'), std::string(kBarWidth - filled, '.'), tail,
               final ? "\n" : "");
  } else {
    const double pct = total_ > 0 ? 100.0 * static_cast<double>(done_) / total_ : 100.0;
    fmt::print(stderr, "{} {}/{}{} ({:.0f} %), {}\n", label_, done_, total_, unit, pct, tail);
  }
  std::fflush(stderr);
}

}  // namespace trainprof::base
