// Included first in every file scripts/lint.sh gives to clang-tidy (never in a build).
//
// libstdc++ 12 (Debian bookworm's g++) defines std::source_location only when the compiler has
// __builtin_source_location, which clang gained in version 15; clang-tidy 14 therefore cannot
// parse hdf5_vol/errors.hpp. This supplies the same interface from the older builtins clang 14
// has, so the connector is checked like the rest. The build (g++) never sees this file.
// current() is constexpr, not consteval: clang 14 rejects a consteval call in a default argument
// (errors.hpp's `where = std::source_location::current()`); the builtins still name the caller.
#ifndef LARDER_SCRIPTS_LINT_SOURCE_LOCATION_HPP_
#define LARDER_SCRIPTS_LINT_SOURCE_LOCATION_HPP_

#if defined(__clang__) && !__has_builtin(__builtin_source_location)
namespace std {
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           unsigned line = __builtin_LINE(),
                                           unsigned column = __builtin_COLUMN()) noexcept {
    source_location where;
    where.file_ = file;
    where.function_ = function;
    where.line_ = line;
    where.column_ = column;
    return where;
  }
  constexpr source_location() noexcept = default;
  constexpr unsigned line() const noexcept { return line_; }
  constexpr unsigned column() const noexcept { return column_; }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  unsigned line_ = 0;
  unsigned column_ = 0;
};
}  // namespace std
#endif

#endif  // LARDER_SCRIPTS_LINT_SOURCE_LOCATION_HPP_
