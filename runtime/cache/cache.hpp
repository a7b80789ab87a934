// Cache: the read path of docs/architecture.md for one rank.
//
// Every answer (a path's stat, a directory listing, where a chunk's bytes are) is found at the
// first of three levels that has it: this rank's memo; the node table, which the node's ranks
// share (the first rank that needs a key resolves it for the node while the others sleep on it);
// the job-wide directory (one round trip to the key's home; claimed and loaded from the PFS when
// nobody has it, waited for by notification when another rank is loading it). A chunk found on
// another node is copied into the resolving rank's arena, from the nearest holder of the chunk's
// fan-out tree (fanout.hpp), so it crosses the network once per node and every rank of the node
// then copies it from shared memory. Any failure of the cache reads the PFS directly and still
// returns the right bytes; errors of the PFS itself are returned as they are.
// Thread-safe: many application threads may read at once.
#ifndef LARDER_RUNTIME_CACHE_CACHE_HPP_
#define LARDER_RUNTIME_CACHE_CACHE_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/cache/background.hpp"
#include "runtime/cache/listing.hpp"
#include "runtime/cache/prefetch_stage.hpp"
#include "runtime/cache/records.hpp"
#include "runtime/config/config.hpp"
#include "runtime/directory/directory.hpp"
#include "runtime/directory/timed_directory.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/node/prefetch_marks.hpp"
#include "runtime/pfs/file_system.hpp"
#include "runtime/stats/peer_load.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/tier/kept_store.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/tier/peer_arenas.hpp"
#include "runtime/tier/segments.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "runtime/transport/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

// A managed regular file as the read path needs it.
struct CachedFile {
  std::string path;           // as opened (absolute, lexically clean): used for PFS reads
  FileId id;                  // canonical identity: used for chunk keys
  std::uint64_t size = 0;     // from the cached stat
  std::uint64_t version = 0;  // file_version() of the cached stat: chunks of another are not used
  bool local_only = false;    // produced in `local` mode: the PFS has no copy to fall back to

  static CachedFile of(std::string path, const PathRecord& record) {
    return CachedFile{std::move(path), record.file, record.meta.size, record.version(),
                      record.local_only()};
  }
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
  NodeTable* node = nullptr;           // null: every rank resolves for itself (no node table)
  PeerLoad* load = nullptr;            // null: no per-peer accounting
  Topology topology;
  // Where node files live (node_file()); empty: no node files.
  std::string node_files_dir;
  // This rank's segments, in node_files_dir (null: node files are plain copies, no segments).
  Segments* segments = nullptr;
  // The loader's audit module is in use (LD_AUDIT): shared objects become node files, so
  // list-ahead leaves them out (cache_bulk.cpp).
  bool objects_as_node_files = false;
  // Wall-clock seconds, for the age of answers (LARDER_REVALIDATE); null: CLOCK_REALTIME. Tests
  // pass their own clock and move it.
  std::function<std::int64_t()> clock;
  // Whether the pages of `bytes` are in memory (null: pages_resident, mincore). Tests answer
  // "no" to have a disk-tier chunk read as if from the device.
  std::function<bool(std::span<const std::byte>)> resident;
  KeptStore* kept = nullptr;              // null: no kept store to adopt from
  const KeptPlace* kept_place = nullptr;  // null: this step keeps nothing
};

class Cache {
 public:
  explicit Cache(CacheParts parts);
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;
  ~Cache();

  // The stat() answer for `path` (absolute, lexically clean), from the PFS at most once per job.
  // A non-OK Result means the cache could not answer (the caller asks the PFS itself); an
  // answer that the path does not exist is an OK record with error == ENOENT.
  Result<PathRecord> lookup(const std::string& path);
  // The same for an open: when this rank resolves the path for its node, chunk 0 of the file is
  // looked up (claimed, loaded) in the same directory round trip, as it is homed with the path.
  Result<PathRecord> lookup_for_open(const std::string& path);
  // The lstat() answer for `path`: the stat() answer when no component of the path is a symlink
  // (its canonical name is the path itself), else a kLinkPath entry, once per job.
  Result<PathRecord> lookup_link(const std::string& path);
  // The listing of directory `path` (absolute, lexically clean), from the PFS at most once per
  // job. A non-OK Result means the cache could not answer; an errno of listing is an OK Listing
  // with error set.
  Result<std::shared_ptr<const Listing>> list(const std::string& path);

  // Where chunk `index` of `file` can be copied from by a process of this node (worker agents):
  // node_local says the bytes sit in an arena file on this node (the record says whose and
  // where); otherwise the caller reads the range with read(). Loads the chunk if nobody has.
  struct Place {
    bool node_local = false;
    bool copied = false;  // copied from another node for this request: a remote hit
    ChunkRecord record;
  };
  Result<Place> place(const CachedFile& file, std::uint64_t index);
  // Where chunk `index` of `file` sits on this node, when the node knows it already (this rank's
  // memo, or the node table READY) and it is held here: no claim, no wait, no directory or PFS
  // call. The agent sends it with a worker's stat answer (a small file opened after its stat is
  // one round trip for the worker, not two).
  std::optional<ChunkRecord> known_place(const CachedFile& file, std::uint64_t index);
  // Transport::set_serve_check's check: whether this rank may serve a piece of its chunk
  // `chunk` (in its arena `tier` or segment `segment`) to another node. A disk-tier chunk whose
  // pages the kernel must read from the device is hashed first (disk_checked); anything else
  // passes.
  bool serve_check(Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk);

  // Reads up to into.size() bytes at `offset`; fewer only at end of file. Errors are the PFS's
  // errno (in native_code()). Counts what the cache did (hits, misses, PFS and transport), not
  // the application's read: the caller counts that (Session::read for this rank's own reads, a
  // worker for its own), so a worker's read served by its rank is counted once.
  Result<std::size_t> read(const CachedFile& file, std::span<std::byte> into, std::uint64_t offset);

  // The name of a node file: a whole copy of `file` on this node (in the job's memory-tier
  // directory, counted against LARDER_MEM), made once per node by the first process that asks
  // (filled through read(): the PFS once per job, the network once per node) while the others
  // wait, and published only whole. mmap maps it, so the kernel's page cache holds the file once
  // for every process of the node. kUnavailable (and the like) when it cannot be made: the
  // caller does without (docs/architecture.md, "Node files").
  Result<std::string> node_file(const CachedFile& file);

  // Produced files (cache_produce.cpp; docs/user-guide.md, "Producing files"). A path under
  // LARDER_PRODUCE: lookup() of it waits until its producer publishes it (or LARDER_TIMEOUT).
  // Claims `path` (absolute, lexically clean, under LARDER_PRODUCE) for this rank to produce;
  // its canonical name. Errors carry the errno the open gets: EROFS (published already),
  // EEXIST (another process produces it), or the parent's (ENOENT, ENOTDIR...); kUnavailable
  // when the cache cannot say (the caller writes to the PFS instead).
  Result<std::string> claim_produced(const std::string& path);
  // Publishes the file this rank produced at `path` (claimed), written in `staging` (a file of
  // this user in the node's files directory, which the cache takes): on the PFS first in
  // `through` mode, kept on the node as a segment, its chunks and then its stat answer (`mode`:
  // the permission bits) published. On failure the claim is given up (readers go to the PFS).
  Result<PathRecord> publish_produced(const std::string& path, const std::string& canonical,
                                      const std::string& staging, std::uint32_t mode);
  // Gives a claim up (the producer could not finish): readers go to the PFS.
  void abandon_produced(const std::string& path, const std::string& canonical);
  // Publishes the produced file `from` (published, by any rank) under the name `to` as well, and
  // in `through` mode renames it on the PFS: the second half of the atomic-save pattern (write a
  // temporary file, rename it into place). Errors as claim_produced's; kInvalidArgument when
  // `from` is not a produced file (the caller copies it instead).
  Result<PathRecord> alias_produced(const std::string& from, const std::string& to);
  // The directory where producers write their files until they publish them (empty: none).
  const std::string& files_dir() const noexcept { return node_files_dir_; }

  // Finalize has begun: from now on no call makes a directory or transport operation (a read
  // still in flight after the drain must not touch MPI); everything goes to the PFS.
  void begin_close() noexcept {
    closing_.store(true, std::memory_order_release);
    if (transport_ != nullptr) transport_->begin_close();
  }
  bool closing() const noexcept { return closing_.load(std::memory_order_acquire); }
  // Waits until the directories queued for list-ahead in the background are resolved (tests, and
  // a caller that wants the counters of a listing's batch).
  void settle_background();
  // Before finalize (every rank, before begin_close): list-ahead takes no more directories; the
  // ones queued are dropped (nothing of theirs is claimed yet) and the ones being resolved
  // finish, so that everything this rank claimed is published while the others still listen.
  void stop_background() noexcept;

  std::uint64_t chunk_size() const noexcept { return config_.chunk_size; }

  // Told the order (cache_prefetch.cpp; docs/architecture.md, "Told the order"). One read this
  // rank will make: `path` absolute and lexically clean (empty: an entry that names nothing,
  // kept so that positions still count it), `length` 0 to the end of the file.
  struct ScheduledRead {
    std::string path;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };
  // Hands the cache this rank's coming reads in order. `append` false: they replace what is left
  // of the earlier schedule (and the position restarts at 0); true: they follow it. Returns at
  // once: the reads' chunks are made ready on this node in the background, in schedule order,
  // in batches (kPrefetchBatches at once, each loading LARDER_LOAD_PARALLEL at a time), at most
  // LARDER_PREFETCH_AHEAD entries ahead of the position, while the node's budget has room.
  void schedule(std::vector<ScheduledRead> reads, bool append);
  // The reads have reached entry `position` of the schedule: the prefetch skips what lies
  // behind it and may run LARDER_PREFETCH_AHEAD entries past it.
  void schedule_position(std::uint64_t position);
  // Waits until no prefetch batch is queued or running (tests; the schedule may have more).
  void settle_prefetch();

  // At the step's end (every rank drained, before the transport closes): moves what this rank
  // placed in its arenas and segments into the kept store for step `job`, with its index.
  // Returns the bytes kept.
  Result<std::uint64_t> keep_step(const std::string& job);
  // At the step's start (before any read), in a job of more than one node: this rank's share of
  // the chunks its node kept as their origin, published under kept_key(), so a node without a
  // copy gets them from here instead of the PFS (and checks them on arrival). Returns how many
  // were published.
  std::uint64_t publish_kept();
  // At the step's start, on each node's leader (before any read): the stat answers of the files
  // produced in `local` mode that earlier steps kept on this node, published again under their
  // paths when every chunk of their version is in the kept table and the PFS has nothing at
  // their path; their kept files are marked used (never evicted in this step). Returns how many.
  std::uint64_t publish_kept_produced();
  // At the step's start (after the kept chunks are published), when answers are checked
  // (LARDER_REVALIDATE not 0) and list-ahead is on: this rank's share of the path answers its
  // node kept, checked against the PFS in the background, in batches of LARDER_LIST_AHEAD as
  // list-ahead resolves a directory's entries (each path once for the job: claimed in the
  // directory). The step's lookups then find fresh answers on the node instead of asking the
  // PFS one at a time. Returns how many paths were queued.
  std::uint64_t check_kept_paths_soon();

 private:
  // What resolving a key gave: a payload to use and remember (kCached), a payload for this call
  // only (kTransient: e.g. an EIO from stat), "read the PFS yourself" (kDirect), or an error of
  // the PFS (kError).
  struct Answer {
    enum class Kind { kCached, kTransient, kDirect, kError };
    Kind kind = Kind::kDirect;
    Payload payload{};
    bool fresh = false;   // loaded by this call: its first use is the miss, not a hit
    bool copied = false;  // copied from another node by this call: its first use is remote
    bool global = false;  // this call asked the job's directory (it resolved for its node)
    Status error;
  };
  // What loading a claimed entry gave: a payload to publish, or `publish` false (abandon the
  // entry; `answer` says what this call gets).
  struct Loaded {
    bool publish = false;
    Answer answer;
    // When set: what this node uses, where the directory gets `answer.payload` (a chunk another
    // node kept from an earlier step, copied here: cache_kept.cpp).
    std::optional<Payload> local;
  };
  // Where a READY answer was found, for localize(): the entry's key, this rank's ticket there,
  // and how many nodes take tickets on it (the size of its fan-out tree).
  struct Tree {
    Key key;
    std::uint64_t ticket = 0;
    std::uint64_t nodes = 0;
  };
  template <class Load, class Localize>
  Answer resolve(const Key& key, unsigned flags, Load&& load, Localize&& localize,
                 const Payload* failed_as = nullptr);
  // The claimer's answer in a job of one node (one_node()): loaded without the directory.
  template <class Load>
  Answer resolve_on_node(const Key& key, Load&& load);
  // What the claimer of `key` that loaded it (and published it, `loaded.publish`) answers, now
  // in its memo: the node's own copy when the load made one (`loaded.local`).
  Answer loaded_answer(const Key& key, Loaded loaded);
  // Ends this rank's claim of node-table `slot` with answer `a`: published when cached; else,
  // after this rank's own load in a job of one node (`failed_as` given), the node's ranks get
  // `failed_as` (read the PFS), as a FAILED directory entry gives it them on several nodes;
  // else the entry fails and each of them resolves the key itself.
  void end_node_claim(std::uint32_t slot, const Answer& a, const Payload* failed_as);
  // The job's answer for a key this rank resolves for its node: through its node group's entry
  // when the job has node groups (LARDER_GROUP), else straight from the key's home.
  template <class Load, class Localize>
  Answer resolve_in_group(const Key& key, unsigned flags, Load&& load, Localize&& localize,
                          const Payload* failed_as);
  template <class Load, class Localize>
  Answer resolve_at_home(const Key& key, unsigned flags, Load&& load, Localize&& localize,
                         const Payload* failed_as);
  template <class Load, class Localize>
  Answer resolve_global(const Key& key, unsigned flags, Load&& load, Localize&& localize,
                        const Payload* failed_as);
  // `tree_nodes`: how many nodes take tickets on `key` (its fan-out tree's size).
  template <class Load, class Localize>
  Answer finish_claim(const Key& key, Result<Claim> claim, Load&& load, Localize&& localize,
                      const Payload* failed_as, std::uint64_t tree_nodes);

  // metadata (cache_meta.cpp)
  Result<PathRecord> lookup_key(const std::string& path, const Key& key, bool link);
  // `record` (whose payload is `seen`), or, when it is older than LARDER_REVALIDATE, the PFS's
  // answer now: asked by one rank of the node (the node table's entry is renewed in place); a
  // file that changed is named once per job, and its cached chunks are not used again.
  PathRecord revalidated(const std::string& path, const Key& key, bool link,
                         const PathRecord& record, const Payload& seen);
  void report_change(const std::string& path, const PathRecord& before, const PathRecord& after);
  std::int64_t now_s() const;
  Loaded load_path(const std::string& path, bool link);
  std::shared_ptr<const Listing> fetch_listing(const std::string& path, const Payload& payload);
  // A listing older than LARDER_REVALIDATE, listed again by one rank of the node.
  std::shared_ptr<const Listing> relisted(const std::string& path, const Payload& seen);
  bool stale(std::int64_t checked_s) const {
    return config_.revalidate.count() != 0 && now_s() - checked_s >= config_.revalidate.count();
  }
  Loaded load_listing(const std::string& path);
  std::shared_ptr<const Listing> list_direct(const std::string& path);
  std::shared_ptr<const Listing> remember_listing(const std::string& path,
                                                  std::shared_ptr<const Listing> listing,
                                                  const Payload& payload);
  Result<Payload> localize_listing(const Payload& payload);

  // data (cache.cpp)
  enum class Source { kCache, kDirect };
  struct Located {
    Source source = Source::kDirect;
    ChunkRecord record;
    bool fresh = false;
    bool copied = false;
    FallbackCause cause = FallbackCause::kOther;  // why, when source is kDirect
  };
  // `into` (may be null): where this rank would keep the chunk if it loads or copies it (a place
  // in a segment being filled) instead of a new place in its arena. `ahead`: for no read yet
  // (read-ahead): a load from the PFS counts as a prefetch rather than a miss.
  Result<Located> locate(const CachedFile& file, std::uint64_t index,
                         const ChunkRecord* into = nullptr, bool ahead = false);
  // Loads a claimed chunk from the PFS (into `into` when given, else into this rank's arena).
  // `prefetch`: ahead of any read (an open), counted as a prefetch rather than a miss.
  Loaded load_chunk(const CachedFile& file, std::uint64_t index, std::uint64_t ticket,
                    bool prefetch = false, const ChunkRecord* into = nullptr);
  // Copies a piece of a cached chunk into `into`; false (and why, when `why` is given) when the
  // holder's bytes cannot be had or fail their check.
  bool copy_out(const ChunkRecord& record, std::uint64_t offset_in_chunk, std::span<std::byte> into,
                bool count_hit, FallbackCause* why = nullptr);
  Counter served_from(const Located& located) const noexcept;
  Result<std::size_t> read_direct(const CachedFile& file, std::uint64_t offset,
                                  std::span<std::byte> into);
  bool on_this_node(int rank) const noexcept {
    return rank == topology_.rank || (peers_ != nullptr && rank >= 0 && rank < topology_.size &&
                                      topology_.same_node(rank, topology_.rank));
  }

  // list-ahead and schedules (cache_bulk.cpp)
  struct BulkItem;
  // The entries of a schedule's batch: their stat answers, then their chunks, in bulk, as
  // list-ahead resolves a directory's. False when the node's budget had no room for them all
  // (those that fit are made ready, in order).
  // `*covered`: the bytes of the chunks the entries cover (known before or not).
  // `place`: where the batch's first entry sits in the schedule (the stage's tags).
  bool prefetch_batch(std::span<const ScheduledRead> reads, PrefetchStage::Place place,
                      std::uint64_t* covered);
  // Chunks of a batch past the budget, read from the PFS into the stage (as much as it has
  // room for); `places` is each item's place in the schedule.
  void stage_chunks(std::span<const BulkItem> items, std::span<const PrefetchStage::Place> places);
  // Chunks of a batch past the budget that another node holds (each item's answer names the
  // holder): copied into the stage (as much as it has room for), checked against their hashes.
  void stage_copies(std::span<const BulkItem> items, std::span<const PrefetchStage::Place> places);
  // Whether `payload`, a chunk's answer, names a copy held on another node, and this node has
  // none of its own in its table.
  bool held_elsewhere(const Key& key, const Payload& payload);
  // `payload` (a chunk's answer for `it`) as this node's record: ahead, and marked, when `it` is
  // a schedule's and the bytes sit on this node.
  Payload node_form(BulkItem& it, const Payload& payload);
  // The chunks of `chunks` (claimed on the node): loaded here, found, or copied to this node
  // (another node's chunks are left where they are when `copy_remote` is false).
  void resolve_chunks(std::vector<BulkItem>& chunks, bool copy_remote = true);
  // Whether list-ahead copies small files that other nodes hold to this node: only while the
  // small files the node has listed are estimated to fit in its budget (the listed entries that
  // may be files, times the small-file bytes per file this rank's list-ahead found). Copies of a
  // larger tree would fill the node with duplicates before its own loads, and the job would hold
  // fewer distinct chunks than its memory allows (list_ahead.not_copied).
  bool list_ahead_copies() const;
  // Adds a listing's entries that may be files to the node's count (list-ahead, once per node).
  void count_listed(const Listing& listing);
  // Free bytes of this rank's tiers (their budgets less what is placed).
  std::uint64_t room() const;
  // The node's PrefetchMarks, opened (made, when absent) the first time a chunk made ready ahead
  // is published or read on this rank; null without a node table or when it cannot be.
  PrefetchMarks* marks();

  // schedules (cache_prefetch.cpp)
  static constexpr std::uint32_t kPrefetchBatches = 4;     // batches in flight at once
  static constexpr std::uint64_t kPrefetchFirstBatch = 8;  // entries, doubling per batch...
  static constexpr std::uint64_t kPrefetchMaxBatch = 128;  // ...up to this
  // Bytes in flight at most (estimated from the last batch's bytes per entry), so that on a
  // bandwidth-bound PFS the earliest entries are not slowed by the whole epoch's.
  static constexpr std::uint64_t kPrefetchInFlight = 64ull << 20;
  // Staged chunks the reads have not taken are dropped this many entries after the reads'
  // position has passed their entry (a DataLoader's position runs ahead of its reads by
  // prefetch_factor x workers batches).
  static constexpr std::uint64_t kStageLag = 4096;
  // Hands out batches while fewer than kPrefetchBatches run and the window allows.
  void pump_prefetch();
  // The chunks of a batch while it makes them ready (in_flight_).
  void prefetch_claimed(std::span<const BulkItem> chunks, bool claimed);
  // Whether `key` is a chunk this rank's prefetch is making ready now.
  bool prefetching(const Key& key);
  // `key` is ready on the node: no longer in in_flight_ (if it was).
  void prefetch_published(const Key& key);
  void run_prefetch(std::uint64_t generation, std::uint64_t first,
                    std::vector<ScheduledRead> batch);
  // Serves a read that would go to the PFS from the stage, if it holds the chunk (or is
  // loading it); false: read the PFS.
  // `first`: asked before the cache (the chunk is taken only if staged; an absent one is not
  // marked as read elsewhere). `copied`: set when the bytes were copied ahead from another node.
  bool take_staged(const CachedFile& file, std::uint64_t index, std::uint64_t offset_in_chunk,
                   std::span<std::byte> into, bool first = false, bool* copied = nullptr);

  // read-ahead (cache_readahead.cpp)
  static constexpr std::size_t kReadAheadStreams = 16;  // files followed at once per rank
  static constexpr std::size_t kReadAheadQueue = 8;     // batches waiting for a thread
  // A read of `length` bytes at `offset` of `file` has been served (`missed`: one of its chunks
  // was read from the PFS, or copied from another node, by this read): follows the file's stream
  // of reads in order and, once a read continues one, has the next LARDER_READAHEAD chunks made
  // ready on the node.
  void read_ahead(const CachedFile& file, std::uint64_t offset, std::uint64_t length, bool missed);
  // Chunks `from` .. `to` (exclusive) of `file` located in order as reads would locate them
  // (cache.cpp: the same claims, fan-out trees and checks), loaded or copied to this node.
  void run_read_ahead(const CachedFile& file, std::uint64_t from, std::uint64_t to);
  void list_ahead(const std::string& dir, const Listing& listing);
  // list_ahead() on a background thread (LARDER_LIST_AHEAD_DIRS at once), or here when that is 0
  // or the queue is full.
  void list_ahead_soon(const std::string& dir, const std::shared_ptr<const Listing>& listing);
  // Directories that wait for list-ahead's threads, at most (then the listing call resolves its
  // directory itself: memory stays bounded, and a fast lister is slowed to the threads' rate).
  static constexpr std::size_t kListAheadQueue = 64;
  void list_ahead_batch(const std::string& dir, std::span<const std::string> names);
  // Claims `item`'s key in the node table for this rank (false: already known, or another rank
  // of the node is resolving it).
  // Calls load_one(0 .. n - 1), up to LARDER_LOAD_PARALLEL at a time (a thread of its own each,
  // for at least kLoadsPerThread loads; the caller's thread is one of them).
  static constexpr std::size_t kLoadsPerThread = 4;
  void load_all(std::size_t n, const std::function<void(std::size_t)>& load_one);
  // Claims `item`'s node-table entry (true: this rank resolves it for the node). False when the
  // memo or the node knows it (its answer is then in the memo), another rank of the node is
  // resolving it, or the node's resolver failed (`*node_failed` set, when given: each rank of
  // the node asks the directory itself).
  bool claim_on_node(BulkItem& item, bool* node_failed = nullptr);
  // Resolves items (claimed on the node) through the directory in one batch: loads the claimed
  // ones with load(item), publishes them in one round trip, waits for the loading ones, makes
  // the ready ones usable here with localize(items, indices); memo and node table updated.
  template <class Load, class LocalizeAll>
  void resolve_bulk(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                    LocalizeAll&& localize_all, const Payload* failed_as);
  // resolve_bulk's two ways to the job's answers (memo and node table left to resolve_bulk):
  // through the node group's entries, or straight from the keys' homes.
  template <class Load, class LocalizeAll>
  void resolve_bulk_in_group(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                             LocalizeAll&& localize_all, const Payload* failed_as);
  template <class Load, class LocalizeAll>
  void resolve_bulk_at_home(std::vector<BulkItem>& items, unsigned flags, Load&& load,
                            LocalizeAll&& localize_all, const Payload* failed_as);
  // Copies the chunks of items[i] (origin records in their payloads) held on other nodes into
  // this rank's arena, all at once; each payload becomes the local copy (or stays the origin's).
  void copy_chunks_here(std::vector<BulkItem>& items, const std::vector<std::size_t>& which,
                        bool copy_remote = true);
  // Stat answers of `items` (paths claimed on the node): list-ahead's first phase, and the kept
  // path answers a step checks ahead (check_kept_paths).
  void resolve_paths(std::vector<BulkItem>& items);

  // node files and segments (cache_files.cpp)
  Result<std::string> node_file_made(const CachedFile& file, const std::string& name,
                                     const Key& key);
  Status build_node_file(const CachedFile& file, const std::string& name);
  // The node file as a segment that holds the file's chunks (each chunk loaded or copied once
  // into it); false in *used when segments cannot be served (the caller copies instead).
  Status fill_segment_node_file(const CachedFile& file, const std::string& name, bool* used);
  // The node file as a plain copy of the file read through read() (its chunks stay in arenas).
  Status copy_node_file(const CachedFile& file, const std::string& name);
  // A new segment of `size` bytes, exposed to the transport and its record published; *servable
  // says whether other nodes can read it (always, without a transport).
  Result<Segments::Made> new_segment(std::uint64_t size, bool* servable);
  // Exposes a segment to the transport and publishes its record; false when other nodes cannot
  // read it (true without other nodes).
  bool publish_segment(const Segments::Made& made);
  // Makes rank `owner`'s segment `id` readable through the transport (its record, once).
  Status learn_segment(int owner, std::uint32_t id);
  // The bytes of a chunk held on this node (own arena or segment, a node peer's), or empty.
  std::span<const std::byte> node_bytes(const ChunkRecord& record);
  // The bytes of `record`, a place in this rank's own arena or segment; empty when there is none.
  const Arena* own_holder(const ChunkRecord& record) const;
  std::span<std::byte> own_bytes(const ChunkRecord& record) const;

  // produced files (cache_produce.cpp)
  Result<std::string> produced_canonical(const std::string& path);
  static std::vector<Key> produced_keys(const std::string& path, const std::string& canonical);
  Result<PathRecord> lookup_produced(const std::string& path);
  Answer resolve_produced(const Key& key, const std::string& path);
  void publish_produced_chunks(const FileId& file, std::uint64_t size, std::uint64_t version,
                               const Segments::Made& seg);
  // `payload` as the node table's answer for `key`, unless the table has one (or no room).
  void publish_on_node(const Key& key, const Payload& payload);
  void produced_node_file(const CachedFile& file, const Segments::Made& seg);
  // The name of `file`'s node file in this node's files directory (empty: none).
  std::string node_file_name(const CachedFile& file) const;

  // node copies and fan-out (cache_copy.cpp)
  // `file` and `index` (when known): the chunk, so that a node whose every source failed its
  // check takes the PFS's bytes into its own copy, once for its ranks (reload_chunk).
  Result<Payload> localize_chunk(const Key& chunk, const Payload& origin, const Tree& tree,
                                 const ChunkRecord* into = nullptr,
                                 const CachedFile* file = nullptr, std::uint64_t index = 0);
  // After every copy on other nodes failed its check: chunk `index` of `file` read from the PFS
  // into `copy` (this rank's place for it), and checked against the hash its origin made. True
  // when this node now holds the right bytes; false when the PFS could not give them, or gave
  // other bytes (the file changed since its origin read it).
  bool reload_chunk(const CachedFile& file, std::uint64_t index, const ChunkRecord& copy);
  // The answer "read the PFS", remembered by the node and its ranks, and why (FallbackCause in
  // the record's `segment`, so that every reader counts its read under the cause).
  static Payload direct_payload(FallbackCause cause) noexcept;
  // Whether `payload` is direct_payload(kNoRoom): the job reads the chunk from the PFS because
  // no rank had room for it.
  static bool no_room_payload(const Payload& payload) noexcept;
  // Node groups (LARDER_GROUP; docs/protocol.md, "Node groups"): the group entry of `key`, homed
  // on a rank of this node's group; false when the job has no groups.
  bool grouped() const noexcept { return group_size_ > 0; }
  bool one_node() const noexcept { return nodes_ == 1 && !grouped(); }
  Key group_entry(const Key& key) const noexcept;
  // The payload a group's representative publishes for its group: its node's answer, and for
  // a chunk (`chunk`: looked up with a ticket) its place at the root of the group's tree.
  static Payload group_form(const Payload& local, bool chunk, std::uint64_t group_ticket);
  Result<ChunkRecord> copy_from(const ChunkRecord& source, const ChunkRecord& into);
  // The node table's acquire and the transport's get, timed (node.ns, transport.ns).
  NodeTable::Found node_acquire(const Key& key, std::chrono::milliseconds timeout);
  // Directory operations (directory.ops). Made inside a Retry scope they are also retries
  // (directory.retries): a node asking again because the answer it waited for did not come.
  void count_directory_ops(std::uint64_t n = 1);
  class Retry {  // this thread's directory operations, while it lives, are retries
   public:
    Retry() noexcept;
    Retry(const Retry&) = delete;
    Retry& operator=(const Retry&) = delete;
    ~Retry();
  };
  Status timed_get(const Transport::GetOp& op);
  // transport_->get_many, its time in transport.ns and its gets in transport.gets.
  void timed_get_many(std::span<const Transport::GetOp> ops, std::span<Status> out);
  // The nearest holder above `position` whose entry is READY and not marked bad (`parent`, and
  // `parent_bad`: its entry and mark, looked up with this node's claim), else the origin.
  Result<ChunkRecord> holder_source(const Tree& tree, const ChunkRecord& origin,
                                    std::uint64_t position, const Result<Claim>& parent,
                                    bool parent_bad);
  // Marks the holder at `position` of `chunk` bad in the directory (its copy failed its hash).
  void mark_bad_holder(const Key& chunk, std::uint64_t position);

  // Content hashes (cache_verify.cpp). hash_of: the hash of bytes entering the cache (0 with
  // LARDER_VERIFY=off); verified: whether bytes that entered this node match `expected` (counted;
  // a mismatch is warned about, naming the file and chunk of the ChunkContext, and `holder`).
  // `arrived`: the hash the transport computed as they arrived, if it did (else hashed here).
  std::uint64_t hash_of(std::span<const std::byte> bytes);
  bool verified(std::span<const std::byte> bytes, std::uint64_t expected, int holder,
                const char* hop, const Transport::Hashed* arrived = nullptr);
  // Whether `bytes`, a chunk of this node's disk tier (`record`), may be served: yes when its
  // pages are in memory and no check of the disk tier is under way on the node (and none has
  // failed in this job); otherwise when they match the chunk's hash, loaded from the device now.
  // Disk-tier files linked as segments (kept files) count as the disk tier. Anything else
  // (memory tier, LARDER_VERIFY=off, no hash) is not checked here.
  bool disk_checked(const ChunkRecord& record, std::span<const std::byte> bytes);
  // The node's words for disk_checked (in the node table, or this process's without one).
  std::atomic<std::uint32_t>& disk_word(int i) noexcept;
  class ChunkContext {  // the chunk this thread is locating, for the warnings
   public:
    ChunkContext(const CachedFile& file, std::uint64_t index) noexcept;
    // No chunk (the thread works for another rank meanwhile: serve_check).
    explicit ChunkContext(std::nullptr_t) noexcept;
    ChunkContext(const ChunkContext&) = delete;
    ChunkContext& operator=(const ChunkContext&) = delete;
    ~ChunkContext();

   private:
    const CachedFile* file_;
    std::uint64_t index_;
  };

  // Kept stores (cache_kept.cpp).
  bool adopt_kept(const Key& key, std::uint64_t version, std::uint64_t length,
                  const ChunkRecord* into, ChunkRecord* out);
  Result<std::pair<int, std::uint32_t>> kept_file(std::uint32_t n, bool adopt, bool* evicted_here);
  bool make_room(Tier tier, std::uint64_t length);
  // Kept file `file` leaves its tier for room: a memory file to the disk tier where this rank's
  // disk budget has room (KeptStore::demote; kept.bytes_demoted), else dropped
  // (kept.bytes_evicted). Its room in its tier is this rank's.
  void leave_tier(const KeptStore::File& file);
  bool kept_use(std::uint32_t n, bool use, bool* decided_here = nullptr);
  // Whether a record naming a kept file of this node may be read here (marks the file used).
  bool kept_record_usable(const ChunkRecord& record);
  // Notes a chunk this rank placed, to be kept for later steps; `flags`: KeptRecord's kOrigin,
  // kStandIn.
  void record_placed(const Key& key, const ChunkRecord& record, std::uint32_t flags = 0);
  // Claims every key of `lookups` in one batch and publishes `payloads[i]` under each key it
  // claimed (keys another process holds are left as they are); returns how many were published.
  std::uint64_t claim_and_publish(std::span<const Lookup> lookups,
                                  std::span<const Payload> payloads);
  bool kept_elsewhere(const Key& key, std::uint64_t version, std::uint64_t length,
                      ChunkRecord* out);
  // A node file an earlier step kept whole becomes this step's node file `name` in place.
  bool kept_node_file(const CachedFile& file, const std::string& name);
  // Stat answers and listings (cache_kept.cpp): note_path and note_listing mark `key` as an
  // answer this rank resolved for its node (with its path), kept at the step's end with its
  // bytes; kept_answer gives a kept answer's bytes (payload, then a listing's records or a path
  // answer's path: kKeptPath or kKeptLinkPath, then the path), checked.
  static constexpr char kKeptPath = 'p';
  static constexpr char kKeptLinkPath = 'l';
  void note_path(const Key& key, const std::string& path, bool link);
  void note_listing(const Key& key, const std::string& path);
  void check_kept_paths(const std::vector<std::pair<std::string, bool>>& paths);
  bool kept_answer(const Key& key, std::vector<std::byte>* bytes);
  void collect_answers(std::vector<std::byte>* bytes, std::vector<KeptRecord>* records);
  // A kept path answer this step may use as it is (LARDER_REVALIDATE=0), or a kept listing it
  // may use after one stat of the directory; false: ask the PFS.
  bool kept_path_answer(const std::string& path, bool link, Loaded* out);
  bool kept_listing(const std::string& path, Loaded* out);
  // Copies a listing's records into this rank's arena and says where in `rec`; false: no room.
  bool place_listing(std::span<const std::byte> records, ListingRecord* rec);

  bool memo_find(const Key& key, Payload* out);
  // The node's READY answer for `key` as this rank knows it (its memo, else the node table),
  // without claiming or waiting.
  bool known_answer(const Key& key, Payload* out);
  void memo_put(const Key& key, const Payload& payload);

  const Config& config_;
  Stats& stats_;
  FileSystem& pfs_;
  TimedDirectory timed_directory_;  // the directory, timed (directory.ns, wait_ns)
  Directory& directory_;
  LocalTiers& tiers_;
  PeerArenas* peers_;
  Transport* transport_;
  ProgressThread* progress_;
  NodeTable* node_;
  PeerLoad* load_;
  const Topology topology_;
  const std::uint64_t nodes_;  // topology_.node_count(), for the fan-out tree's shape
  // Node groups: nodes per group (0: none), this rank's group, the ranks of its group (homes of
  // its group entries), the nodes in it, and the number of groups (the job-wide trees' size).
  std::uint64_t group_size_ = 0;
  std::uint64_t group_ = 0;
  std::vector<int> group_ranks_;
  std::uint64_t group_nodes_ = 0;
  std::uint64_t groups_ = 0;
  // The fan-out of every tree: LARDER_FANOUT, or half of it with node groups, where a group's
  // representative is a place in two trees (its group's root, and one of the representatives'),
  // so that no rank serves more than LARDER_FANOUT copies.
  std::uint32_t tree_fanout_ = 1;
  const std::function<std::int64_t()> clock_;
  const std::function<bool(std::span<const std::byte>)> resident_;
  // disk_checked's words when there is no node table: checks under way, and whether one failed.
  std::atomic<std::uint32_t> disk_words_[2] = {};
  const std::string node_files_dir_;
  Segments* segments_;
  const bool objects_as_node_files_;
  std::atomic<bool> closing_{false};  // acquire/release: see begin_close()
  KeptStore* kept_;
  const KeptPlace* kept_place_;
  std::atomic<std::uint32_t> kept_evict_next_[2] = {};  // per tier: the next kept file to consider
  std::atomic<std::uint32_t> kept_evict_own_next_[2] = {};  // the same, among this rank's share
  std::mutex kept_mu_;
  std::unordered_map<std::uint32_t, Payload> kept_local_;  // guarded by kept_mu_ (no node table)
  std::unordered_set<std::uint32_t> kept_touched_;  // guarded by kept_mu_: kept files used here
  std::unordered_map<std::uint32_t, std::uint32_t> kept_uses_;  // guarded by kept_mu_ (no table)
  std::vector<KeptRecord> placed_;      // guarded by kept_mu_: what this rank placed, to keep
  std::vector<KeptProduced> produced_;  // guarded by kept_mu_: produced in local mode, to keep
  // Guarded by kept_mu_: see note_path(). Maps, so a renewed answer is noted once: a path
  // answer's path after its kind (kKeptPath, kKeptLinkPath), a listing's directory.
  std::unordered_map<Key, std::string, KeyHash> noted_answers_;
  std::unordered_map<Key, std::string, KeyHash> noted_listings_;

  // Answers this rank has seen, node-local form. Entries are immutable for the job, so
  // remembering them saves a lookup (a remote atomic can cost milliseconds under Open MPI).
  std::shared_mutex memo_mu_;
  std::unordered_map<Key, Payload, KeyHash> memo_;  // guarded by memo_mu_
  // Listings this rank has fetched, with the node-local payload they came from.
  struct KnownListing {
    std::shared_ptr<const Listing> listing;
    Payload payload{};
  };
  std::unordered_map<std::string, KnownListing> listings_;  // guarded by memo_mu_
  // List-ahead's threads (null when LARDER_LIST_AHEAD_DIRS is 0). Stopped first in ~Cache, before
  // anything its tasks use.
  std::unique_ptr<Background> background_;
  // The schedule (guarded by plan_mu_): its entries not yet handed out (and some before), the
  // next one to hand to a batch and the reads' position (indices since the last replacement),
  // batches handed out in this generation and running.
  std::mutex plan_mu_;
  std::vector<ScheduledRead> plan_;  // entries plan_base_ .. (those before are handed out)
  std::uint64_t plan_base_ = 0;
  std::uint64_t plan_generation_ = 0;
  std::uint64_t plan_next_ = 0;
  std::uint64_t plan_position_ = 0;
  std::uint32_t plan_batches_ = 0;
  std::uint32_t plan_running_ = 0;
  bool plan_full_ = false;  // the budget had no room and no stage: nothing more in this generation
  bool plan_staging_ = false;           // the budget had no room: the stage bounds the batches
  std::uint64_t plan_entry_bytes_ = 0;  // bytes per entry of the last batch (0: none yet)
  // This rank has been told an order: list-ahead resolves stat answers, not small files' data.
  std::atomic<bool> scheduled_{false};
  // list_ahead_copies's estimate: the listed entries that may be files (the node word
  // NodeTable::kListedFiles, or this count without a node table), and of the entries this rank's
  // list-ahead found files, how many and their small files' bytes.
  std::atomic<std::uint64_t> listed_files_{0};
  std::atomic<std::uint64_t> resolved_files_{0};
  std::atomic<std::uint64_t> resolved_small_bytes_{0};
  std::once_flag marks_once_;
  std::unique_ptr<PrefetchMarks> marks_;  // set once, under marks_once_
  // The schedule's batches (null when LARDER_PREFETCH_AHEAD is 0). Stopped with background_.
  std::unique_ptr<Background> prefetch_;
  // Chunks of the schedule past the budget, read ahead into this rank's memory (null when
  // LARDER_PREFETCH_STAGE or LARDER_PREFETCH_AHEAD is 0). Emptied by stop_background.
  std::unique_ptr<PrefetchStage> stage_;
  // The chunks this rank's batches have claimed and not yet made ready (guarded by
  // in_flight_mu_; in_flight_n_ is their number, read without the lock): a read of one of them
  // waits for its prefetch, and counts as prefetch.waited.
  std::mutex in_flight_mu_;
  std::unordered_set<Key, KeyHash> in_flight_;
  std::atomic<std::size_t> in_flight_n_{0};
  // Read-ahead (null when LARDER_READAHEAD or LARDER_PREFETCH_AHEAD is 0): the files this rank
  // reads in order (guarded by readahead_mu_; readahead_n_ is their number, read without the
  // lock: a read of a chunk already known costs nothing more while no file is followed), and
  // the threads that make their next chunks ready. Stopped with background_.
  struct ReadStream {
    FileId file;
    std::uint64_t next = 0;   // the byte after the last one read
    std::uint64_t ahead = 0;  // the chunk after the last one asked for ahead
  };
  std::mutex readahead_mu_;
  std::vector<ReadStream> streams_;
  std::atomic<std::size_t> readahead_n_{0};
  std::unique_ptr<Background> readahead_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_CACHE_HPP_
