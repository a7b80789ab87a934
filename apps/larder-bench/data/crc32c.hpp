// CRC-32C (Castagnoli), as TFRecord framing uses it, computed by Boost.CRC, with TensorFlow's
// mask:  masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8
// Boost's table-driven loop takes a byte at a time (about 0.5 GB/s here): generating a dataset is
// bound by writing it, not by this.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_

#include <boost/crc.hpp>
#include <cstdint>
#include <span>

namespace larder::bench {

// CRC-32C: polynomial 0x1EDC6F41, reflected, initial and final XOR all ones.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41U, 0xFFFFFFFFU, 0xFFFFFFFFU, true, true>;

inline std::uint32_t crc32c(std::span<const std::uint8_t> bytes) noexcept {
  Crc32c crc;
  crc.process_bytes(bytes.data(), bytes.size());
  return crc.checksum();
}

inline std::uint32_t crc32c_mask(std::uint32_t crc) noexcept {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_CRC32C_HPP_
