// A rank's stage: chunks of its schedule that its tiers have no room for, read ahead from the
// PFS (or copied from the node that holds them) into the rank's own memory and handed to the
// read that names them (docs/architecture.md, "Told the order", "Past the budget").
//
// A chunk is reserved before its load (the read that comes meanwhile waits for it rather than
// read the PFS a second time), filled once, and taken by reads until they have covered its
// bytes once for each entry of the schedule that reserved it (a schedule of two epochs names a
// file twice), then freed. When the stage is full, the filled chunk whose next use is furthest
// (Belady), if it is further than the entry to reserve, makes room for it. A read that went to
// the PFS before the stage reserved the chunk leaves a mark, tagged with the reads' position
// then, that turns down a reservation for an entry up to kMarkReach past that position (the
// entry it was for has been read) and lets a later entry's through. Entries are dropped, unread,
// once the reads are far past their last use. Thread-safe.
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
#include <vector>

#include "runtime/chunk/chunk_key.hpp"

namespace larder {

class PrefetchStage {
 public:
  // Where a chunk sits in the schedule: its generation (a new schedule starts one) and entry.
  // (No member initializers: a default argument below is one; `Place{}` is zero.)
  struct Place {
    std::uint64_t generation;
    std::uint64_t entry;
  };
  enum class Reserved { kYes, kFull, kHeld, kRead };
  struct Dropped {
    std::uint64_t chunks = 0;
    std::uint64_t bytes = 0;
  };
  enum class Took { kAbsent, kTaken, kWaited };
  // How many entries past the reads' position a read's mark reaches: a loader that reports its
  // position once it has read a batch reads this far ahead of it.
  static constexpr std::uint64_t kMarkReach = 8;

  // `capacity`: the bytes the stage holds at most, reserved ones included.
  explicit PrefetchStage(std::uint64_t capacity) : capacity_(capacity) {}
  PrefetchStage(const PrefetchStage&) = delete;
  PrefetchStage& operator=(const PrefetchStage&) = delete;
  ~PrefetchStage() = default;

  // Reserves room for chunk `key` (`length` bytes of version `version`) for the schedule's entry
  // `at`: kYes, then the caller must call fill() once. kFull: no room now, and no staged chunk
  // is used later than `at`; kHeld: already staged (for another entry of the same schedule it
  // is kept for this one too); kRead: a read has taken the PFS's bytes of it for this entry
  // (that read's mark is used up). `evicted`, when given, counts the chunks dropped to make
  // room (their next use was further than `at`'s).
  Reserved reserve(const Key& key, std::uint64_t version, std::uint64_t length, Place at,
                   Dropped* evicted = nullptr);
  // The bytes of a reserved chunk, or nothing (the load failed: readers go the usual way).
  // `copied`: they came from another node's copy (checked against its hash), not the PFS.
  void fill(const Key& key, std::unique_ptr<std::byte[]> bytes, bool copied = false);

  // Another entry `at` of the schedule names chunk `key`, which another batch of the rank is
  // resolving now: if that batch stages it (or has), it is kept for this entry's reads too.
  void expect(const Key& key, Place at);

  // Copies [offset, offset + into.size()) of chunk `key` of `version` into `into`, waiting for
  // its load if it is under way. The chunk is freed once reads have covered its length once
  // for each entry it was reserved for.
  // kAbsent: not staged (or another version, or its load failed); the caller reads the PFS, and
  // a later reservation of the chunk for an entry up to kMarkReach past `position` (the reads'
  // position in the schedule now) is turned down once (marked in the same step, so no load can
  // start between this answer and that mark).
  // `mark` false: an absent chunk is left unmarked (a read that asks before the cache does).
  // `copied`, when given, is set to whether a taken chunk was filled as a copy (fill()).
  Took take(const Key& key, std::uint64_t version, std::uint64_t offset, std::span<std::byte> into,
            bool mark = true, bool* copied = nullptr, Place position = {});
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
  // Whether a reservation for entry `next` (or later) would find no room: full, and every
  // filled chunk is used before it.
  bool full_for(Place next) const;
  std::uint64_t bytes() const;

 private:
  struct Entry {
    std::uint64_t version = 0;
    std::uint64_t length = 0;
    std::uint64_t taken = 0;          // bytes reads have copied out for the current use
    std::uint64_t generation = 0;     // the schedule `uses` are entries of
    std::vector<std::uint64_t> uses;  // its entries it is staged for, not yet read, ascending
    bool used = false;                // a read has taken some of it
    bool filled = false;
    bool copied = false;                 // filled from another node's copy, not the PFS
    std::unique_ptr<std::byte[]> bytes;  // null once filled: the load failed
  };
  struct Expected {
    std::uint64_t generation = 0;
    std::vector<std::uint64_t> uses;
  };
  void erase(std::unordered_map<Key, Entry, KeyHash>::iterator it);  // mu_ held
  // Adds the entries `uses` of schedule `generation` to those `e` is kept for; a newer
  // schedule's stand for the older one's (the same reads), an older one's are ignored.
  static void add_uses(Entry& e, std::uint64_t generation, std::span<const std::uint64_t> uses);
  // How far chunk `e`'s next use is, seen from schedule `generation`: an older schedule's
  // chunk is furthest. mu_ held.
  static std::uint64_t next_use(const Entry& e, std::uint64_t generation);
  // The filled chunk used furthest after `at`, or end(). mu_ held.
  std::unordered_map<Key, Entry, KeyHash>::iterator furthest_after(Place at);

  static constexpr std::size_t kReadMarks = 1 << 16;  // the oldest go first

  const std::uint64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable filled_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::atomic<std::size_t> entries_n_{0};
  std::uint64_t bytes_ = 0;
  std::unordered_map<Key, Place, KeyHash> read_;  // marks: the reads' position then
  std::deque<Key> read_order_;
  std::unordered_map<Key, Expected, KeyHash> expected_;  // expect()ed, not reserved yet
  std::deque<Key> expected_order_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_PREFETCH_STAGE_HPP_
