// The options of `trainprof analyze`, defined once. Each entry is the option's keyword (Python's
// `trainprof.analyze(..., kernel_wait_us=5)`; the flag is the same with '-' for '_':
// `--kernel-wait-us`), its kind (which fixes its type and its check), its range or values, its
// help, and the field of AnalyzeRequest it sets; the default is that field's. The CLI's flags
// (cli/analyze_options.cc), Python's keywords with their checks, `--help`, and
// `trainprof.analyze_options()` are all made from this list: a new option is one entry here and
// its use.
//
//   for (const AnalyzeOption& o : AnalyzeOptionList()) AddFlag(app, o, &request);   // the CLI
//   AnalyzeRequest r;
//   Status s = SetOption(*FindAnalyzeOption("top_kernels"), OptionValue{int64_t{5}}, r);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "analysis/run/request.h"
#include "trainprof/status.h"

namespace trainprof::analysis {

enum class OptionKind {
  kFlag,          // a switch (--hta-compat; hta_compat=True)
  kChoice,        // one of `choices` (--steps all)
  kInt,           // a whole number in [min, max]
  kPositive,      // a number above 0
  kFraction,      // a number above 0, at most 1
  kSeconds,       // a number of seconds, 0 or more (not given: NaN)
  kTexts,         // non-empty texts, the flag repeatable (--dataloader-pattern)
  kPaths,         // paths that exist, the flag repeatable (--capture-trace)
  kOptionalText,  // off, or on with an optional text (--critical-path [ANNOTATION])
};

// Where an option lands in AnalyzeRequest.
using OptionField =
    std::variant<bool AnalyzeRequest::*, std::string AnalyzeRequest::*, int AnalyzeRequest::*,
                 double AnalyzeRequest::*, std::vector<std::string> AnalyzeRequest::*,
                 std::optional<std::string> AnalyzeRequest::*>;

struct AnalyzeOption {
  std::string_view keyword;
  OptionKind kind;
  OptionField field;
  std::string_view help;
  std::string_view expects;          // what a value must be, as Python's ValueError says it
  int64_t min = 0, max = 0;          // kInt
  std::vector<std::string> choices;  // kChoice
  std::string_view metavar;          // kOptionalText: the value's name in --help
  bool diff = false;                 // `trainprof diff` takes it too
  std::string_view flag = {};        // the CLI's flag when not FlagOf's ("--from" for from_s)
};

// Every option, in the order of `--help`.
std::span<const AnalyzeOption> AnalyzeOptionList();

// The entry of `keyword` (Python's spelling), or nullptr.
const AnalyzeOption* FindAnalyzeOption(std::string_view keyword);

// "--kernel-wait-us" for kernel_wait_us.
std::string FlagOf(const AnalyzeOption& o);

// A value as a front end hands it over: nothing (kOptionalText off), a switch, a number, a text,
// or texts.
using OptionValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<std::string>>;

// Checks `v` against `o` and sets it in `r`. A kFlag takes a bool; kChoice and kOptionalText a
// text (kOptionalText also true, "on", or false / nothing, "off"); kInt an int64_t; kPositive
// an int64_t or a double; kTexts and kPaths a text or texts. Errors (InvalidArgument): a value
// of another type, out of range, not one of the choices, an empty text, a path that does not
// exist; the message is "<what is wrong>", without the option's name, which the caller adds in
// its own spelling.
Status SetOption(const AnalyzeOption& o, const OptionValue& v, AnalyzeRequest& r);

// Every keyword, in the list's order.
std::vector<std::string> AnalyzeOptionKeywords();

// The keyword nearest to an unknown one ("hta_compat" for "hta_compatible"), or "".
std::string NearestOption(std::string_view keyword);

}  // namespace trainprof::analysis
