// Topology: which ranks share a node. With LARDER_NODE_SIZE=k, consecutive groups of k ranks are
// treated as nodes, so one machine can test node boundaries (reads across an emulated boundary
// go through the transport even though the memory is reachable).
//
// A rank holds nothing per rank of the job when ranks are placed on nodes in equal blocks (every
// node's ranks consecutive, every node but the last `block` of them): the placement schedulers
// and launchers make by default (Slurm's block distribution, Hydra's and Open MPI's by-slot
// mapping), and emulated nodes. Then a rank's node is `rank / block`. Nor when they are dealt
// round robin over N nodes (Slurm's cyclic distribution, `--map-by node`): then it is
// `rank % N` (`cyclic`). Nor when every node's ranks are consecutive but the nodes hold different
// numbers of them (Slurm's block distribution of a task count the nodes do not divide: 13, 13,
// 12, 12): then the rank a node starts at is kept per node (`starts`, 4 bytes a node). Other
// placements keep one entry per rank (`table`, 4 bytes each); MpiJob::place_ranks says which it
// found.
#ifndef LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_
#define LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace larder {

struct Topology {
  int rank = 0;
  int size = 1;
  int block = 1;            // > 0: node of rank r = r / block
  int cyclic = 0;           // > 0 (block 0): node of rank r = r % cyclic
  std::vector<int> starts;  // the first rank of each node, ascending (block and cyclic 0 only)
  std::vector<int> table;   // node index of each rank (block and cyclic 0, starts empty)

  int node_of(int r) const noexcept {
    if (block > 0) return r / block;
    if (cyclic > 0) return r % cyclic;
    if (!starts.empty()) {
      return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), r) - starts.begin()) -
             1;
    }
    return table[static_cast<std::size_t>(r)];
  }
  int node() const noexcept { return node_of(rank); }
  bool same_node(int a, int b) const noexcept { return node_of(a) == node_of(b); }
  int node_count() const noexcept {
    if (block > 0) return (size + block - 1) / block;
    if (cyclic > 0) return std::min(cyclic, size);
    if (!starts.empty()) return static_cast<int>(starts.size());
    int n = 0;
    for (int v : table) n = v + 1 > n ? v + 1 : n;
    return n;
  }
  // The lowest rank of `node` (its leader), or -1.
  int leader_of(int node) const noexcept {
    if (block > 0) return node >= 0 && node * block < size ? node * block : -1;
    if (cyclic > 0) return node >= 0 && node < std::min(cyclic, size) ? node : -1;
    if (!starts.empty()) {
      return node >= 0 && node < static_cast<int>(starts.size())
                 ? starts[static_cast<std::size_t>(node)]
                 : -1;
    }
    for (int r = 0; r < static_cast<int>(table.size()); ++r) {
      if (table[static_cast<std::size_t>(r)] == node) return r;
    }
    return -1;
  }
  int ranks_on_node(int node) const noexcept {
    if (block > 0) return std::max(0, std::min(block, size - node * block));
    if (cyclic > 0) return leader_of(node) < 0 ? 0 : (size - node + cyclic - 1) / cyclic;
    if (!starts.empty()) {
      const int first = leader_of(node);
      if (first < 0) return 0;
      const auto next = static_cast<std::size_t>(node) + 1;
      return (next < starts.size() ? starts[next] : size) - first;
    }
    int n = 0;
    for (int v : table) n += v == node ? 1 : 0;
    return n;
  }
  // Rank r's place among its node's ranks in rank order: 0 for the leader, up to
  // ranks_on_node - 1.
  int index_on_node(int r) const noexcept {
    if (block > 0) return r % block;
    if (cyclic > 0) return r / cyclic;
    if (!starts.empty()) return r - leader_of(node_of(r));
    int n = 0;
    for (int q = 0; q < r; ++q) n += table[static_cast<std::size_t>(q)] == node_of(r) ? 1 : 0;
    return n;
  }
  // Bytes this rank holds for the other ranks of the job (Fabric::peer_state counts them too).
  std::size_t bytes_per_job() const noexcept { return table.size() * sizeof(int); }
  // Bytes this rank holds for the nodes of the job.
  std::size_t bytes_per_node() const noexcept { return starts.size() * sizeof(int); }
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_
