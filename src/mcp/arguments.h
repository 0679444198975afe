// A tool's arguments checked against the JSON Schema it publishes in tools/list, so what a client
// is told and what the server accepts are one thing. The schemas use a small part of JSON Schema:
// an object's properties, required and additionalProperties: false; a property's type (string,
// integer, number, boolean, array with items, object), enum, minimum, maximum,
// exclusiveMinimum, and anyOf.
//
//   Status s = CheckArguments(tool.input_schema, args);   // "limit: expected an integer, got "x""
#pragma once

#include <string>

#include "mcp/protocol.h"
#include "trainprof/status.h"

namespace trainprof::mcp {

// Errors (InvalidArgument), one line naming the argument: a missing required one; an unknown one
// (with the nearest known name); a value of the wrong type, out of range or not one of the enum.
Status CheckArguments(const Json& schema, const Json& args);

// Builders for the schemas the tools publish.
Json StringSchema(const std::string& description);
Json IntegerSchema(const std::string& description, int64_t min, int64_t max);
Json StringsSchema(const std::string& description);  // an array of strings
// A path, or several: a string or an array of strings.
Json PathsSchema(const std::string& description);
Json EnumSchema(const std::string& description, const std::vector<std::string>& values);
Json ObjectSchema(Json properties, const std::vector<std::string>& required);

}  // namespace trainprof::mcp
