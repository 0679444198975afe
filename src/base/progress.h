// Progress of the training job on stderr: a live bar on a terminal, a plain line every few
// seconds otherwise (logs, CI), or nothing.
//
//   Progress p("auto");
//   p.Begin("epoch 1/2 train", 300);
//   for (...) p.Update(done, "loss 0.512");
//   p.End();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainprof::base {

class Progress {
 public:
  // mode: "auto" (bar on a terminal, lines otherwise), "bar", "lines" or "off".
  explicit Progress(std::string_view mode);
  // `unit` names what is counted ("MiB"); empty: items, shown as it/s.
  void Begin(std::string label, int64_t total, std::string unit = "");
  void Update(int64_t done, std::string_view extra);
  void End(std::string_view extra = "");
  bool off() const { return mode_ == Mode::kOff; }

 private:
  void Print(bool final, std::string_view extra);

  enum class Mode { kBar, kLines, kOff } mode_;
  std::string label_, unit_;
  int64_t total_ = 0;
  int64_t done_ = 0;
  int64_t begin_ns_ = 0;
  int64_t last_print_ns_ = 0;
  std::string last_extra_;
};

}  // namespace trainprof::base
