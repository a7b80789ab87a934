// The seeded size distribution of DLIO's generators (data_generator.py get_dimension):
//   dimension       = int(sqrt(record_length_bytes))
//   dimension_stdev = record_length_bytes_stdev / 2 / sqrt(record_length_bytes)
//   np.random.seed(10); dims = [max(int(v), 1) for v in np.random.normal(dimension,
//                                                                        dimension_stdev, 2 * N)]
//   file i of the generation list is dims[2i] x dims[2i+1] (x num_samples_per_file)
// With stdev 0 every file is dimension x dimension. N counts training plus evaluation files.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_SIZE_PLAN_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_SIZE_PLAN_HPP_

#include <cstdint>
#include <vector>

#include "apps/larder-bench/config/workload.hpp"

namespace larder::bench {

struct Dims {
  std::int64_t d1 = 0;
  std::int64_t d2 = 0;
  std::int64_t bytes() const noexcept { return d1 * d2; }  // one sample, uint8
  bool operator==(const Dims&) const = default;
};

std::int64_t record_dimension(double record_length) noexcept;
double record_dimension_stdev(double record_length, double record_length_stdev) noexcept;

// Dimensions of the first `total_files` files of the generation list.
std::vector<Dims> plan_dimensions(const DatasetConfig& d, std::int64_t total_files);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_SIZE_PLAN_HPP_
