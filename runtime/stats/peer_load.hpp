// PeerLoad: what this rank asked of other ranks: directory operations sent to their shards and
// bytes copied out of their memory. One-sided operations leave no trace at their target, so the
// load a rank carries is counted by the ranks that cause it and sent to it at finalize
// (MpiJob::reduce_stats: one message to each rank asked, nothing to the others), for the
// per-rank distributions of the stats JSON (docs/stats, "skew").
//
// Sparse: one entry per rank actually asked (not per rank of the job), so what a rank holds here
// grows with the peers it used, never with the job's size.
#ifndef LARDER_RUNTIME_STATS_PEER_LOAD_HPP_
#define LARDER_RUNTIME_STATS_PEER_LOAD_HPP_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace larder {

class PeerLoad {
 public:
  explicit PeerLoad(int ranks) : ranks_(ranks > 0 ? ranks : 1) {}
  int ranks() const noexcept { return ranks_; }
  void directory_op(int target, std::uint64_t n = 1) { add(target, n, 0); }
  void fetched(int target, std::uint64_t bytes) { add(target, 0, bytes); }

  struct Entry {
    int target = 0;
    std::uint64_t ops = 0;    // directory operations sent to `target`
    std::uint64_t bytes = 0;  // bytes copied out of `target`'s memory
  };
  // Every rank asked, by rank.
  std::vector<Entry> entries() const;
  // Ranks asked so far (the entries held).
  std::size_t size() const;

 private:
  struct Load {
    std::uint64_t ops = 0;
    std::uint64_t bytes = 0;
  };
  void add(int target, std::uint64_t ops, std::uint64_t bytes);

  int ranks_;
  mutable std::mutex mu_;
  std::unordered_map<int, Load> load_;  // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_STATS_PEER_LOAD_HPP_
