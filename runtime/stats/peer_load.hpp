// PeerLoad: what this rank asked of every other rank: directory operations sent to its shard and
// bytes copied out of its memory. One-sided operations leave no trace at their target, so the
// load a rank carries is counted by the ranks that cause it and summed over the job at finalize
// (MpiJob::reduce_peer_load): the per-rank distributions of the stats JSON (docs/stats, "skew").
// Dense arrays of relaxed atomics, one slot per rank of the job.
#ifndef LARDER_RUNTIME_STATS_PEER_LOAD_HPP_
#define LARDER_RUNTIME_STATS_PEER_LOAD_HPP_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace larder {

class PeerLoad {
 public:
  explicit PeerLoad(int ranks);
  int ranks() const noexcept { return ranks_; }
  void directory_op(int target, std::uint64_t n = 1) noexcept { add(ops_.get(), target, n); }
  void fetched(int target, std::uint64_t bytes) noexcept { add(bytes_.get(), target, bytes); }
  // Copies of the arrays (ranks() values each).
  std::vector<std::uint64_t> directory_ops() const;
  std::vector<std::uint64_t> bytes() const;

 private:
  void add(std::atomic<std::uint64_t>* a, int target, std::uint64_t n) noexcept {
    if (target >= 0 && target < ranks_) a[target].fetch_add(n, std::memory_order_relaxed);
  }
  int ranks_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> ops_;    // relaxed: statistics only
  std::unique_ptr<std::atomic<std::uint64_t>[]> bytes_;  // relaxed: statistics only
};

}  // namespace larder

#endif  // LARDER_RUNTIME_STATS_PEER_LOAD_HPP_
