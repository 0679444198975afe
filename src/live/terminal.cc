#include "live/terminal.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace trainprof::live {

namespace {

struct TermSize {
  int rows = 24, cols = 80;
};

TermSize SizeOf(std::FILE* f) {
  struct winsize w {};
  if (ioctl(fileno(f), TIOCGWINSZ, &w) == 0 && w.ws_row > 0 && w.ws_col > 0)
    return {w.ws_row, w.ws_col};
  return {};
}

}  // namespace

int LiveTerminal::Columns() const { return SizeOf(out_).cols; }

// Makes room for `n` rows below the cursor, then limits scrolling to the rows above them.
// DECSTBM homes the cursor, hence the save and restore around it.
void LiveTerminal::Reserve(int n, int rows) {
  std::string s;
  if (n > reserved_)
    s += std::string(static_cast<size_t>(n - reserved_), '\n') +
         fmt::format("\033[{}A", n - reserved_);
  s += fmt::format("\0337\033[1;{}r\0338", rows - n);
  std::fputs(s.c_str(), out_);
  reserved_ = n;
  rows_ = rows;
}

void LiveTerminal::Draw(const std::vector<std::string>& lines) {
  const TermSize size = SizeOf(out_);
  const int n = static_cast<int>(lines.size());
  if (n >= size.rows) return;  // a terminal too short for the view: draw nothing
  if (n != reserved_ || size.rows != rows_) Reserve(n, size.rows);
  std::string s = "\0337";
  for (int i = 0; i < n; ++i)
    s += fmt::format("\033[{};1H\033[2K{}", rows_ - n + 1 + i, lines[static_cast<size_t>(i)]);
  s += "\0338";
  std::fputs(s.c_str(), out_);
  std::fflush(out_);
}

void LiveTerminal::End(const std::vector<std::string>& lines) {
  std::string s;
  // Scrolling over the whole screen again (DECSTBM homes the cursor, hence the save and
  // restore), then the last view printed where the program's output stands, the rows below
  // cleared.
  if (reserved_ > 0) s = "\0337\033[r\0338\033[J";
  for (const std::string& l : lines) s += l + "\n";
  std::fputs(s.c_str(), out_);
  std::fflush(out_);
  reserved_ = 0;
}

}  // namespace trainprof::live
