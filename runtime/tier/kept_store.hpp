// KeptStore: what the job steps of an allocation leave on a node for its later steps
// (LARDER_KEEP; docs/architecture.md, "Kept stores").
//
//   <shm_dir>/larder-<uid>/keep-<name>.lock      flock: exclusive while a step prepares or closes
//   <shm_dir>/larder-<uid>/keep-<name>.inuse     flock: shared by every running step of the store
//   <shm_dir>/larder-<uid>/keep-<name>/<node>/   0700, this user's; <node>: "host" (real nodes) or
//                                                "node-<i>" (emulated, LARDER_NODE_SIZE)
//       <step>/arena-<rank>.mem, seg-<rank>-<id> a finished step's files (its job id names it)
//       <step>/index-<rank>                      what each file holds (KeptRecord), hashed
//       <step>/answers-<rank>                    stat answers and listings the rank resolved for
//                                                its node (KeptRecord::kAnswer records)
//       <step>/complete                          written last by the node leader: the step is whole
//       table-<job>                              the lookup table of a running step (read-only)
//   <local_dir>/larder-<uid>/keep-<name>/<node>/<step>/arena-<rank>.disk   disk-tier files
//
// A step's files are moved (renamed, never copied) into the store when the step ends; the next
// step's node leader builds one lookup table of every finished step (newest first; memory files
// over LARDER_MEM go to the disk tier when it has room, else they are dropped), and a chunk
// is adopted from it only for the file version its reader's own stat answer names, and only
// after its bytes match the content hash the index carries (Cache::adopt_kept). Nothing is read
// from a file, directory or link that is not this user's own regular file or private directory.
#ifndef LARDER_RUNTIME_TIER_KEPT_STORE_HPP_
#define LARDER_RUNTIME_TIER_KEPT_STORE_HPP_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/common/status.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {

// One kept chunk: its key, the file version and content hash it was read with, and where it
// sits (`file`: an index into the step's files in an index, into the table's files in a table).
struct KeptRecord {
  std::uint64_t word = 0;  // 0: an empty table slot
  std::uint64_t check = 0;
  std::uint64_t home = 0;
  std::uint64_t version = 0;
  std::uint64_t hash = 0;  // content_hash() of the bytes; 0: kept without one (LARDER_VERIFY=off)
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t file = 0;
  std::uint32_t flags = 0;    // kOrigin, kAnswer, kStandIn
  std::uint32_t segment = 0;  // while a rank collects its records: the segment they sit in
  static constexpr std::uint32_t kOrigin = 1;  // the step's origin of the chunk (it claimed it)
  // Not a chunk: a stat answer or a listing (the key is its path's), its bytes in the step's
  // answers file (`version` 0). Cache::kept_answer reads and checks them.
  static constexpr std::uint32_t kAnswer = 2;
  // A copy that may stand in for the origin in a later step the origin's node is not part of:
  // the node copied the chunk straight from its origin (a child of the origin in the chunk's
  // fan-out tree, or the claimer that copied it from another node's kept copy), or it is one of
  // the about LARDER_FANOUT nodes a list-ahead copy picks by the key. At most 1 + F nodes per
  // chunk and step, so a later step's start publishes each chunk a bounded number of times.
  static constexpr std::uint32_t kStandIn = 4;
  static constexpr std::uint32_t kPublished = kOrigin | kStandIn;  // published at a step's start
};
static_assert(sizeof(KeptRecord) == 64);

// A file produced in `local` mode (the PFS has no copy) that a step kept: its path as written,
// its canonical path, and its stat answer as the cache packs it (opaque here). Its chunks are
// kept records like any other; a later step publishes the answer again
// (Cache::publish_kept_produced).
struct KeptProduced {
  std::string path;
  std::string canonical;
  std::vector<std::byte> answer;
};

// Where a store lives on this node.
struct KeptPlace {
  std::string shm_base;   // <shm_dir>/larder-<uid>
  std::string disk_base;  // <local_dir>/larder-<uid> (empty: no disk tier)
  std::string name;       // the store's name (Config::keep)
  std::string node;       // "host" or "node-<i>"
  std::string shm_root() const { return shm_base + "/keep-" + name + "/" + node; }
  std::string disk_root() const {
    return disk_base.empty() ? std::string() : disk_base + "/keep-" + name + "/" + node;
  }
};

// What the node leader found and did before the step started.
struct KeptPrepared {
  std::uint64_t mem_bytes = 0;   // kept on the node's memory tier, counted against LARDER_MEM
  std::uint64_t disk_bytes = 0;  // kept on its disk tier, counted against LARDER_DISK
  std::uint64_t chunks = 0;
  std::uint64_t evicted_bytes = 0;     // trimmed to the budgets, or superseded by newer steps
  std::uint64_t demoted_bytes = 0;     // moved from memory to the disk tier to fit LARDER_MEM
  std::uint64_t unfinished_bytes = 0;  // of steps whose writer did not finish
  int stores_removed = 0;              // other allocations' stores, stores past LARDER_KEEP_TTL
};

class KeptStore {
 public:
  struct File {
    std::string path;  // absolute
    bool disk = false;
    bool answers = false;     // a step's answers file: read with read_answer(), never evicted
    std::uint64_t bytes = 0;  // allocated bytes (what it costs its tier)
  };

  // The node leader, before the node's ranks size their arenas: removes this user's stores of
  // other allocations (`auto` stores) and stores unused for `ttl`, drops steps whose writer did
  // not finish, drops files every record of which a newer step holds, trims the store to the
  // budgets (least recently used files first) and writes the lookup table for job `job`.
  static Result<KeptPrepared> prepare(const KeptPlace& place, const std::string& job,
                                      std::uint64_t mem_budget, std::uint64_t disk_budget,
                                      std::chrono::seconds ttl);
  // A node leader of a job that keeps nothing: removes this user's stores on the node unused for
  // `ttl` that no running step uses. Returns how many went.
  static int sweep(const std::string& shm_base, const std::string& disk_base,
                   std::chrono::seconds ttl) noexcept;
  // Every rank of the node, after its leader prepared: the table, mapped read-only. Also takes
  // the store's in-use lock (shared), so no other allocation's first step removes it meanwhile.
  static Result<std::unique_ptr<KeptStore>> open(const KeptPlace& place, const std::string& job);

  KeptStore(const KeptStore&) = delete;
  KeptStore& operator=(const KeptStore&) = delete;
  ~KeptStore();

  // The kept record of `key`, or null.
  const KeptRecord* find(const Key& key) const noexcept;
  // Every record of the table.
  std::span<const KeptRecord> records() const noexcept { return {records_, count_}; }
  const File& file(std::uint32_t n) const { return files_.at(n); }
  std::size_t file_count() const noexcept { return files_.size(); }
  std::uint64_t mem_bytes() const noexcept { return mem_bytes_; }
  std::uint64_t disk_bytes() const noexcept { return disk_bytes_; }
  std::uint64_t chunks() const noexcept { return count_; }
  // The bytes of kAnswer record `r` (its length), read from its answers file; false when they
  // cannot be read whole. Not checked here: the caller checks them against `r.hash`.
  bool read_answer(const KeptRecord& r, std::vector<std::byte>* out) const;
  // Marks a kept file used now (its modification time: the least recently used go first).
  static void touch(const std::string& path) noexcept;
  // Removes a kept file (eviction during a step): its bytes leave the node once nobody maps it.
  static void evict(const File& file) noexcept;
  // Moves kept memory file `file` (one of this table's) to the disk tier during a step: copied
  // (holes stay holes) into the disk store beside its step, the disk flag set in its step's
  // index, then the memory copy evicted. Later steps find it on disk; this step does not use
  // it any more. The node's ranks moving files of one step take turns (a lock on the step's
  // directory). Fails, with the memory copy left as it was, when the store has no disk tier,
  // when another step holds the store's lock (preparing or closing: not waited for), and on any
  // I/O error. Returns the bytes the disk copy allocates.
  Result<std::uint64_t> demote(const File& file) const;

  // One rank's part of keeping a step, at its end: moves `files` (this rank's arenas and
  // segments, absolute paths; `disk[i]`: a disk-tier file) into the store's directory for step
  // `job` and writes its index of `records` (their `file` indexes `files`). An arena's unused
  // range is a hole (arenas are sparse): it costs nothing kept. Returns the bytes kept.
  // `produced`: the files this rank produced in `local` mode (written as produced-<rank>).
  // `answers`: the bytes of this rank's stat answers and listings, written as answers-<rank>;
  // `answer_records` say where each sits in them (`offset`; their `file` is ignored).
  static Result<std::uint64_t> keep_rank(const KeptPlace& place, const std::string& job, int rank,
                                         std::span<const std::string> files,
                                         std::span<const bool> disk,
                                         std::span<const KeptRecord> records,
                                         std::span<const KeptProduced> produced = {},
                                         std::span<const std::byte> answers = {},
                                         std::span<const KeptRecord> answer_records = {});
  // The produced files the node's finished steps kept, newest step first, one per canonical
  // path (the newest). Lists that are not whole, or not this user's own files, are not read.
  static std::vector<KeptProduced> produced(const KeptPlace& place);
  // The node leader, after every rank of the node kept its part: the step is whole.
  static Status complete_step(const KeptPlace& place, const std::string& job);
  // Removes the table of job `job` (the node leader, at the step's end).
  static void remove_table(const KeptPlace& place, const std::string& job) noexcept;

 private:
  KeptStore() = default;

  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const std::uint32_t* slots_ = nullptr;  // capacity_ slots: 0, or 1 + a record's index
  const KeptRecord* records_ = nullptr;   // count_ records
  std::uint64_t capacity_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t mem_bytes_ = 0;
  std::uint64_t disk_bytes_ = 0;
  std::vector<File> files_;
  KeptPlace place_;
  UniqueFd in_use_;
  mutable std::mutex answers_mu_;
  mutable std::vector<UniqueFd> answer_fds_;  // guarded by answers_mu_: by file, opened once
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_KEPT_STORE_HPP_
