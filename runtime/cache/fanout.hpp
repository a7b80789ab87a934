// Fan-out: how the copies of a hot chunk spread over the nodes that read it (docs/protocol.md,
// "Fan-out").
//
// Every node that needs a chunk takes a ticket on the chunk's directory entry, in the same round
// trip as its lookup (the node that loads it from the PFS, the origin, takes one too). Tickets
// become places in a tree of fan-out F rooted at the origin: the origin is position 0, and the
// other tickets fill positions 1, 2, ... in ticket order (position(t) skips the origin's own
// ticket). Position p's parent is (p - 1) / F, so no holder, the origin included, serves more
// than F other nodes, and a chunk read by N nodes is N - 1 copies deep about log_F(N). The tree
// is built on demand by the readers: each node with a place that can have children publishes a
// holder entry once its copy is made, and a node asks its parent's entry for the parent's copy.
// A parent that failed (or had no room) gives its entry up: the reader asks the next one up.
//
// Pure functions, shared by the cache and by the scale model (apps/larder-scale-model).
#ifndef LARDER_RUNTIME_CACHE_FANOUT_HPP_
#define LARDER_RUNTIME_CACHE_FANOUT_HPP_

#include <cstdint>
#include <vector>

namespace larder::fanout {

// The origin of a chunk loaded without a ticket (list-ahead): every ticket is then a reader's.
inline constexpr std::uint64_t kNoTicket = ~std::uint64_t{0};

// The tree position of the node holding `ticket`, when the origin holds `origin_ticket`.
inline std::uint64_t position(std::uint64_t ticket, std::uint64_t origin_ticket) noexcept {
  if (ticket == origin_ticket) return 0;
  return ticket < origin_ticket ? ticket + 1 : ticket;
}

// The position to ask for a copy: the parent of `p` (0 is the origin). p must be > 0.
inline std::uint64_t parent(std::uint64_t p, std::uint32_t fanout) noexcept {
  return p == 0 ? 0 : (p - 1) / (fanout == 0 ? 1 : fanout);
}

// The holders a node at `p` tries, nearest first, ending with the origin (0).
inline std::vector<std::uint64_t> ancestors(std::uint64_t p, std::uint32_t fanout) {
  std::vector<std::uint64_t> out;
  while (p != 0) {
    p = parent(p, fanout);
    out.push_back(p);
  }
  return out;
}

// Whether some position below `p` can exist in a job of `nodes` nodes. Each node takes at most
// one ticket per chunk, so positions run from 0 to nodes - 1; a position with no possible child
// (a leaf, most positions) neither claims nor publishes a holder entry, and nobody asks it.
inline bool can_have_children(std::uint64_t p, std::uint32_t fanout, std::uint64_t nodes) noexcept {
  const std::uint64_t f = fanout == 0 ? 1 : fanout;
  return nodes >= 2 && p <= (nodes - 2) / f;  // p * f + 1 <= nodes - 1
}

// The depth of `p` in the tree (0 for the origin).
inline std::uint32_t depth(std::uint64_t p, std::uint32_t fanout) noexcept {
  std::uint32_t d = 0;
  for (; p != 0; p = parent(p, fanout)) ++d;
  return d;
}

}  // namespace larder::fanout

#endif  // LARDER_RUNTIME_CACHE_FANOUT_HPP_
