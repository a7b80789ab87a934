// CRC-32C (Castagnoli), as TFRecord framing uses it, with TensorFlow's mask:
//   masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8
// Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_

#include <cstdint>
#include <span>

namespace larder::bench {

// Continues `crc` (start with 0) over `bytes`.
std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::uint8_t> bytes) noexcept;

inline std::uint32_t crc32c_mask(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_
