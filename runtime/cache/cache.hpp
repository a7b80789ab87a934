// Cache: the read path of docs/architecture.md for one rank.
//
// Reading a byte range visits each chunk it touches: this rank's memo of directory answers,
// then the directory (claiming the chunk if nobody has), then the bytes from this rank's arena,
// a node peer's arena (memcpy) or another node (transport). Any failure of the cache reads the
// PFS directly and still returns the right bytes; errors of the PFS itself are returned as-is.
// Thread-safe: many application threads may read at once.
#ifndef LARDER_RUNTIME_CACHE_CACHE_HPP_
#define LARDER_RUNTIME_CACHE_CACHE_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "runtime/cache/listing.hpp"
#include "runtime/cache/records.hpp"
#include "runtime/cache/remote_copies.hpp"
#include "runtime/config/config.hpp"
#include "runtime/directory/directory.hpp"
#include "runtime/pfs/file_system.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/tier/peer_arenas.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "runtime/transport/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

// A managed regular file as the read path needs it.
struct CachedFile {
  std::string path;        // as opened (absolute, lexically clean): used for PFS reads
  FileId id;               // canonical identity: used for chunk keys
  std::uint64_t size = 0;  // from the cached stat
};

struct CacheParts {
  const Config* config = nullptr;
  Stats* stats = nullptr;
  FileSystem* pfs = nullptr;
  Directory* directory = nullptr;
  LocalTiers* tiers = nullptr;
  PeerArenas* peers = nullptr;         // null: no node-local sharing (single process)
  Transport* transport = nullptr;      // null: no cross-node reads
  ProgressThread* progress = nullptr;  // null: nobody to tell that reads are under way
  Topology topology;
};

class Cache {
 public:
  explicit Cache(CacheParts parts);

  // The stat() answer for `path` (absolute, lexically clean), from the PFS at most once per job.
  // A non-OK Result means the cache could not answer (the caller asks the PFS itself); an
  // answer that the path does not exist is an OK record with error == ENOENT.
  Result<PathRecord> lookup(const std::string& path);
  // The lstat() answer for `path`: the stat() answer when no component of the path is a symlink
  // (its canonical name is the path itself), else a kLinkPath entry, once per job.
  Result<PathRecord> lookup_link(const std::string& path);
  // The listing of directory `path` (absolute, lexically clean), from the PFS at most once per
  // job: the rank that claims it stores the records in its arena (see ListingRecord). A non-OK
  // Result means the cache could not answer; an errno of listing is an OK Listing with error set.
  Result<std::shared_ptr<const Listing>> list(const std::string& path);

  // Where chunk `index` of `file` can be copied from by a process of this node (worker agents):
  // node_local says the bytes sit in an arena file on this node (the record says whose and
  // where); otherwise the caller reads the range with read(). Loads the chunk if nobody has.
  struct Place {
    bool node_local = false;
    ChunkRecord record;
  };
  Result<Place> place(const CachedFile& file, std::uint64_t index);

  // Reads up to into.size() bytes at `offset`; fewer only at end of file. Errors are the PFS's
  // errno (in native_code()). Counts what the cache did (hits, misses, PFS and transport), not
  // the application's read: the caller counts that (Session::read for this rank's own reads, a
  // worker for its own), so a worker's read served by its rank is counted once.
  Result<std::size_t> read(const CachedFile& file, std::span<std::byte> into, std::uint64_t offset);

  // Finalize has begun: from now on no call makes a directory or transport operation (a read
  // still in flight after the drain must not touch MPI); everything goes to the PFS.
  void begin_close() noexcept {
    closing_.store(true, std::memory_order_release);
    if (transport_ != nullptr) transport_->begin_close();
  }
  bool closing() const noexcept { return closing_.load(std::memory_order_acquire); }

  std::uint64_t chunk_size() const noexcept { return config_.chunk_size; }

 private:
  enum class Source { kCache, kDirect };
  struct Located {
    Source source = Source::kDirect;
    ChunkRecord record;
    bool fresh = false;  // loaded by this call: its first use is the miss, not a hit
  };

  Result<PathRecord> lookup_key(const std::string& path, const Key& key, bool link);
  Result<PathRecord> resolve_and_publish(const std::string& path, const Key& key, bool claimed,
                                         bool link);
  std::shared_ptr<const Listing> fetch_listing(const std::string& path, const ListingRecord& rec);
  std::shared_ptr<const Listing> load_listing(const std::string& path, const Key& key);
  std::shared_ptr<const Listing> list_direct(const std::string& path);
  std::shared_ptr<const Listing> remember_listing(const std::string& path,
                                                  std::shared_ptr<const Listing> listing);
  Result<Located> locate(const CachedFile& file, std::uint64_t index);
  Result<Located> load(const CachedFile& file, std::uint64_t index, const Key& key);
  // Copies a piece out of a located chunk; false when the copy failed (fall back).
  // Serves a piece of a remote chunk from (or into) this rank's private copy of the whole chunk.
  bool copy_from_remote_copy(const ChunkRecord& record, std::uint64_t offset_in_chunk,
                             std::span<std::byte> into);
  bool copy_out(const ChunkRecord& record, std::uint64_t offset_in_chunk, std::span<std::byte> into,
                bool count_hit);
  Result<std::size_t> read_direct(const CachedFile& file, std::uint64_t offset,
                                  std::span<std::byte> into);

  bool memo_find(const Key& key, Payload* out);
  void memo_put(const Key& key, const Payload& payload);

  const Config& config_;
  Stats& stats_;
  FileSystem& pfs_;
  Directory& directory_;
  LocalTiers& tiers_;
  PeerArenas* peers_;
  Transport* transport_;
  ProgressThread* progress_;
  const Topology topology_;
  std::atomic<bool> closing_{false};  // acquire/release: see begin_close()

  // Directory answers this rank has seen. Entries are immutable for the job, so remembering
  // them saves a remote lookup (a remote atomic can cost milliseconds under Open MPI).
  // Whole remote chunks kept for readers that take them in small pieces.
  RemoteCopies remote_copies_;
  std::shared_mutex memo_mu_;
  std::unordered_map<Key, Payload, KeyHash> memo_;  // guarded by memo_mu_
  // Listings this rank has fetched (immutable for the job, like the directory entries).
  std::unordered_map<std::string, std::shared_ptr<const Listing>> listings_;  // guarded by memo_mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_CACHE_HPP_
