// The one interface every renderer implements: write a Report to a stream. Renderers never
// compute metrics; they only lay out what the Report holds.
//
//   report::TerminalRenderer().Render(report, std::cout);
//   report::JsonRenderer().Render(report, file_stream);
#pragma once

#include <ostream>

#include "report/report.h"

namespace trainprof::report {

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void Render(const Report& report, std::ostream& out) const = 0;
};

}  // namespace trainprof::report
