// PeerArenas: read-only mappings of the arenas and segments (segments.hpp) of the other ranks of
// this node, attached on first use and kept until finalize. A node-local hit is a memcpy from
// here: no message.
#ifndef LARDER_RUNTIME_TIER_PEER_ARENAS_HPP_
#define LARDER_RUNTIME_TIER_PEER_ARENAS_HPP_

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <utility>

#include "runtime/tier/arena.hpp"

namespace larder {

class PeerArenas {
 public:
  // The file of `rank`'s arena `tier` (or, for Tier::kFile, of its segment `segment`).
  using PathOf = std::function<std::string(int rank, Tier tier, std::uint32_t segment)>;
  explicit PeerArenas(PathOf path_of) : path_of_(std::move(path_of)) {}

  // The mapping of `rank`'s arena `tier` (or segment), attaching it if needed. Thread-safe.
  Result<const Arena*> get(int rank, Tier tier, std::uint32_t segment = 0);

 private:
  PathOf path_of_;
  std::shared_mutex mu_;
  std::map<std::tuple<int, Tier, std::uint32_t>, std::unique_ptr<Arena>> arenas_;  // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_PEER_ARENAS_HPP_
