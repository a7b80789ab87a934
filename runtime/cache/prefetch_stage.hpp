// A rank's stage: chunks of its schedule that its tiers have no room for, read ahead from the
// PFS (or copied from the node that holds them) into the rank's own memory and handed to the
// read that names them (docs/architecture.md, "Told the order", "Past the budget").
//
// A chunk is reserved before its load (the read that comes meanwhile waits for it rather than
// read the PFS a second time), filled once, and taken by reads until they have covered its
// bytes, then freed. A read that went to the PFS before the stage reserved the chunk leaves a
// mark that turns that reservation down once (the schedule's entry it was for has been read).
// Entries are tagged with their place in the schedule and dropped, unread, once the reads are
// far past it. Thread-safe.
#ifndef LARDER_RUNTIME_CACHE_PREFETCH_STAGE_HPP_
#define LARDER_RUNTIME_CACHE_PREFETCH_STAGE_HPP_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "runtime/chunk/chunk_key.hpp"

namespace larder {

class PrefetchStage {
 public:
  // Where a chunk sits in the schedule: its generation (a new schedule starts one) and entry.
  struct Place {
    std::uint64_t generation = 0;
    std::uint64_t entry = 0;
  };
  enum class Reserved { kYes, kFull, kHeld, kRead };
  struct Dropped {
    std::uint64_t chunks = 0;
    std::uint64_t bytes = 0;
  };
  enum class Took { kAbsent, kTaken, kWaited };

  // `capacity`: the bytes the stage holds at most, reserved ones included.
  explicit PrefetchStage(std::uint64_t capacity) : capacity_(capacity) {}
  PrefetchStage(const PrefetchStage&) = delete;
  PrefetchStage& operator=(const PrefetchStage&) = delete;
  ~PrefetchStage() = default;

  // Reserves room for chunk `key` (`length` bytes of version `version`): kYes, then the caller
  // must call fill() once. kFull: no room now; kHeld: already staged; kRead: a read has taken
  // the PFS's bytes of it since it was last staged (that read's mark is used up).
  Reserved reserve(const Key& key, std::uint64_t version, std::uint64_t length, Place at);
  // The bytes of a reserved chunk, or nothing (the load failed: readers go the usual way).
  // `copied`: they came from another node's copy (checked against its hash), not the PFS.
  void fill(const Key& key, std::unique_ptr<std::byte[]> bytes, bool copied = false);

  // Copies [offset, offset + into.size()) of chunk `key` of `version` into `into`, waiting for
  // its load if it is under way. The chunk is freed once reads have covered its length.
  // kAbsent: not staged (or another version, or its load failed); the caller reads the PFS, and
  // a later reservation of the chunk is turned down once (in the same step, so no load can
  // start between this answer and that mark).
  // `mark` false: an absent chunk is left unmarked (a read that asks before the cache does).
  // `copied`, when given, is set to whether a taken chunk was filled as a copy (fill()).
  Took take(const Key& key, std::uint64_t version, std::uint64_t offset, std::span<std::byte> into,
            bool mark = true, bool* copied = nullptr);
  // Whether chunk `key` of `version` is staged or being staged (a worker's miss then asks its
  // rank to read it, without a claim).
  bool holds(const Key& key, std::uint64_t version) const;

  // Drops the chunks the reads are past: of an older generation once the current one's reads
  // are `lag` entries in, or of this one `lag` entries behind `position`.
  Dropped drop_passed(std::uint64_t generation, std::uint64_t position, std::uint64_t lag);
  // Drops everything (the job ends), waiting for loads under way to be filled first.
  Dropped drop_all();

  // Whether anything is staged or reserved (one relaxed load: most reads).
  bool empty() const noexcept { return entries_n_.load(std::memory_order_relaxed) == 0; }
  bool full() const;
  std::uint64_t bytes() const;

 private:
  struct Entry {
    std::uint64_t version = 0;
    std::uint64_t length = 0;
    std::uint64_t taken = 0;  // bytes reads have copied out
    Place at;
    bool filled = false;
    bool copied = false;                 // filled from another node's copy, not the PFS
    std::unique_ptr<std::byte[]> bytes;  // null once filled: the load failed
  };
  void erase(std::unordered_map<Key, Entry, KeyHash>::iterator it);  // mu_ held

  static constexpr std::size_t kReadMarks = 1 << 16;  // the oldest go first

  const std::uint64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable filled_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::atomic<std::size_t> entries_n_{0};
  std::uint64_t bytes_ = 0;
  std::unordered_set<Key, KeyHash> read_;
  std::deque<Key> read_order_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_PREFETCH_STAGE_HPP_
