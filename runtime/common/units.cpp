#include "runtime/common/units.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

namespace larder {

std::optional<std::uint64_t> parse_size(std::string_view text) noexcept {
  std::uint64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  std::string_view suffix(ptr, static_cast<std::size_t>(end - ptr));
  int shift = 0;
  if (!suffix.empty()) {
    switch (std::toupper(static_cast<unsigned char>(suffix.front()))) {
      case 'B':
        shift = 0;
        break;
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        return std::nullopt;
    }
    const bool bare_b = std::toupper(static_cast<unsigned char>(suffix.front())) == 'B';
    suffix.remove_prefix(1);
    if (!bare_b && (suffix == "iB" || suffix == "ib" || suffix == "B" || suffix == "b"))
      suffix = {};
    if (!suffix.empty()) return std::nullopt;
  }
  if (shift > 0 && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  auto v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace larder
