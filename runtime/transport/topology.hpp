// Topology: which ranks share a node. With LARDER_NODE_SIZE=k, consecutive groups of k ranks are
// treated as nodes, so one machine can test node boundaries (reads across an emulated boundary
// go through the transport even though the memory is reachable).
#ifndef LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_
#define LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_

#include <vector>

namespace larder {

struct Topology {
  int rank = 0;
  int size = 1;
  std::vector<int> node_of{0};  // node index of each rank

  bool same_node(int a, int b) const noexcept { return node_of[a] == node_of[b]; }
  int node_count() const noexcept {
    int n = 0;
    for (int v : node_of) n = v + 1 > n ? v + 1 : n;
    return n;
  }
  // The lowest rank of `node` (its leader), or -1.
  int leader_of(int node) const noexcept {
    for (int r = 0; r < static_cast<int>(node_of.size()); ++r) {
      if (node_of[static_cast<std::size_t>(r)] == node) return r;
    }
    return -1;
  }
  int ranks_on_node(int node) const noexcept {
    int n = 0;
    for (int v : node_of) n += v == node ? 1 : 0;
    return n;
  }
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_TOPOLOGY_HPP_
