#include "runtime/tier/local_tiers.hpp"

#include <cerrno>

namespace larder {

Result<Placement> LocalTiers::allocate(std::uint64_t length) {
  for (Tier tier : {Tier::kMem, Tier::kDisk}) {
    Arena* arena = get(tier);
    if (arena == nullptr) continue;
    auto offset = arena->allocate(length);
    if (offset.ok()) return Placement{tier, *offset};
    if (make_room_ && offset.status().code() == Errc::kNoSpace && make_room_(tier, length)) {
      offset = arena->allocate(length);
      if (offset.ok()) return Placement{tier, *offset};
    }
  }
  return Status(Errc::kNoSpace, ENOSPC, "every node-local tier is full");
}

}  // namespace larder
