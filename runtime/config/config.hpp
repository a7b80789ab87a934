// Config: Larder's settings, read once from the environment, validated, then immutable.
//
// Every variable, its default and what it accepts is listed in docs/user-guide.md. A bad value
// is rejected with one message that names the variable and the values it accepts.
#ifndef LARDER_RUNTIME_CONFIG_CONFIG_HPP_
#define LARDER_RUNTIME_CONFIG_CONFIG_HPP_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/common/log.hpp"
#include "runtime/common/status.hpp"

namespace larder {

enum class TransportKind : std::uint8_t { kUcx, kMpi };
// How the directory's operations reach a shard on another rank (docs/protocol.md, "Directory
// operations as messages", "The directory over MPI"): `rma`, one-sided UCX operations or MPI
// windows (atomics in the network adapter on RDMA fabrics); `messages`, batched into one message
// per home per flush and applied by the home; `auto`, with UCX rma where Larder's UCX has a
// hardware one-sided transport, else messages; with the MPI transport messages.
enum class DirectoryOps : std::uint8_t { kAuto, kRma, kMessages };
// How a rank reads a chunk held on another node (docs/protocol.md, "Remote reads as messages"):
// `rma`, a UCX get from the holder's registered memory; `messages`, a request message answered
// by the holder with the bytes (zero-copy rendezvous for large ones); `auto`, rma where Larder's
// UCX has a hardware one-sided transport, else messages. The same three choices.
using RemoteReads = DirectoryOps;
// What a produced file leaves on the PFS (docs/user-guide.md, "Producing files"): `through`
// writes it there too when it is published (nothing is lost if the job dies), `local` keeps it
// on its node only (gone at the end of the job, as DYAD does).
enum class ProduceMode : std::uint8_t { kThrough, kLocal };

// What Larder does with a LARDER_PREFIX directory on a node-local file system (ext4, xfs,
// tmpfs...: runtime/pfs/node_local.hpp): `bypass` leaves it to the file system (its files differ
// from node to node, and the page cache serves them as fast as the cache would), `cache` serves
// it like a shared file system (one emulated PFS per machine, as the project's tests use).
enum class LocalFs : std::uint8_t { kBypass, kCache };

struct Config {
  bool enabled = true;                  // LARDER_ENABLE
  std::vector<std::string> prefixes;    // LARDER_PREFIX and LARDER_PRODUCE (clean)
  LocalFs local_fs = LocalFs::kBypass;  // LARDER_LOCAL_FS
  // LARDER_PREFIX directories left to their node-local file system (from_environment, with
  // LARDER_LOCAL_FS=bypass): not in `prefixes`, so their paths pass through; "dir (type)" each.
  std::vector<std::string> local_prefixes;
  std::vector<std::string> produce;                  // LARDER_PRODUCE: write once, read many
  ProduceMode produce_mode = ProduceMode::kThrough;  // LARDER_PRODUCE_MODE
  std::uint64_t mem_budget = 0;                      // LARDER_MEM, bytes per node
  std::uint64_t disk_budget = 0;                  // LARDER_DISK, bytes per node (0: no disk tier)
  std::uint64_t chunk_size = 4ull << 20;          // LARDER_CHUNK
  std::string local_dir = "/tmp";                 // LARDER_DIR: node-local directory (disk tier)
  std::string shm_dir = "/dev/shm";               // LARDER_SHM_DIR: where memory arenas live
  TransportKind transport = TransportKind::kUcx;  // LARDER_TRANSPORT
  DirectoryOps directory_ops = DirectoryOps::kAuto;    // LARDER_DIRECTORY_OPS (both transports)
  RemoteReads remote_reads = RemoteReads::kAuto;       // LARDER_REMOTE_READS (UCX transport)
  std::string stats_path;                              // LARDER_STATS (empty: no JSON)
  log::Level log_level = log::Level::kWarn;            // LARDER_LOG
  int node_size = 0;                                   // LARDER_NODE_SIZE (0: real nodes)
  std::uint32_t dir_slots = 1u << 16;                  // LARDER_DIR_SLOTS, per rank (one-sided)
  std::uint64_t dir_entries = std::uint64_t{1} << 25;  // LARDER_DIR_ENTRIES, per rank in all
  std::chrono::milliseconds wait_timeout{60'000};      // LARDER_TIMEOUT, seconds in the env
  // LARDER_REVALIDATE: an answer about a path older than this is checked against the PFS again
  // (one stat per node) before it is used; 0: never (the job's first answer holds for the job).
  std::chrono::seconds revalidate{60};
  std::uint32_t fanout = 8;  // LARDER_FANOUT: nodes a chunk copy serves
  // LARDER_GROUP: nodes per node group (docs/protocol.md, "Node groups"); 0: no groups;
  // kAutoGroup: about the square root of the node count from kAutoGroupNodes nodes up.
  static constexpr std::uint32_t kAutoGroup = ~0u;
  static constexpr std::uint32_t kAutoGroupNodes = 64;
  std::uint32_t group = kAutoGroup;
  // The nodes per group for a job of `nodes` nodes (0: no groups).
  std::uint32_t group_size(std::uint64_t nodes) const noexcept;
  // LARDER_NODE_SLOTS: the most entries the node table grows to (192 bytes each; it starts at
  // 65,536 and grows in levels as the node reads: docs/protocol.md, "The node level")
  std::uint32_t node_slots = 1u << 26;
  // LARDER_LOAD_PARALLEL: how many of a batch's PFS loads (list-ahead's stat answers and small
  // files) a rank makes at a time, each on a thread of its own for the batch (1: one after another)
  std::uint32_t load_parallel = 8;
  std::uint32_t list_ahead = 4096;  // LARDER_LIST_AHEAD: entries of a listed directory resolved
  // LARDER_LIST_AHEAD_DIRS: how many listed directories a rank resolves ahead at once, in the
  // background, while the listing call returns (0: in the listing call, one after another)
  std::uint32_t list_ahead_dirs = 4;
  std::uint64_t small_file = 256ull << 10;  // LARDER_SMALL_FILE: loaded whole with its stat
  // LARDER_PREFETCH_AHEAD: how many entries of a rank's schedule (larder_schedule) its prefetch
  // runs ahead of the reads' position at most (0: schedules are taken and nothing is prefetched)
  std::uint32_t prefetch_ahead = 8192;
  // LARDER_PREFETCH_STAGE: bytes of a rank's own memory its schedule reads ahead into when the
  // node's budget has no room left (0: a schedule stops at the budget; docs/architecture.md,
  // "Past the budget")
  std::uint64_t prefetch_stage = 128ull << 20;
  // LARDER_READAHEAD: chunks made ready ahead of a rank that reads a file of several chunks in
  // order (0: none; docs/architecture.md, "Read-ahead")
  std::uint32_t readahead = 4;
  // LARDER_KEEP: the name of the kept store this job's node-local data stays in after the job,
  // for the allocation's later steps (docs/architecture.md, "Kept stores"); empty: keep nothing.
  // `auto` (the default) names it after the allocation (alloc-<id> from SLURM_JOB_ID, PBS_JOBID,
  // FLUX_JOB_ID, LSB_JOBID or COBALT_JOBID, the first set) and keeps nothing outside one.
  std::string keep;
  std::chrono::seconds keep_ttl{24 * 3600};  // LARDER_KEEP_TTL: a store unused this long goes
  bool verify = true;  // LARDER_VERIFY: chunks carry content hashes, checked when entering a node
  std::vector<std::string> wrappers;          // LARDER_WRAPPERS: more exec wrapper names
  std::vector<std::string> forking_wrappers;  // LARDER_FORKING_WRAPPERS: more forking ones

  static constexpr std::uint64_t kMinChunk = 4096;
  static constexpr std::uint64_t kMaxChunk = 1ull << 30;

  // Reads a variable: returns null when it is unset. Tests pass a map; production getenv.
  using Lookup = std::function<const char*(const char* name)>;
  static Result<Config> parse(const Lookup& lookup);
  // parse() of the process's environment, then leave_node_local_prefixes().
  static Result<Config> from_environment();
  // With LARDER_LOCAL_FS=bypass: moves the LARDER_PREFIX directories that lie on a node-local
  // file system (runtime/pfs/node_local.hpp) from `prefixes` to `local_prefixes`.
  void leave_node_local_prefixes();

  // True when `path` (absolute, lexically clean) is below one of the prefixes. With no
  // prefixes configured, nothing is below a prefix.
  bool lexically_managed(const std::string& path) const;
  // No prefix was given at all (none managed, none left to a node-local file system): the C API
  // then serves any path it is given.
  bool any_path() const noexcept { return prefixes.empty() && local_prefixes.empty(); }
  // True when `path` (absolute, lexically clean) is below a LARDER_PRODUCE directory.
  bool produced(const std::string& path) const;
};

// The default memory budget: a quarter of the node's physical memory.
std::uint64_t default_mem_budget() noexcept;

}  // namespace larder

#endif  // LARDER_RUNTIME_CONFIG_CONFIG_HPP_
