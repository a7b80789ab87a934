// The preload's test for "this absolute path is not managed", made on every path call (stat,
// open, access...) a program makes, so it must cost little next to the system call: no
// allocation, no copy of the path, and no full lexical normalisation.
//
// A path is managed when lexically_normal(path) lies within a prefix (runtime/path/path.hpp).
// The prefixes are clean absolute paths. Compare the path with a prefix byte by byte: up to the
// first difference, at k, the path equals the (clean) prefix, so whatever normalisation changes
// in the path ("//", a "." component, a ".." component) must start at k-3 or later; and a
// difference not touched by one of those stays a difference after normalisation. So:
//   - the path is within when the whole prefix matches and is followed by '/' or the end;
//   - otherwise it is surely outside, unless a "//" or "." component touches position k, or a
//     ".." component starts at k-3 or later (it could climb back into the prefix).
// "Unsure" sends the call to the full check (lexically_normal and is_within), which decides.
#ifndef LARDER_RUNTIME_PRELOAD_FAST_PATH_HPP_
#define LARDER_RUNTIME_PRELOAD_FAST_PATH_HPP_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace larder::preload {

// Length of the common beginning of a[0, alen) and b[0, blen), eight bytes at a time.
inline std::size_t common_length(const char* a, std::size_t alen, const char* b,
                                 std::size_t blen) noexcept {
  const std::size_t n = alen < blen ? alen : blen;
  std::size_t k = 0;
  if constexpr (std::endian::native == std::endian::little) {
    for (; k + 8 <= n; k += 8) {
      std::uint64_t x = 0;
      std::uint64_t y = 0;
      std::memcpy(&x, a + k, 8);
      std::memcpy(&y, b + k, 8);
      if (x != y) return k + static_cast<std::size_t>(std::countr_zero(x ^ y)) / 8;
    }
  }
  while (k < n && a[k] == b[k]) ++k;
  return k;
}

// Whether a[i] ends a path component of a[0, len) (a '/' or the end).
inline bool component_end(const char* a, std::size_t len, std::size_t i) noexcept {
  return i >= len || a[i] == '/';
}

// Where the last ".." component of the NUL-terminated path `abs` starts (-1 when there is
// none); sets *len to the path's length. One pass, dot to dot.
inline std::ptrdiff_t last_dotdot(const char* abs, std::size_t* len) noexcept {
  std::ptrdiff_t last = -1;
  const char* d = abs;
  while (*(d = ::strchrnul(d, '.')) != '\0') {
    if (d > abs && d[-1] == '/' && d[1] == '.' && (d[2] == '/' || d[2] == '\0')) last = d - 1 - abs;
    ++d;
  }
  *len = static_cast<std::size_t>(d - abs);
  return last;
}

// True when the absolute, NUL-terminated path `abs`, once lexically clean, surely lies within
// none of the clean absolute `prefixes`; false when it may lie within one (the caller then
// decides exactly).
[[gnu::noinline]] inline bool surely_outside(const char* abs,
                                             std::span<const std::string> prefixes) noexcept {
  std::size_t len = 0;
  const std::ptrdiff_t dotdot = last_dotdot(abs, &len);
  for (const std::string& prefix : prefixes) {
    if (prefix.size() == 1) return false;  // "/": every absolute path
    const std::size_t k = common_length(abs, len, prefix.data(), prefix.size());
    if (k == prefix.size() && component_end(abs, len, k)) return false;  // within
    if (k >= 1 && k < len && abs[k - 1] == '/' &&
        (abs[k] == '/' || (abs[k] == '.' && component_end(abs, len, k + 1)))) {
      return false;  // "//" or a "." component at k
    }
    if (k >= 2 && abs[k - 2] == '/' && abs[k - 1] == '.' && component_end(abs, len, k)) {
      return false;  // a "." component ending at k
    }
    if (dotdot >= 0 && static_cast<std::size_t>(dotdot) + 3 >= k) return false;  // ".." at k-3 on
  }
  return true;
}

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_FAST_PATH_HPP_
