#include "apps/larder-bench/common/legacy_random.hpp"

#include <cmath>

namespace larder::bench {
namespace {

constexpr std::size_t kN = 624;
constexpr std::size_t kM = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfU;
constexpr std::uint32_t kUpperMask = 0x80000000U;
constexpr std::uint32_t kLowerMask = 0x7fffffffU;

}  // namespace

void LegacyRandom::seed(std::uint32_t seed) noexcept {
  mt_[0] = seed;
  for (std::size_t i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  pos_ = kN;
  has_gauss_ = false;
  gauss_ = 0.0;
}

void LegacyRandom::reload() noexcept {
  auto twist = [this](std::size_t i, std::size_t next, std::size_t far) {
    const std::uint32_t y = (mt_[i] & kUpperMask) | (mt_[next] & kLowerMask);
    mt_[i] = mt_[far] ^ (y >> 1) ^ ((y & 1U) != 0 ? kMatrixA : 0U);
  };
  std::size_t i = 0;
  for (; i < kN - kM; ++i) twist(i, i + 1, i + kM);
  for (; i < kN - 1; ++i) twist(i, i + 1, i + kM - kN);
  twist(kN - 1, 0, kM - 1);
  pos_ = 0;
}

std::uint32_t LegacyRandom::next_u32() noexcept {
  if (pos_ >= kN) reload();
  std::uint32_t y = mt_[pos_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

std::uint64_t LegacyRandom::next_u64() noexcept {
  const std::uint64_t high = next_u32();
  return (high << 32) | next_u32();
}

double LegacyRandom::next_double() noexcept {
  const std::uint32_t a = next_u32() >> 5;
  const std::uint32_t b = next_u32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double LegacyRandom::gauss() noexcept {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1 = 0.0;
  double x2 = 0.0;
  double r2 = 0.0;
  do {
    x1 = 2.0 * next_double() - 1.0;
    x2 = 2.0 * next_double() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

std::uint64_t LegacyRandom::interval(std::uint64_t max) noexcept {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  std::uint64_t value = 0;
  if (max <= 0xffffffffULL) {
    while ((value = (next_u32() & mask)) > max) {
    }
  } else {
    while ((value = (next_u64() & mask)) > max) {
    }
  }
  return value;
}

}  // namespace larder::bench
