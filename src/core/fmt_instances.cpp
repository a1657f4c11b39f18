// The out-of-line half of {fmt} (Debian's libfmt-dev ships headers and a shared library only; the
// binary links everything statically so it runs on hosts without the package): compiled here once
// instead of in every translation unit that includes <fmt/format.h> (header-only mode compiled the
// formatting engine into each of them, most of a small unit's compile time). format-inl.h defines
// the library's non-template functions; the templates that format.h declares FMT_API or extern
// are instantiated below for the character types it names.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;

}  // namespace detail
FMT_END_NAMESPACE
