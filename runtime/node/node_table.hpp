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
// Open addressing with linear probing (16 probes); an entry is claimed by a compare-and-swap of
// its key word. A READY entry's answer can be renewed in place (renew(): a path's answer checked
// against the PFS again after LARDER_REVALIDATE, by one rank for the node); readers copy answers
// under a sequence lock, so they never see half of one. Lock-free; thread- and process-safe.
//
// The table grows with what the node reads, in levels: level 0 is the file the leader creates
// (`first` entries); a key whose 16 probes in level L find only other keys goes on to level L+1,
// twice the size of L, a file beside the first (<path>.<L>) that the first process to need it
// creates (whole, then linked into place: every process maps the same one) and the others map
// when they first reach it. Entries are never removed, so a key that went on from level L did so
// because those 16 slots were taken, and they still are for everyone looking for it later: every
// process finds a key in the same level. Levels stop at `max` entries in all (LARDER_NODE_SLOTS);
// past that, or when a level cannot be created (a full /dev/shm), acquire() answers kFull at the
// cost of one probe window per level (the caller asks the directory itself), and a failed
// creation is not tried again by this process.
#ifndef LARDER_RUNTIME_NODE_NODE_TABLE_HPP_
#define LARDER_RUNTIME_NODE_NODE_TABLE_HPP_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/directory/directory.hpp"

namespace larder {

class NodeTable {
 public:
  static constexpr int kMaxProbe = 16;
  static constexpr int kMaxLevels = 24;
  // The first level's entries when the cap allows (65536: 12 MiB).
  static constexpr std::uint32_t kFirstLevel = 1u << 16;

  // The node leader: creates level 0 (mode 0600, every page backed) of min(first, max) entries;
  // the table grows to at most `max` entries.
  static Result<std::unique_ptr<NodeTable>> create(const std::string& path, std::uint32_t first,
                                                   std::uint64_t max);
  // The node's other ranks: map the leader's table (the same `max` as the leader's).
  static Result<std::unique_ptr<NodeTable>> attach(const std::string& path, std::uint64_t max);
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

  // Entries of the levels this process has mapped, and their bytes (what the table costs).
  std::uint64_t entries() const noexcept;
  std::uint64_t bytes() const noexcept;
  int levels() const noexcept;
  const std::string& path() const noexcept { return path_; }

  // Words the node's ranks share beside the answers, zero at creation: the spare words of level
  // 0's first entry, which no entry uses. Word i < kNodeWords; the cache's disk-tier checks use
  // them (Cache::disk_checked): checks under way on the node, and whether one failed; list-ahead
  // counts the entries that may be files in the listings the node has resolved (saturating;
  // Cache::list_ahead_copies).
  static constexpr int kNodeWords = 4;
  static constexpr int kDiskChecking = 0;
  static constexpr int kDiskSuspect = 1;
  static constexpr int kListedFiles = 2;
  std::atomic<std::uint32_t>& node_word(int i) const noexcept;
  // Word i as it is now: what a read-only view may ask (view()).
  std::uint32_t node_word_now(int i) const noexcept;

  // A read-only mapping of the node's table (every level, mapped as it is first needed), for a
  // process of the node that reads answers and words but never claims, publishes or renews (a
  // DataLoader worker: runtime/agent/node_view.hpp). find() and node_word_now() are all it may
  // call; acquire() and renew() answer kFull, publish() and fail() do nothing.
  static Result<std::unique_ptr<NodeTable>> view(const std::string& path, std::uint64_t max);
  bool read_only() const noexcept { return read_only_; }

 private:
  struct Entry;
  struct Level {
    Entry* table = nullptr;
    std::uint32_t entries = 0;
  };
  // A slot names its level in the high bits, the entry in the low ones.
  static constexpr int kIndexBits = 27;
  NodeTable(std::string path, Level first, std::uint64_t max, bool read_only = false);
  // Maps level 0 of `path` (its size from the file) for attach() and view().
  static Result<std::unique_ptr<NodeTable>> map_first(const std::string& path, std::uint64_t max,
                                                      bool read_only);
  static std::size_t bytes_for(std::uint32_t entries) noexcept;
  // Level `l`'s entries (0 past the cap).
  std::uint32_t level_entries(int l) const noexcept;
  // Level `l` mapped in this process: mapped now (created first when `create` and nobody has),
  // or nullptr (past the cap, not created yet, or its creation failed).
  const Level* level(int l, bool create) const;
  // Maps (creating it when `create`) the file of level `l`.
  Result<Level> map_level(int l, bool create) const;
  Entry* entry_at(std::uint32_t slot) const noexcept;
  // acquire() within one level: kFull when its 16 probes hold other keys.
  Found acquire_in(const Level& lv, int l, const Key& key,
                   std::chrono::steady_clock::time_point deadline);
  static void store_payload(Entry& e, const Payload& payload) noexcept;
  // Copies a READY entry's answer into f; false when a renewal was writing it meanwhile.
  static bool load_payload(const Entry& e, Found* f) noexcept;
  // Waits while the entry is RESOLVING (marks it FAILED when its resolver died); its state.
  static std::uint32_t wait_resolved(Entry& e, std::chrono::steady_clock::time_point deadline,
                                     bool* timed_out) noexcept;
  // The entry of `key` (nullptr: none final or being resolved yet). `first_room` (may be null):
  // when none, the lowest level whose window for the key is not full (levels below it are, for
  // good), where a claim of the key starts.
  Entry* entry_of(const Key& key, std::uint32_t* slot, int* first_room = nullptr) const noexcept;

  std::string path_;
  const std::uint64_t max_;
  const bool read_only_;
  Level first_;
  mutable std::atomic<const Level*> levels_[kMaxLevels] = {};
  mutable std::unique_ptr<Level> owned_[kMaxLevels];  // levels 1.. (guarded by grow_)
  mutable std::mutex grow_;
  mutable std::atomic<bool> exhausted_{false};  // a level could not be made: do not try again
};

}  // namespace larder

#endif  // LARDER_RUNTIME_NODE_NODE_TABLE_HPP_
