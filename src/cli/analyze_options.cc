// The options of analysis/run/options.h as CLI11 flags: each entry's kind gives its flag's
// type, check and default (the field's own, shown in --help).
#include <memory>

#include "analysis/run/options.h"
#include "cli/analyze_run.h"

namespace trainprof::cli {
namespace {

using analysis::AnalyzeOption;
using analysis::AnalyzeRequest;
using analysis::OptionKind;

template <typename T>
T& Field(const AnalyzeOption& o, AnalyzeRequest* r) {
  return r->*std::get<T AnalyzeRequest::*>(o.field);
}

// The flag of one option bound to its field; an optional text is bound to `holder` and set
// from it when the command line is parsed (`finish`).
void AddFlag(CLI::App* sub, const AnalyzeOption& o, AnalyzeRequest* r,
             std::vector<std::function<void()>>* finish) {
  const std::string flag = analysis::FlagOf(o);
  const std::string help(o.help);
  switch (o.kind) {
    case OptionKind::kFlag:
      sub->add_flag(flag, Field<bool>(o, r), help);
      return;
    case OptionKind::kChoice:
      sub->add_option(flag, Field<std::string>(o, r), help)
          ->check(CLI::IsMember(o.choices))
          ->capture_default_str();
      return;
    case OptionKind::kInt:
      sub->add_option(flag, Field<int>(o, r), help)
          ->check(CLI::Range(o.min, o.max))
          ->capture_default_str();
      return;
    case OptionKind::kPositive: {
      CLI::Option* opt =
          sub->add_option(flag, Field<double>(o, r), help)->check(CLI::PositiveNumber);
      if (Field<double>(o, r) > 0) opt->capture_default_str();  // 0: none given (the table's)
      return;
    }
    case OptionKind::kFraction:
      sub->add_option(flag, Field<double>(o, r), help)
          ->check(CLI::Range(0.0, 1.0))
          ->capture_default_str();
      return;
    case OptionKind::kSeconds:
      sub->add_option(flag, Field<double>(o, r), help)->check(CLI::NonNegativeNumber);
      return;
    case OptionKind::kTexts:
      sub->add_option(flag, Field<std::vector<std::string>>(o, r), help);
      return;
    case OptionKind::kPaths:
      sub->add_option(flag, Field<std::vector<std::string>>(o, r), help)->check(CLI::ExistingPath);
      return;
    case OptionKind::kOptionalText: {
      auto holder = std::make_shared<std::string>();
      CLI::Option* opt =
          sub->add_option(flag, *holder, help)->expected(0, 1)->type_name(std::string(o.metavar));
      auto& field = Field<std::optional<std::string>>(o, r);
      finish->push_back([opt, holder, &field] {
        if (opt->count() > 0) field = *holder;
      });
      return;
    }
  }
}

}  // namespace

std::function<void()> AddAnalyzeOptions(CLI::App* sub, AnalyzeRequest* r, bool diff) {
  auto finish = std::make_shared<std::vector<std::function<void()>>>();
  for (const AnalyzeOption& o : analysis::AnalyzeOptionList())
    if (!diff || o.diff) AddFlag(sub, o, r, finish.get());
  return [finish] {
    for (const auto& f : *finish) f();
  };
}

}  // namespace trainprof::cli
