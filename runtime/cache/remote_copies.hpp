// RemoteCopies: private copies of whole remote chunks that this rank reads in small pieces.
//
// A remote hit costs one network round trip per read call. Readers that walk a chunk in small
// pieces (stdio buffers, zipfile, HDF5 metadata) would pay one per piece. The first partial read
// of a remote chunk fetches only the piece and remembers the chunk; a second partial read of it
// fetches the whole chunk once into a private copy, from which later pieces are served. Random
// single reads of big chunks therefore never fetch more than they need. Copies are kept in LRU
// order within a byte budget (LARDER_REMOTE_COPIES); entries are immutable like the chunks.
#ifndef LARDER_RUNTIME_CACHE_REMOTE_COPIES_HPP_
#define LARDER_RUNTIME_CACHE_REMOTE_COPIES_HPP_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "runtime/cache/records.hpp"

namespace larder {

class RemoteCopies {
 public:
  using Bytes = std::shared_ptr<const std::vector<std::byte>>;

  explicit RemoteCopies(std::uint64_t budget) : budget_(budget) {}

  // Whether chunks of this length may be copied at all (a quarter of the budget at most).
  bool eligible(std::uint64_t length) const noexcept { return length > 0 && length <= budget_ / 4; }
  // The copy of `record`'s chunk, if held.
  Bytes find(const ChunkRecord& record);
  // Records a partial read; true when this is the second one for the chunk (time to copy it).
  bool note_partial_read(const ChunkRecord& record);
  // Keeps a copy, evicting the least recently used ones past the budget.
  void put(const ChunkRecord& record, Bytes bytes);
  std::uint64_t bytes() const;

 private:
  using Id = std::tuple<std::int32_t, Tier, std::uint64_t>;  // owner, tier, offset
  static Id id_of(const ChunkRecord& r) noexcept { return {r.owner, r.tier, r.offset}; }
  struct Entry {
    Bytes bytes;
    std::list<Id>::iterator position;
  };
  static constexpr std::size_t kSeenLimit = 4096;

  const std::uint64_t budget_;
  mutable std::mutex mu_;
  std::list<Id> lru_;                           // most recent first; guarded by mu_
  std::map<Id, Entry> copies_;                  // guarded by mu_
  std::uint64_t bytes_ = 0;                     // guarded by mu_
  std::list<Id> seen_order_;                    // guarded by mu_
  std::map<Id, std::list<Id>::iterator> seen_;  // chunks read partially once; guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_REMOTE_COPIES_HPP_
