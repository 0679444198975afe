#include "base/config_schema.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/atomic_file.h"
#include "base/text.h"

namespace trainprof::base {
namespace {

const char* ConfigTypeArticle(ConfigType type) {
  switch (type) {
    case ConfigType::kBool:
      return "true or false";
    case ConfigType::kInt:
      return "an integer";
    case ConfigType::kDouble:
      return "a number";
    case ConfigType::kString:
      return "a string";
  }
  return "a value";
}

// "<where>: unknown key 'k'; did you mean 'nearest'?" (the suggestion only when one is close).
Status UnknownKey(const std::string& where, const std::string& key,
                  const std::vector<std::string>& names) {
  const std::string near = NearestWord(key, names);
  return InvalidArgument(
      fmt::format("{}: unknown key '{}'{}", where, key,
                  near.empty() ? std::string() : fmt::format("; did you mean '{}'?", near)));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// "file:line:col" with 1-based line and column, as compilers print them.
std::string Where(const std::string& source, const YAML::Mark& m) {
  if (m.is_null()) return source;
  return fmt::format("{}:{}:{}", source, m.line + 1, m.column + 1);
}

// "source:LINE:COL: ..." for the first tab in a line's indentation (YAML indents with spaces
// only, and yaml-cpp's own message for it never says "tab"), or "" when there is none.
std::string TabInIndentation(std::string_view text, const std::string& source) {
  size_t line = 1, col = 1;
  bool indent = true;
  for (char c : text) {
    if (c == '\n') {
      ++line, col = 1, indent = true;
      continue;
    }
    if (indent && c == '\t') {
      return fmt::format(
          "{}:{}:{}: YAML syntax error: a tab in the indentation; YAML indents with "
          "spaces only",
          source, line, col);
    }
    if (c != ' ') indent = false;
    ++col;
  }
  return "";
}

struct Assignment {
  const ConfigKey* key;
  ConfigValue value;
};

void Assign(const ConfigKey& k, const ConfigValue& v) {
  switch (k.type) {
    case ConfigType::kBool:
      *static_cast<bool*>(k.target) = std::get<bool>(v);
      break;
    case ConfigType::kInt:
      *static_cast<int64_t*>(k.target) = std::get<int64_t>(v);
      break;
    case ConfigType::kDouble:
      *static_cast<double*>(k.target) = std::get<double>(v);
      break;
    case ConfigType::kString:
      *static_cast<std::string*>(k.target) = std::get<std::string>(v);
      break;
  }
}

Status CheckValue(const ConfigKey& k, const ConfigValue& v, const std::string& where) {
  const std::string prefix = where.empty() ? k.key : fmt::format("{}: {}", where, k.key);
  switch (k.type) {
    case ConfigType::kInt: {
      int64_t x = std::get<int64_t>(v);
      if (x < k.int_min || x > k.int_max) {
        return InvalidArgument(
            fmt::format("{}: {} is out of range ({} to {})", prefix, x, k.int_min, k.int_max));
      }
      break;
    }
    case ConfigType::kDouble: {
      double x = std::get<double>(v);
      if (!std::isfinite(x) || x < k.double_min || x > k.double_max) {
        return InvalidArgument(fmt::format("{}: {} is out of range ({} to {})", prefix, x,
                                           k.double_min, k.double_max));
      }
      break;
    }
    case ConfigType::kString: {
      const std::string& s = std::get<std::string>(v);
      if (!k.choices.empty() &&
          std::find(k.choices.begin(), k.choices.end(), s) == k.choices.end()) {
        return InvalidArgument(
            fmt::format("{}: '{}' is not one of: {}", prefix, s, fmt::join(k.choices, ", ")));
      }
      break;
    }
    case ConfigType::kBool:
      break;
  }
  return Status::Ok();
}

// Walks a YAML mapping, turning every leaf into a checked assignment.
class YamlWalker {
 public:
  YamlWalker(const ConfigSchema& schema, std::vector<std::string> names, std::string source)
      : schema_(schema), names_(std::move(names)), source_(std::move(source)) {}

  Status Walk(const YAML::Node& node, const std::string& prefix, std::vector<Assignment>& out) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies: the iterator's value is a temporary pair; Nodes are cheap handles.
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        return InvalidArgument(
            fmt::format("{}: a key must be a plain name", Where(source_, k.Mark())));
      }
      const std::string key = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      const ConfigKey* ck = schema_.Find(key);
      if (ck == nullptr) {
        if (schema_.IsSection(key)) {
          if (v.IsMap()) {
            TRAINPROF_RETURN_IF_ERROR(Walk(v, key, out));
            continue;
          }
          if (v.IsNull()) continue;  // "memory:" with nothing under it
          return InvalidArgument(
              fmt::format("{}: '{}' is a section: expected keys under it, got "
                          "a value",
                          Where(source_, v.Mark()), key));
        }
        return UnknownKey(Where(source_, k.Mark()), key, names_);
      }
      if (!v.IsScalar()) {
        return InvalidArgument(fmt::format("{}: {}: expected {}, got {}", Where(source_, v.Mark()),
                                           key, ConfigTypeArticle(ck->type),
                                           v.IsMap()        ? "a mapping"
                                           : v.IsSequence() ? "a list"
                                                            : "nothing"));
      }
      TRAINPROF_ASSIGN_OR_RETURN(ConfigValue value,
                                 ParseConfigValue(*ck, v.Scalar(), Where(source_, v.Mark())));
      out.push_back({ck, std::move(value)});
    }
    return Status::Ok();
  }

 private:
  const ConfigSchema& schema_;
  std::vector<std::string> names_;
  std::string source_;
};

}  // namespace

const char* ConfigTypeName(ConfigType type) {
  switch (type) {
    case ConfigType::kBool:
      return "boolean";
    case ConfigType::kInt:
      return "integer";
    case ConfigType::kDouble:
      return "number";
    case ConfigType::kString:
      return "string";
  }
  return "value";
}

ConfigKey& ConfigSchema::AddKey(std::string key, ConfigType type, void* target, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.type = type;
  k.help = std::move(help);
  k.target = target;
  keys_.push_back(std::move(k));
  return keys_.back();
}

void ConfigSchema::AddBool(std::string key, bool* target, std::string help) {
  AddKey(std::move(key), ConfigType::kBool, target, std::move(help));
}

void ConfigSchema::AddInt(std::string key, int64_t* target, int64_t min, int64_t max,
                          std::string help) {
  ConfigKey& k = AddKey(std::move(key), ConfigType::kInt, target, std::move(help));
  k.int_min = min;
  k.int_max = max;
}

void ConfigSchema::AddDouble(std::string key, double* target, double min, double max,
                             std::string help) {
  ConfigKey& k = AddKey(std::move(key), ConfigType::kDouble, target, std::move(help));
  k.double_min = min;
  k.double_max = max;
}

void ConfigSchema::AddString(std::string key, std::string* target, std::string help,
                             std::vector<std::string> choices) {
  AddKey(std::move(key), ConfigType::kString, target, std::move(help)).choices = std::move(choices);
}

const ConfigKey* ConfigSchema::Find(std::string_view key) const {
  for (const ConfigKey& k : keys_) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

std::vector<std::string> ConfigSchema::KeyNames() const {
  std::vector<std::string> names;
  names.reserve(keys_.size());
  for (const ConfigKey& k : keys_) names.push_back(k.key);
  return names;
}

bool ConfigSchema::IsSection(std::string_view prefix) const {
  const std::string p = std::string(prefix) + ".";
  return std::any_of(keys_.begin(), keys_.end(),
                     [&](const ConfigKey& k) { return k.key.rfind(p, 0) == 0; });
}

Status ConfigSchema::ApplyFile(const std::string& path) {
  TRAINPROF_ASSIGN_OR_RETURN(std::string text, ReadFile(path, "config file"));
  return ApplyYamlText(text, path);
}

Status ConfigSchema::ApplyYamlText(std::string_view text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {  // yaml-cpp reports syntax errors by throwing
    if (std::string tab = TabInIndentation(text, source); !tab.empty())
      return InvalidArgument(std::move(tab));
    return InvalidArgument(fmt::format("{}: YAML syntax error: {}", Where(source, e.mark), e.msg));
  }
  if (root.IsNull()) return Status::Ok();  // an empty file sets nothing
  if (!root.IsMap()) {
    return InvalidArgument(fmt::format("{}: expected a mapping of config keys at the top level",
                                       Where(source, root.Mark())));
  }
  std::vector<Assignment> todo;
  YamlWalker walker(*this, KeyNames(), source);
  try {
    TRAINPROF_RETURN_IF_ERROR(walker.Walk(root, "", todo));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}: {}", Where(source, e.mark), e.msg));
  }
  for (const Assignment& a : todo) Assign(*a.key, a.value);
  return Status::Ok();
}

Status ConfigSchema::ApplyOverride(std::string_view kv) {
  const size_t eq = kv.find('=');
  const std::string where = fmt::format("--set {}", kv);
  if (eq == std::string_view::npos) {
    return InvalidArgument(fmt::format("{}: expected key=value", where));
  }
  const std::string key(Trim(kv.substr(0, eq)));
  const ConfigKey* ck = Find(key);
  if (ck == nullptr) return UnknownKey(where, key, KeyNames());
  TRAINPROF_ASSIGN_OR_RETURN(ConfigValue v, ParseConfigValue(*ck, Trim(kv.substr(eq + 1)), where));
  Assign(*ck, v);
  return Status::Ok();
}

Status ConfigSchema::ApplyFlag(std::string_view flag, std::string_view key,
                               std::string_view value) {
  const ConfigKey* ck = Find(key);
  if (ck == nullptr) return InvalidArgument(fmt::format("{}: no key {}", flag, key));
  const std::string where = fmt::format("{} {}", flag, value);
  TRAINPROF_ASSIGN_OR_RETURN(ConfigValue v, ParseConfigValue(*ck, Trim(value), where));
  Assign(*ck, v);
  return Status::Ok();
}

Status ConfigSchema::Validate() const {
  for (const ConfigKey& k : keys_) TRAINPROF_RETURN_IF_ERROR(CheckValue(k, ValueOf(k), ""));
  return Status::Ok();
}

ConfigValue ConfigSchema::ValueOf(const ConfigKey& k) {
  switch (k.type) {
    case ConfigType::kBool:
      return *static_cast<const bool*>(k.target);
    case ConfigType::kInt:
      return *static_cast<const int64_t*>(k.target);
    case ConfigType::kDouble:
      return *static_cast<const double*>(k.target);
    case ConfigType::kString:
      return *static_cast<const std::string*>(k.target);
  }
  return false;
}

std::vector<std::pair<std::string, ConfigValue>> ConfigSchema::CurrentValues() const {
  std::vector<std::pair<std::string, ConfigValue>> out;
  out.reserve(keys_.size());
  for (const ConfigKey& k : keys_) out.emplace_back(k.key, ValueOf(k));
  return out;
}

StatusOr<ConfigValue> ParseConfigValue(const ConfigKey& k, std::string_view text,
                                       const std::string& where) {
  auto wrong = [&] {
    return InvalidArgument(fmt::format("{}: {}: expected {}, got '{}'", where, k.key,
                                       ConfigTypeArticle(k.type), text));
  };
  ConfigValue v;
  switch (k.type) {
    case ConfigType::kBool: {
      const std::string t = AsciiLower(text);
      if (t == "true" || t == "yes" || t == "on") {
        v = true;
      } else if (t == "false" || t == "no" || t == "off") {
        v = false;
      } else {
        return wrong();
      }
      break;
    }
    case ConfigType::kInt: {
      int64_t x = 0;
      auto r = std::from_chars(text.data(), text.data() + text.size(), x);
      if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
        return wrong();
      }
      v = x;
      break;
    }
    case ConfigType::kDouble: {
      std::string s(text);
      char* end = nullptr;
      errno = 0;
      double x = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE) return wrong();
      v = x;
      break;
    }
    case ConfigType::kString:
      v = std::string(text);
      break;
  }
  TRAINPROF_RETURN_IF_ERROR(CheckValue(k, v, where));
  return v;
}

std::string ConfigValueText(const ConfigValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else {
          return fmt::format("{}", x);
        }
      },
      v);
}

}  // namespace trainprof::base
