// The pieces of the Model Context Protocol (modelcontextprotocol.io, 2025-06-18) that
// `trainprof mcp` speaks: JSON-RPC 2.0 messages, one per line on stdin and stdout.
//
//   out << Response(id, {{"tools", list}}).dump() << '\n';
//   out << ErrorResponse(id, {kInvalidParams, "limit: expected an integer"}).dump() << '\n';
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trainprof::mcp {

using Json = nlohmann::ordered_json;

// The protocol versions this server speaks, newest first: a client asking for one of them gets
// it, any other client the first.
inline const std::vector<std::string> kProtocolVersions = {"2025-11-25", "2025-06-18",
                                                           "2025-03-26"};

// JSON-RPC 2.0's error codes.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// MCP's: a resource that does not exist.
inline constexpr int kResourceNotFound = -32002;

struct RpcError {
  int code = kInternalError;
  std::string message;
};

// The most characters of an error's message: an error that quotes a client's argument (a 5 MB
// path) quotes it cut short, so no reply outgrows the results' cap (Limits::max_chars).
inline constexpr size_t kMaxErrorChars = 2000;
// `message` cut to kMaxErrorChars, saying how much was cut.
std::string ErrorText(std::string_view message);

Json Response(const Json& id, Json result);
Json ErrorResponse(const Json& id, const RpcError& e);  // its message cut by ErrorText
Json Request(const Json& id, const std::string& method, Json params);
Json Notification(const std::string& method, Json params);

// One line of the stream: the message without a newline; invalid UTF-8 (a kernel name cut in
// the middle of a character) replaced, never a throw.
std::string Line(const Json& message);

// A tool's result: its structured content, and the same as JSON text for clients that read only
// text (the protocol asks for both).
Json ToolResult(Json structured);
// A tool that ran and failed (a trace that cannot be read): the message as text, isError set.
Json ToolError(const std::string& message);  // cut by ErrorText

}  // namespace trainprof::mcp
