// Fan-out: how the copies of a hot chunk spread over the nodes that read it (docs/protocol.md,
// "Fan-out").
//
// Every node that needs a chunk held elsewhere takes a ticket on the chunk's directory entry, in
// the same round trip as its lookup; the ticket is its position in a tree of fan-out F (position
// p's parent is (p - 1) / F). The rank that loaded the chunk from the PFS (the origin) holds the
// position of its own ticket, and a position's parent is asked for its copy, so the tree is built
// on demand by the readers themselves, depth about log_F(readers), and no holder serves more than
// F other nodes. A position whose holder is missing (it failed, or has no room) is skipped: the
// reader asks the next holder up, and position 0's parent is the origin itself.
//
// Pure functions, shared by the cache and by the scale model (apps/larder-scale-model).
#ifndef LARDER_RUNTIME_CACHE_FANOUT_HPP_
#define LARDER_RUNTIME_CACHE_FANOUT_HPP_

#include <cstdint>
#include <vector>

namespace larder::fanout {

inline constexpr std::uint64_t kOrigin = ~std::uint64_t{0};  // "ask the origin itself"

// The position to ask for a copy, for a reader at `position`: its parent, or kOrigin for 0.
inline std::uint64_t parent(std::uint64_t position, std::uint32_t fanout) noexcept {
  if (position == 0 || position == kOrigin) return kOrigin;
  return (position - 1) / (fanout == 0 ? 1 : fanout);
}

// The holders a reader at `position` tries, nearest first, ending with kOrigin.
inline std::vector<std::uint64_t> ancestors(std::uint64_t position, std::uint32_t fanout) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t q = parent(position, fanout);; q = parent(q, fanout)) {
    out.push_back(q);
    if (q == kOrigin) break;
  }
  return out;
}

// The depth of `position` in the tree (0 for position 0).
inline std::uint32_t depth(std::uint64_t position, std::uint32_t fanout) noexcept {
  std::uint32_t d = 0;
  for (std::uint64_t q = position; q != 0 && q != kOrigin; q = parent(q, fanout)) ++d;
  return d;
}

}  // namespace larder::fanout

#endif  // LARDER_RUNTIME_CACHE_FANOUT_HPP_
