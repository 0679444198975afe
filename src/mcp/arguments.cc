#include "mcp/arguments.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "base/text.h"

namespace trainprof::mcp {

namespace {

bool IsType(const Json& v, const std::string& type) {
  if (type == "string") return v.is_string();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return v.is_null();
}

std::string Shown(const Json& v) {
  std::string s = Line(v);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

Status Wrong(const std::string& where, const std::string& what) {
  return InvalidArgument(fmt::format("{}: {}", where, what));
}

Status CheckValue(const Json& schema, const Json& v, const std::string& where);

Status CheckAnyOf(const Json& options, const Json& v, const std::string& where) {
  std::vector<std::string> types;
  for (const Json& o : options) {
    if (CheckValue(o, v, where).ok()) return Status::Ok();
    types.push_back(o.value("type", "value"));
  }
  return Wrong(where, fmt::format("expected {}, got {}", fmt::join(types, " or "), Shown(v)));
}

Status CheckNumber(const Json& schema, const Json& v, const std::string& where) {
  const double x = v.get<double>();
  if (auto it = schema.find("minimum"); it != schema.end() && x < it->get<double>())
    return Wrong(where, fmt::format("{} is below the minimum {}", Shown(v), Shown(*it)));
  if (auto it = schema.find("maximum"); it != schema.end() && x > it->get<double>())
    return Wrong(where, fmt::format("{} is above the maximum {}", Shown(v), Shown(*it)));
  if (auto it = schema.find("exclusiveMinimum"); it != schema.end() && x <= it->get<double>())
    return Wrong(where, fmt::format("{} must be above {}", Shown(v), Shown(*it)));
  return Status::Ok();
}

Status CheckValue(const Json& schema, const Json& v, const std::string& where) {
  if (auto any = schema.find("anyOf"); any != schema.end()) return CheckAnyOf(*any, v, where);
  const std::string type = schema.value("type", "");
  if (!type.empty() && !IsType(v, type))
    return Wrong(where,
                 fmt::format("expected {} {}, got {}",
                             type == "integer" || type == "array" ? "an" : "a", type, Shown(v)));
  if (auto e = schema.find("enum"); e != schema.end()) {
    for (const Json& option : *e)
      if (option == v) return Status::Ok();
    std::vector<std::string> names;
    for (const Json& option : *e) names.push_back(Line(option));
    return Wrong(where, fmt::format("{} is not one of {}", Shown(v), fmt::join(names, ", ")));
  }
  if (v.is_number()) return CheckNumber(schema, v, where);
  if (v.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < v.size(); ++i)
        TRAINPROF_RETURN_IF_ERROR(CheckValue(*items, v[i], fmt::format("{}[{}]", where, i)));
    }
  }
  if (v.is_object() && schema.contains("properties")) return CheckArguments(schema, v);
  return Status::Ok();
}

}  // namespace

Status CheckArguments(const Json& schema, const Json& args) {
  if (!args.is_object()) return InvalidArgument("arguments: expected an object");
  const Json& props = schema.at("properties");
  std::vector<std::string> names;
  for (const auto& [name, unused] : props.items()) names.push_back(name);
  for (const auto& [name, value] : args.items()) {
    auto p = props.find(name);
    if (p == props.end()) {
      const std::string near = base::NearestWord(name, names);
      return InvalidArgument(fmt::format("unknown argument '{}'{}; arguments: {}", name,
                                         near.empty() ? "" : " (did you mean '" + near + "'?)",
                                         fmt::join(names, ", ")));
    }
    TRAINPROF_RETURN_IF_ERROR(CheckValue(*p, value, name));
  }
  if (auto req = schema.find("required"); req != schema.end()) {
    for (const Json& name : *req)
      if (!args.contains(name.get<std::string>()))
        return InvalidArgument(fmt::format("missing argument '{}'", name.get<std::string>()));
  }
  return Status::Ok();
}

Json StringSchema(const std::string& description) {
  return {{"type", "string"}, {"description", description}};
}

Json IntegerSchema(const std::string& description, int64_t min, int64_t max) {
  return {{"type", "integer"}, {"description", description}, {"minimum", min}, {"maximum", max}};
}

Json StringsSchema(const std::string& description) {
  return {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", description}};
}

Json PathsSchema(const std::string& description) {
  return {{"anyOf", Json::array({{{"type", "string"}},
                                 {{"type", "array"}, {"items", {{"type", "string"}}}}})},
          {"description", description}};
}

Json EnumSchema(const std::string& description, const std::vector<std::string>& values) {
  return {{"type", "string"}, {"enum", values}, {"description", description}};
}

Json ObjectSchema(Json properties, const std::vector<std::string>& required) {
  Json s = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) s["required"] = required;
  s["additionalProperties"] = false;
  return s;
}

}  // namespace trainprof::mcp
