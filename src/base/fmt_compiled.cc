// fmt's compiled part, built once into trainprof_base. trainprof uses fmt's headers without its
// shared library: every shared library costs each start of the command its loading and symbol
// lookups, and fmt's header-only mode would compile these definitions into every file instead.
// The definitions are fmt's own (format-inl.h); the instantiations below are the templates its
// headers declare `extern` or leave undefined.
#include <fmt/format.h>
// Its functions are defined here, once (FMT_FUNC is empty outside the header-only mode).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;

}  // namespace detail
FMT_END_NAMESPACE
