// NodeTable: the directory answers of one node, shared by its ranks in shared memory
// (<shm job dir>/node-<node>.table, created by the node's leader, mapped by the node's ranks).
//
// The ranks of a node ask the job-wide directory once per key between them: the first rank that
// needs a key claims its entry here (RESOLVING), asks the directory (or the PFS, or another node)
// and publishes the answer (READY, with the same payload as a directory entry, but describing
// where the bytes are *on this node*: a chunk fetched from another node is copied into the
// resolver's arena first, so the network carries it once per node). The node's other ranks that
// need it meanwhile sleep on the entry's state word (a futex shared across processes: no polling,
// no message) and are woken when it is published. A resolver that dies leaves its entry
// RESOLVING: waiters check every 100 ms whether its process still exists and, when not, mark the
// entry FAILED and go on without it; otherwise they wait up to their timeout.
//
// Open addressing with linear probing (64 probes); an entry is claimed by a compare-and-swap of
// its key word. A READY entry's answer can be renewed in place (renew(): a path's answer checked
// against the PFS again after LARDER_REVALIDATE, by one rank for the node); readers copy answers
// under a sequence lock, so they never see half of one. A full table answers kFull: the caller
// asks the directory itself. Lock-free; thread- and process-safe.
#ifndef LARDER_RUNTIME_NODE_NODE_TABLE_HPP_
#define LARDER_RUNTIME_NODE_NODE_TABLE_HPP_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/directory/directory.hpp"

namespace larder {

class NodeTable {
 public:
  static constexpr int kMaxProbe = 64;

  // The node leader: creates the table (mode 0600, every page backed).
  static Result<std::unique_ptr<NodeTable>> create(const std::string& path, std::uint32_t entries);
  // The node's other ranks: map the leader's table.
  static Result<std::unique_ptr<NodeTable>> attach(const std::string& path);
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;
  ~NodeTable();

  struct Found {
    enum class Outcome { kReady, kClaimed, kFailed, kFull, kTimeout };
    Outcome outcome = Outcome::kFull;
    Payload payload{};
    std::uint32_t slot = 0;        // kClaimed: what publish()/fail() need
    std::int64_t resolved_ns = 0;  // kReady: when the answer was made (CLOCK_MONOTONIC)
  };
  // The node's answer for `key`: READY, or claimed for the caller (who must publish or fail it),
  // or FAILED; an entry being resolved by another rank is waited for, up to `timeout`.
  Found acquire(const Key& key, std::chrono::milliseconds timeout);
  // The answer if READY, without claiming or waiting.
  Found find(const Key& key) const;
  // Renewal of a READY entry whose answer is `seen`: claims it for the caller (kClaimed: publish
  // the new answer, or `seen` again, with publish(); readers wait meanwhile); when another rank
  // has renewed it already, its answer (kReady); when another rank is renewing it, waits up to
  // `timeout` for that. kFull: the key has no entry here; kFailed: its entry failed.
  Found renew(const Key& key, const Payload& seen, std::chrono::milliseconds timeout);
  void publish(std::uint32_t slot, const Payload& payload);
  void fail(std::uint32_t slot);

  std::uint32_t entries() const noexcept { return entries_; }
  const std::string& path() const noexcept { return path_; }

 private:
  struct Entry;
  NodeTable(std::string path, Entry* entries, std::uint32_t count, std::size_t bytes);
  static std::size_t bytes_for(std::uint32_t entries) noexcept;
  static void store_payload(Entry& e, const Payload& payload) noexcept;
  // Copies a READY entry's answer into f; false when a renewal was writing it meanwhile.
  static bool load_payload(const Entry& e, Found* f) noexcept;
  // Waits while the entry is RESOLVING (marks it FAILED when its resolver died); its state.
  static std::uint32_t wait_resolved(Entry& e, std::chrono::steady_clock::time_point deadline,
                                     bool* timed_out) noexcept;
  Entry* entry_of(const Key& key, std::uint32_t* slot) const noexcept;

  std::string path_;
  Entry* table_ = nullptr;
  std::uint32_t entries_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_NODE_NODE_TABLE_HPP_
