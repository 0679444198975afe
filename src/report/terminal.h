// The terminal renderer: the report as aligned text tables, with units chosen for humans. The
// same text goes to summary.txt.
//
//   std::ostringstream text;
//   report::TerminalRenderer().Render(report, text);
#pragma once

#include "report/renderer.h"

namespace trainprof::report {

class TerminalRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override;
};

// One table as aligned text (title, header, rule, rows, footer, notes), indented by two spaces.
void RenderTableText(const Table& table, std::ostream& out);

}  // namespace trainprof::report
