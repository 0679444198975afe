// A configuration schema: typed keys ("training.epochs") bound to fields of a config struct, with
// ranges, allowed values and help. YAML files, YAML text and "key=value" overrides are applied
// through it, so every config error names the file, line and column, the key, and — for an
// unknown key — the nearest valid key.
//
//   Options o;
//   base::ConfigSchema schema;
//   schema.AddInt("speed.warmup_batches", &o.speed.warmup_batches, 0, 1000000, "Warm-up batches.");
//   TRAINPROF_RETURN_IF_ERROR(schema.ApplyFile("profiler.yaml"));   // o is updated
//   TRAINPROF_RETURN_IF_ERROR(schema.ApplyOverride("speed.warmup_batches=3"));
//
// An Apply*() call that fails changes nothing: values are checked first, then assigned.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "trainprof/status.h"

namespace trainprof::base {

using ConfigValue = std::variant<bool, int64_t, double, std::string>;

enum class ConfigType { kBool, kInt, kDouble, kString };
const char* ConfigTypeName(ConfigType type);  // "boolean", "integer", "number", "string"

struct ConfigKey {
  std::string key;
  ConfigType type = ConfigType::kString;
  std::string help;
  int64_t int_min = 0, int_max = 0;
  double double_min = 0, double_max = 0;
  std::vector<std::string> choices;  // allowed strings; empty = any
  void* target = nullptr;
};

class ConfigSchema {
 public:
  void AddBool(std::string key, bool* target, std::string help);
  void AddInt(std::string key, int64_t* target, int64_t min, int64_t max, std::string help);
  void AddDouble(std::string key, double* target, double min, double max, std::string help);
  void AddString(std::string key, std::string* target, std::string help,
                 std::vector<std::string> choices = {});

  // Errors (InvalidArgument unless noted), each naming `path`, line and column: unreadable file
  // (NotFound / PermissionDenied), YAML syntax error, unknown key (with the nearest valid key),
  // a mapping where a value belongs, wrong type, out of range, not one of the allowed values.
  Status ApplyFile(const std::string& path);
  // As ApplyFile(), for YAML text; `source` names it in errors.
  Status ApplyYamlText(std::string_view text, const std::string& source);
  // "key=value", as given to --set. Errors name the override.
  Status ApplyOverride(std::string_view key_equals_value);
  // A command-line flag that stands for a key (--epochs for training.epochs): checked as --set
  // checks it. Errors name the flag and its value: "--epochs 0: training.epochs: 0 is out of
  // range (1 to 100000)".
  Status ApplyFlag(std::string_view flag, std::string_view key, std::string_view value);
  // Checks the current value of every key against its range and allowed values.
  Status Validate() const;

  const std::vector<ConfigKey>& Keys() const { return keys_; }
  const ConfigKey* Find(std::string_view key) const;
  // True when some key starts with "<prefix>." ("training" for "training.epochs").
  bool IsSection(std::string_view prefix) const;
  // Every key with its current value, in registration order.
  std::vector<std::pair<std::string, ConfigValue>> CurrentValues() const;
  static ConfigValue ValueOf(const ConfigKey& key);

 private:
  ConfigKey& AddKey(std::string key, ConfigType type, void* target, std::string help);
  std::vector<std::string> KeyNames() const;

  std::vector<ConfigKey> keys_;
};

// Parses `text` as a value of `key`'s type and checks its range; `where` prefixes errors.
StatusOr<ConfigValue> ParseConfigValue(const ConfigKey& key, std::string_view text,
                                       const std::string& where);
// "true", "42", "0.001", "runs" — as a value is written in YAML.
std::string ConfigValueText(const ConfigValue& v);

}  // namespace trainprof::base
