#include "mcp/tool.h"

namespace trainprof::mcp {

Status BadCall(std::string message) { return PermissionDenied(std::move(message)); }

bool IsBadCall(const Status& s) { return s.code() == StatusCode::kPermissionDenied; }

const std::vector<Tool>& Tools() {
  static const std::vector<Tool> tools = {
      AnalyzeTool(), TableTool(), FindingsTool(), ExplainTool(), DiffTool(), RunsTool(),
  };
  return tools;
}

const Tool* FindTool(const std::string& name) {
  for (const Tool& t : Tools())
    if (t.name == name) return &t;
  return nullptr;
}

Json ToolListing(const Tool& t) {
  return {{"name", t.name},
          {"title", t.title},
          {"description", t.description},
          {"inputSchema", t.input_schema},
          {"annotations", {{"readOnlyHint", true}, {"openWorldHint", false}}}};
}

}  // namespace trainprof::mcp
