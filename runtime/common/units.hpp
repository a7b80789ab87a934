// Byte sizes with K/M/G/T suffixes (powers of 1024), as LARDER_MEM=8G or LARDER_CHUNK=4M.
#ifndef LARDER_RUNTIME_COMMON_UNITS_HPP_
#define LARDER_RUNTIME_COMMON_UNITS_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder {

// Accepts a decimal integer with an optional suffix K, M, G or T (any case, optionally
// followed by "iB" or "B"). Returns nullopt for anything else, including overflow.
std::optional<std::uint64_t> parse_size(std::string_view text) noexcept;

// 4096 -> "4.0 KiB"; for messages and summaries.
std::string format_size(std::uint64_t bytes);

}  // namespace larder

#endif  // LARDER_RUNTIME_COMMON_UNITS_HPP_
