#include "report/format.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>

namespace trainprof::report {
namespace {

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n > 0 && n % 3 == 0) out += ',';
    out += *it;
    ++n;
  }
  if (v < 0) out += '-';
  return {out.rbegin(), out.rend()};
}

// 3 significant digits for small values, no decimals from 100 up, separators from 1000 up.
std::string Plain(double x) {
  const double a = std::fabs(x);
  if (a >= 1000) return Thousands(static_cast<int64_t>(std::llround(x)));
  if (a >= 100) return fmt::format(FMT_COMPILE("{:.0f}"), x);
  if (a >= 10) return fmt::format(FMT_COMPILE("{:.1f}"), x);
  if (a >= 1 || a == 0) return fmt::format(FMT_COMPILE("{:.2f}"), x);
  return fmt::format(FMT_COMPILE("{:.3g}"), x);
}

std::string Seconds(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format(FMT_COMPILE("{} ns"), Plain(s * 1e9));
  if (a < 1e-3) return fmt::format(FMT_COMPILE("{} µs"), Plain(s * 1e6));
  if (a < 1) return fmt::format(FMT_COMPILE("{} ms"), Plain(s * 1e3));
  if (a < 600) return fmt::format(FMT_COMPILE("{} s"), Plain(s));
  const int64_t total = static_cast<int64_t>(std::llround(s));
  if (total < 3600) return fmt::format(FMT_COMPILE("{}m {:02}s"), total / 60, total % 60);
  return fmt::format(FMT_COMPILE("{}h {:02}m"), total / 3600, total / 60 % 60);
}

std::string Bytes(double b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format(FMT_COMPILE("{:.0f} B"), b)
                : fmt::format(FMT_COMPILE("{} {}"), Plain(b), kUnits[u]);
}

std::string Joules(double j) {
  const double a = std::fabs(j);
  if (a >= 1e6) return fmt::format(FMT_COMPILE("{} MJ"), Plain(j / 1e6));
  if (a >= 1e3) return fmt::format(FMT_COMPILE("{} kJ"), Plain(j / 1e3));
  return fmt::format(FMT_COMPILE("{} J"), Plain(j));
}

double AsDouble(const Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return 0;
}

}  // namespace

std::string MetaText(const Report& r, std::string_view key) {
  const Value* v = r.FindMeta(key);
  return v != nullptr ? FormatHuman(*v, Unit::kText) : "";
}

std::string FormatHuman(const Value& v, Unit unit) {
  if (std::holds_alternative<std::monostate>(v)) return "-";
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "yes" : "no";
  const double x = AsDouble(v);
  if (std::isnan(x)) return "-";
  switch (unit) {
    case Unit::kSeconds:
      return Seconds(x);
    case Unit::kBytes:
      return Bytes(x);
    case Unit::kPercent:
      return fmt::format(FMT_COMPILE("{:.1f} %"), x);
    case Unit::kPercentPoints:
      return fmt::format(FMT_COMPILE("{:+.1f} pp"), x);
    case Unit::kBytesPerSecond:
      return Bytes(x) + "/s";
    case Unit::kWatts:
      return fmt::format(FMT_COMPILE("{} W"), Plain(x));
    case Unit::kJoules:
      return Joules(x);
    case Unit::kCelsius:
      return fmt::format(FMT_COMPILE("{} °C"), Plain(x));
    case Unit::kMegahertz:
      return fmt::format(FMT_COMPILE("{} MHz"), Plain(x));
    case Unit::kId:
      if (const auto* i = std::get_if<int64_t>(&v)) return fmt::format(FMT_COMPILE("{}"), *i);
      return Plain(x);
    case Unit::kCount:
      if (const auto* i = std::get_if<int64_t>(&v)) return Thousands(*i);
      if (x == std::round(x) && std::fabs(x) < 9e15) return Thousands(std::llround(x));
      return fmt::format(FMT_COMPILE("{:.1f}"), x);  // a mean of counts
    case Unit::kText:
    case Unit::kNumber:
    case Unit::kPerSecond:
    case Unit::kBool:
    case Unit::kByRow:
      if (const auto* i = std::get_if<int64_t>(&v)) return Thousands(*i);
      return Plain(x);
  }
  return Plain(x);
}

std::string FormatMachine(const Value& v) {
  if (std::holds_alternative<std::monostate>(v)) return "";
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  const double d = std::get<double>(v);
  if (!std::isfinite(d)) return "";
  std::string out;
  AppendShortest(out, d);
  return out;
}

namespace {

// n and k such that d is the double nearest to n / 10^k, |n| < 10^15, trying k = 9 (seconds made
// from nanoseconds) then k = 0 (counts, bytes); false when neither holds, and for zeros (whose
// sign fmt keeps).
bool AsScaledInteger(double d, int64_t* n, int* k) {
  constexpr double kScale[] = {1e9, 1};
  constexpr int kPower[] = {9, 0};
  for (size_t i = 0; i < std::size(kScale) && d != 0; ++i) {
    const double scaled = d * kScale[i];
    if (!(std::fabs(scaled) < 1e15)) continue;
    // Rounded by hand: std::llround is a call into libm.
    const auto v = static_cast<int64_t>(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
    if (static_cast<double>(v) / kScale[i] != d) continue;
    *n = v, *k = kPower[i];
    return true;
  }
  return false;
}

// d's shortest round-trip text when it is a scaled integer (AsScaledInteger): every decimal of
// 15 significant digits or fewer names a double of its own, so no shorter decimal rounds to d,
// and n's digits less their trailing zeros are the shortest. Laid out as fmt's "{}" lays them
// out: with an exponent when the first digit's is below -4 or from 16 ("1.5e-05"), else plain
// ("0.00012", "42", "1.5").
bool AppendScaled(std::string& out, double d) {
  int64_t n = 0;
  int k = 0;
  if (!AsScaledInteger(d, &n, &k)) return false;
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits, n < 0 ? -n : n).ptr;
  const int exp = static_cast<int>(end - digits) - 1 - k;  // the first digit's power of ten
  while (end[-1] == '0') --end;
  const auto count = static_cast<size_t>(end - digits);
  char text[48];  // at most a sign, 15 digits, a point, "0.0000" or "e-09"
  char* t = text;
  auto put = [&](const char* from, size_t len) { t = std::copy_n(from, len, t); };
  if (n < 0) *t++ = '-';
  if (exp < -4 || exp >= 16) {
    *t++ = digits[0];
    if (count > 1) *t++ = '.', put(digits + 1, count - 1);
    put(exp < 0 ? "e-" : "e+", 2);
    const int e = exp < 0 ? -exp : exp;
    if (e < 10) *t++ = '0';
    t = std::to_chars(t, text + sizeof text, e).ptr;
  } else if (exp < 0) {
    put("0.0000", static_cast<size_t>(1 - exp));
    put(digits, count);
  } else if (count <= static_cast<size_t>(exp) + 1) {
    put(digits, count);
    t = std::fill_n(t, static_cast<size_t>(exp) + 1 - count, '0');
  } else {
    put(digits, static_cast<size_t>(exp) + 1);
    *t++ = '.';
    put(digits + exp + 1, count - static_cast<size_t>(exp) - 1);
  }
  out.append(text, t);
  return true;
}

}  // namespace

void AppendShortest(std::string& out, double d) {
  if (AppendScaled(out, d)) return;  // most doubles in the reports, in a fifth of the time
  // The format compiled: the same text as fmt::format("{}", d), without parsing "{}" for each
  // value (a third of many ranks' CSV writing, where most cells are seconds).
  // Written straight into the buffer: the longest such text ("-2.2250738585072014e-308") is 24
  // bytes.
  char buf[32];
  out.append(buf, fmt::format_to(buf, FMT_COMPILE("{}"), d));
}

}  // namespace trainprof::report
