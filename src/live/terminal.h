// The live view's place on a terminal (issue 57): it owns the bottom rows, and the program's
// own prints scroll above them (a scroll region, as apt's progress bar does), so neither
// garbles the other. End() gives the rows back and leaves the last view printed as lines.
//
//   LiveTerminal term(stderr);          // stderr is a terminal
//   term.Draw({"trainprof live | step 120 ...", "split [DDFFFBBB...] ..."});
//   term.End(last_lines);
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace trainprof::live {

class LiveTerminal {
 public:
  explicit LiveTerminal(std::FILE* out) : out_(out) {}
  // The terminal's width in columns (80 when it cannot say).
  int Columns() const;
  void Draw(const std::vector<std::string>& lines);
  void End(const std::vector<std::string>& lines);

 private:
  void Reserve(int n, int rows);
  std::FILE* out_;
  int rows_ = 0, reserved_ = 0;  // the terminal's rows, and the bottom rows the view owns
};

}  // namespace trainprof::live
