// list_on_root: the dataset listing done once, by rank 0, and broadcast (one directory listing
// of the file system per job instead of one per rank). Collective; every rank gets the same
// files or the same failure.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_SHARED_LISTING_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_SHARED_LISTING_HPP_

#include <string>
#include <vector>

#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/data/file_names.hpp"

namespace larder::bench {

Result<std::vector<std::string>> list_on_root(const DatasetConfig& d, Split split,
                                              const MpiWorld& world);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_SHARED_LISTING_HPP_
