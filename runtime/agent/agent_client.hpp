// AgentClient: a worker process's FileService, served by its node's shared tables and its rank.
//
// A stat answer or a chunk's place that the node already holds is found in the node table
// itself (NodeView, a read-only mapping): no message. What the node does not hold, or what needs
// the rank (a miss to claim and load, a renewal, a chunk held on another node), is asked over the
// node-local channel once and remembered. Chunk bytes on this node are copied from read-only
// mappings of the owners' arena files; only chunks held elsewhere travel over the socket. If the
// channel breaks (the rank finished or died), every call answers "unavailable" and the caller reads
// the file system itself: a worker never fails because its rank went away. Counters go straight
// into the worker's slot of the rank's worker stats file (worker_stats.hpp), which the rank folds
// into the job's stats; only when it has no slot does it send them over the channel (every 256
// reads and at exit).
#ifndef LARDER_RUNTIME_AGENT_AGENT_CLIENT_HPP_
#define LARDER_RUNTIME_AGENT_AGENT_CLIENT_HPP_

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "runtime/agent/node_view.hpp"
#include "runtime/agent/protocol.hpp"
#include "runtime/agent/worker_stats.hpp"
#include "runtime/api/file_service.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/tier/peer_arenas.hpp"

namespace larder::agent {

class AgentClient final : public FileService {
 public:
  // Connects to the agent `name` and checks it is the rank whose pid the name carries.
  static Result<std::unique_ptr<AgentClient>> connect(const std::string& name, Config config);
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;
  ~AgentClient() override;

  const Config& config() const noexcept override { return config_; }
  Result<PathRecord> lookup(const std::string& path) override;
  Result<PathRecord> lookup_link(const std::string& path) override;
  Result<std::string> node_file(const CachedFile& file) override;
  Result<std::string> produce_claim(const std::string& path) override;
  Result<PathRecord> produce_publish(const std::string& path, const std::string& canonical,
                                     const std::string& staging, std::uint32_t mode) override;
  void produce_abandon(const std::string& path, const std::string& canonical) override;
  Result<PathRecord> produce_alias(const std::string& from, const std::string& to) override;
  std::string produce_dir() override;
  Result<std::shared_ptr<const Listing>> list(const std::string& path) override;
  Result<std::size_t> read(const CachedFile& file, std::span<std::byte> into,
                           std::uint64_t offset) override;

  int rank() const noexcept { return rank_; }
  // The node's table, mapped read-only on first use; null when the rank has none to show (then
  // every answer is asked for, and every disk-tier chunk is read through the rank).
  NodeView* node_view();
  // Without a stats slot: sends the counters gathered since the last flush. With one: nothing
  // to do (the rank reads the slot).
  void flush_stats() noexcept;
  // In a child after fork: this process must not use the connection. Async-signal-safe.
  void abandon_in_child() noexcept;

 private:
  AgentClient(int fd, Config config, int rank, std::uint64_t chunk_size,
              std::unique_ptr<WorkerStatsFile> stats_file, int stats_slot);
  Stats& stats() noexcept { return shared_stats_ != nullptr ? *shared_stats_ : own_stats_; }
  struct Reply {
    std::uint32_t status = kUnavailable;
    std::vector<std::byte> body;
  };
  // One request and its reply, serialized on the connection. Not OK when the channel broke.
  Result<Reply> call(Op op, std::span<const std::byte> a, std::span<const std::byte> b);
  Result<PathRecord> lookup_kind(const std::string& path, bool follow);
  // Copies one piece from a node-local arena; false when it cannot (the caller asks for bytes).
  bool copy_local(const CachedFile& file, std::uint64_t index, std::uint64_t offset_in_chunk,
                  std::span<std::byte> into);
  // Copies `into.size()` bytes at `offset` of `arena` (see the definition for how).
  static void copy_out(const Arena& arena, std::uint64_t offset, std::span<std::byte> into,
                       bool in_memory);
  Result<std::size_t> read_inline(const CachedFile& file, std::uint64_t offset,
                                  std::span<std::byte> into);
  void maybe_flush() noexcept;
  // Whether an answer made at `checked_s` is older than LARDER_REVALIDATE.
  bool stale(std::int64_t checked_s) const noexcept;

  std::atomic<int> fd_;  // -1 once broken or abandoned
  const Config config_;
  const int rank_;
  const std::uint64_t chunk_size_;
  std::mutex call_mu_;  // one request at a time on the socket

  std::shared_mutex memo_mu_;
  std::unordered_map<std::string, PathRecord> paths_;  // guarded by memo_mu_
  std::unordered_map<std::string, PathRecord> links_;  // guarded by memo_mu_
  struct KnownListing {
    std::shared_ptr<const Listing> listing;
    std::int64_t fetched_s = 0;  // answers older than LARDER_REVALIDATE are asked for again
  };
  std::unordered_map<std::string, KnownListing> lists_;   // guarded by memo_mu_
  std::unordered_map<Key, ChunkRecord, KeyHash> places_;  // guarded by memo_mu_
  PeerArenas arenas_;
  std::once_flag view_once_;
  std::unique_ptr<NodeView> view_;  // set once, under view_once_

  std::unique_ptr<WorkerStatsFile> stats_file_;      // the rank's worker stats file, mapped
  Stats* shared_stats_ = nullptr;                    // this worker's slot in it, or null
  Stats own_stats_;                                  // without a slot
  StatsSnapshot sent_;                               // guarded by call_mu_
  std::atomic<std::uint64_t> reads_since_flush_{0};  // relaxed: a trigger only
};

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_AGENT_CLIENT_HPP_
