// NodeView: what a DataLoader worker finds on its node by itself, without a message to its rank.
//
// A worker's rank publishes every answer it resolves for the node in the node table (a path's
// stat answer, where a chunk's bytes sit on the node), in shared memory. The worker maps that
// table read-only (NodeTable::view) and looks keys up itself: a hit costs a hash, a probe of the
// table and a copy from a read-only mapping of the holder's arena, as a rank's hit does, instead
// of a round trip over the agent's socket (about 11 us, several times a plain open+read+close of
// a small file from the page cache). What the view does not settle goes to the rank as before:
// a key not in the table (a miss, which the rank claims and loads), an answer older than
// LARDER_REVALIDATE (the rank renews it), a produced path, a chunk of another version of the
// file, a chunk held on another node or "read the PFS", and a chunk in a kept file the worker
// has not seen its rank mark used in this step (kept_file_known). The integrity rules are the
// rank's: bytes on the node were checked when they entered it; disk-tier chunks follow the
// node's words (node_word).
#ifndef LARDER_RUNTIME_AGENT_NODE_VIEW_HPP_
#define LARDER_RUNTIME_AGENT_NODE_VIEW_HPP_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/records.hpp"
#include "runtime/config/config.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/node/prefetch_marks.hpp"

namespace larder::agent {

class NodeView {
 public:
  // Maps the node table `path` read-only; `ranks`: the ranks of the node (whose arenas a worker
  // may map).
  static Result<std::unique_ptr<NodeView>> open(const std::string& path, std::uint64_t max,
                                                std::vector<int> ranks, const Config& config);

  // The node's stat (follow) or lstat answer for `path`, when the node holds one the worker may
  // use as it is.
  std::optional<PathRecord> path(const std::string& path, bool follow) const;
  // Where chunk `index` of `file` sits on this node, when the node holds it and the worker may
  // copy it itself.
  std::optional<ChunkRecord> chunk(const CachedFile& file, std::uint64_t index) const;
  // After the rank placed a chunk of kept file `segment` for this worker (kPlace), the kept
  // file is used in this step and never evicted before its end: its chunks are the worker's
  // to copy from then on.
  void kept_file_known(std::uint32_t segment);
  // The worker read a chunk made ready ahead (ChunkRecord::mark): used, in the node's
  // PrefetchMarks (mapped read-write the first time; they only count, prefetch.unused_bytes).
  void use_mark(std::uint32_t mark);
  // The node's word i (NodeTable::kDiskChecking, kDiskSuspect) as it is now.
  std::uint32_t node_word(int i) const noexcept { return table_->node_word_now(i); }
  bool on_node(int rank) const noexcept;

 private:
  NodeView(std::unique_ptr<NodeTable> table, std::vector<int> ranks, const Config& config)
      : table_(std::move(table)), ranks_(std::move(ranks)), config_(config) {}
  bool fresh(std::int64_t checked_s) const noexcept;

  std::unique_ptr<NodeTable> table_;
  const std::vector<int> ranks_;  // sorted
  const Config& config_;
  mutable std::mutex kept_mu_;
  std::unordered_set<std::uint32_t> kept_known_;  // guarded by kept_mu_
  std::once_flag marks_once_;
  std::unique_ptr<PrefetchMarks> marks_;  // set once, under marks_once_
};

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_NODE_VIEW_HPP_
