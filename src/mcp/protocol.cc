#include "mcp/protocol.h"

#include <fmt/format.h>

#include <utility>

#include "base/text.h"

namespace trainprof::mcp {

Json Response(const Json& id, Json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

std::string ErrorText(std::string_view message) {
  if (message.size() <= kMaxErrorChars) return std::string(message);
  return fmt::format("{} [... {} more characters]", base::Ellipsize(message, kMaxErrorChars),
                     message.size() - (kMaxErrorChars - 3));  // Ellipsize keeps max - 3
}

Json ErrorResponse(const Json& id, const RpcError& e) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", e.code}, {"message", ErrorText(e.message)}}}};
}

Json Request(const Json& id, const std::string& method, Json params) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

Json Notification(const std::string& method, Json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string Line(const Json& message) {
  return message.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json ToolResult(Json structured) {
  Json text = {{"type", "text"}, {"text", Line(structured)}};
  return {{"content", Json::array({std::move(text)})},
          {"structuredContent", std::move(structured)}};
}

Json ToolError(const std::string& message) {
  return {{"content", Json::array({{{"type", "text"}, {"text", ErrorText(message)}}})},
          {"isError", true}};
}

}  // namespace trainprof::mcp
