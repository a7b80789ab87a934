// LocalTiers: this rank's own arenas (memory first, then disk) and where a new chunk goes.
#ifndef LARDER_RUNTIME_TIER_LOCAL_TIERS_HPP_
#define LARDER_RUNTIME_TIER_LOCAL_TIERS_HPP_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/tier/arena.hpp"

namespace larder {

struct Placement {
  Tier tier;
  std::uint64_t offset;
};

class LocalTiers {
 public:
  LocalTiers() = default;
  void set(Tier tier, std::unique_ptr<Arena> arena) {
    arenas_[static_cast<int>(tier)] = std::move(arena);
  }
  Arena* get(Tier tier) const noexcept { return arenas_[static_cast<int>(tier)].get(); }

  // Space for `length` bytes in the first tier that has it; kNoSpace when none has. A tier
  // whose budget is used asks `make_room` (kept data this step does not use: Cache::make_room)
  // once before the next tier is tried.
  Result<Placement> allocate(std::uint64_t length);
  using MakeRoom = std::function<bool(Tier tier, std::uint64_t length)>;
  void set_make_room(MakeRoom make_room) { make_room_ = std::move(make_room); }

 private:
  std::array<std::unique_ptr<Arena>, kTierCount> arenas_;
  MakeRoom make_room_;  // set before the first allocation
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_LOCAL_TIERS_HPP_
