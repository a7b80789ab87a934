#include "apps/larder-bench/data/size_plan.hpp"

#include <algorithm>
#include <cmath>

#include "apps/larder-bench/common/legacy_random.hpp"

namespace larder::bench {

std::int64_t record_dimension(double record_length) noexcept {
  return static_cast<std::int64_t>(std::sqrt(record_length));
}

double record_dimension_stdev(double record_length, double record_length_stdev) noexcept {
  return record_length_stdev / 2.0 / std::sqrt(record_length);
}

std::vector<Dims> plan_dimensions(const DatasetConfig& d, std::int64_t total_files) {
  const std::int64_t dim = record_dimension(d.record_length);
  const double stdev = record_dimension_stdev(d.record_length, d.record_length_stdev);
  std::vector<Dims> out(static_cast<std::size_t>(std::max<std::int64_t>(total_files, 0)),
                        Dims{dim, dim});
  if (stdev <= 0.0) return out;
  LegacyRandom rng(10);
  // int() truncates toward zero, then max(.., 1)
  auto draw = [&] {
    return std::max<std::int64_t>(static_cast<std::int64_t>(rng.normal(double(dim), stdev)), 1);
  };
  for (Dims& f : out) {
    f.d1 = draw();
    f.d2 = draw();
  }
  return out;
}

}  // namespace larder::bench
