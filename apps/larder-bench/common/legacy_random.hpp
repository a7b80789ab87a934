// LegacyRandom: numpy's legacy RandomState stream (MT19937), the parts DLIO depends on.
//
// DLIO seeds np.random with an integer and draws file sizes with np.random.normal (seed 10) and
// shuffles file lists with np.random.shuffle (seed + epoch). Reproducing those draws bit for bit
// is what makes larder-bench's file sizes and orders equal to DLIO's:
//   seed(s)        init_genrand(s): mt[i] = 1812433253 * (mt[i-1] ^ (mt[i-1] >> 30)) + i
//   next_double()  ((a >> 5) * 67108864 + (b >> 6)) / 2^53
//   gauss()        Marsaglia polar method, caching the second value (legacy_gauss)
//   interval(max)  masked rejection sampling in [0, max] (random_interval), used by shuffle
// Not thread-safe; one object per use.
#ifndef LARDER_APPS_LARDER_BENCH_COMMON_LEGACY_RANDOM_HPP_
#define LARDER_APPS_LARDER_BENCH_COMMON_LEGACY_RANDOM_HPP_

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace larder::bench {

class LegacyRandom {
 public:
  explicit LegacyRandom(std::uint32_t seed) { this->seed(seed); }

  void seed(std::uint32_t seed) noexcept;
  std::uint32_t next_u32() noexcept;
  std::uint64_t next_u64() noexcept;  // two 32-bit outputs, the first in the high half
  double next_double() noexcept;      // [0, 1), 53 bits
  double gauss() noexcept;            // standard normal (legacy_gauss)
  double normal(double loc, double scale) noexcept { return loc + scale * gauss(); }
  std::uint64_t interval(std::uint64_t max) noexcept;  // uniform in [0, max]

  // np.random.shuffle of a list: Fisher-Yates from the end with interval(i).
  template <class T>
  void shuffle(std::vector<T>& items) noexcept {
    for (std::size_t i = items.size(); i-- > 1;) {
      std::swap(items[i], items[interval(i)]);
    }
  }

 private:
  void reload() noexcept;

  std::array<std::uint32_t, 624> mt_{};
  std::size_t pos_ = 624;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_COMMON_LEGACY_RANDOM_HPP_
