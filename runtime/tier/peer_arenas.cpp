#include "runtime/tier/peer_arenas.hpp"

#include <mutex>

namespace larder {

Result<const Arena*> PeerArenas::get(int rank, Tier tier, std::uint32_t segment) {
  if (tier != Tier::kFile) segment = 0;
  const auto key = std::make_tuple(rank, tier, segment);
  {
    std::shared_lock lock(mu_);
    if (auto it = arenas_.find(key); it != arenas_.end())
      return static_cast<const Arena*>(it->second.get());
  }
  auto arena = Arena::attach(path_of_(rank, tier, segment));
  if (!arena.ok()) return arena.status();
  std::unique_lock lock(mu_);
  auto [it, inserted] = arenas_.emplace(key, std::move(*arena));
  return static_cast<const Arena*>(it->second.get());
}

}  // namespace larder
