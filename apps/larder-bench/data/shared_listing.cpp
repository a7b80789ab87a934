#include "apps/larder-bench/data/shared_listing.hpp"

namespace larder::bench {

Result<std::vector<std::string>> list_on_root(const DatasetConfig& d, Split split,
                                              const MpiWorld& world) {
  Result<std::vector<std::string>> listed = std::vector<std::string>{};
  if (world.root()) listed = list_dataset(d, split);
  if (!world.all_ok(listed.ok())) {
    return listed.ok() ? Status::error("rank 0 could not list the dataset") : listed.status();
  }
  return world.broadcast(world.root() ? listed.value() : std::vector<std::string>{});
}

}  // namespace larder::bench
