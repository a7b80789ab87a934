// Stats: the runtime's counters, a plain snapshot of them, and the job's stats JSON.
//
// Counters are relaxed atomics (statistics only, no ordering). A Snapshot is a plain copy that
// can be summed over ranks (MPI_Reduce of the uint64 array) and written as JSON. The JSON keys
// are a stable interface: later versions add keys, never rename them (docs/stats.md).
#ifndef LARDER_RUNTIME_STATS_STATS_HPP_
#define LARDER_RUNTIME_STATS_STATS_HPP_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/stats/file_top.hpp"
#include "runtime/stats/timeline.hpp"

namespace larder {

// The counters, in the order they are stored and reduced. X(name, json path)
#define LARDER_STATS_COUNTERS(X)                                    \
  X(pfs_bytes_read, "pfs.bytes_read")                               \
  X(pfs_read_ops, "pfs.read_ops")                                   \
  X(pfs_stat_ops, "pfs.stat_ops")                                   \
  X(pfs_open_ops, "pfs.open_ops")                                   \
  X(pfs_list_ops, "pfs.list_ops")                                   \
  X(hits_self, "hits.self")                                         \
  X(hits_node, "hits.node")                                         \
  X(hits_remote, "hits.remote")                                     \
  X(hits_mem, "hits.tier.mem")                                      \
  X(hits_disk, "hits.tier.disk")                                    \
  X(misses, "misses")                                               \
  X(prefetches, "prefetches")                                       \
  X(list_ahead_background, "list_ahead.background")                 \
  X(list_ahead_inline, "list_ahead.inline")                         \
  X(list_ahead_not_copied, "list_ahead.not_copied")                 \
  X(prefetch_entries, "prefetch.entries")                           \
  X(prefetch_chunks, "prefetch.chunks")                             \
  X(prefetch_bytes, "prefetch.bytes")                               \
  X(prefetch_loaded_bytes, "prefetch.loaded_bytes")                 \
  X(prefetch_skipped, "prefetch.skipped")                           \
  X(prefetch_passed, "prefetch.passed")                             \
  X(prefetch_no_room, "prefetch.no_room")                           \
  X(prefetch_ready, "prefetch.ready")                               \
  X(prefetch_waited, "prefetch.waited")                             \
  X(prefetch_wait_ns, "prefetch.wait_ns")                           \
  X(prefetch_unused_chunks, "prefetch.unused_chunks")               \
  X(prefetch_unused_bytes, "prefetch.unused_bytes")                 \
  X(prefetch_staged_chunks, "prefetch.staged_chunks")               \
  X(prefetch_staged_bytes, "prefetch.staged_bytes")                 \
  X(prefetch_staged_reads, "prefetch.staged_reads")                 \
  X(prefetch_stage_full, "prefetch.stage_full")                     \
  X(prefetch_copied_chunks, "prefetch.copied_chunks")               \
  X(prefetch_copied_bytes, "prefetch.copied_bytes")                 \
  X(prefetch_evicted_chunks, "prefetch.evicted_chunks")             \
  X(prefetch_evicted_bytes, "prefetch.evicted_bytes")               \
  X(readahead_chunks, "readahead.chunks")                           \
  X(readahead_bytes, "readahead.bytes")                             \
  X(fallbacks, "fallbacks")                                         \
  X(waits, "waits")                                                 \
  X(meta_hits, "meta.hits")                                         \
  X(meta_misses, "meta.misses")                                     \
  X(transport_bytes, "transport.bytes")                             \
  X(transport_gets, "transport.gets")                               \
  X(transport_errors, "transport.errors")                           \
  X(transport_messages, "transport.messages")                       \
  X(directory_ops, "directory.ops")                                 \
  X(directory_retries, "directory.retries")                         \
  X(directory_overflow_entries, "directory.overflow_entries")       \
  X(directory_overflow_requests, "directory.overflow_requests")     \
  X(directory_refused, "directory.refused")                         \
  X(cached_bytes, "cache.bytes")                                    \
  X(cached_chunks, "cache.chunks")                                  \
  X(app_read_calls, "app.read_calls")                               \
  X(app_bytes_read, "app.bytes_read")                               \
  X(wait_ns, "wait_ns")                                             \
  X(node_answers, "node.answers")                                   \
  X(group_answers, "group.answers")                                 \
  X(node_copies, "node.copies")                                     \
  X(node_copy_bytes, "node.copy_bytes")                             \
  X(directory_ns, "directory.ns")                                   \
  X(transport_ns, "transport.ns")                                   \
  X(node_ns, "node.ns")                                             \
  X(meta_revalidations, "meta.revalidations")                       \
  X(meta_changed, "meta.changed")                                   \
  X(stale_chunks, "stale_chunks")                                   \
  X(node_files, "node.files")                                       \
  X(node_file_bytes, "node.file_bytes")                             \
  X(node_file_maps, "node.file_maps")                               \
  X(node_file_dup_bytes, "node.file_dup_bytes")                     \
  X(node_file_maps_workers, "node.file_maps_workers")               \
  X(node_file_no_room, "node.file_no_room")                         \
  X(node_file_failed, "node.file_failed")                           \
  X(worker_lookups, "workers.lookups")                              \
  X(worker_places, "workers.places")                                \
  X(worker_places_sent, "workers.places_sent")                      \
  X(worker_reads, "workers.reads")                                  \
  X(worker_answers_found, "workers.answers_found")                  \
  X(worker_places_found, "workers.places_found")                    \
  X(loader_objects, "loader.objects")                               \
  X(loader_absent, "loader.absent")                                 \
  X(loader_original, "loader.original")                             \
  X(produce_files, "produce.files")                                 \
  X(produce_bytes, "produce.bytes")                                 \
  X(produce_pfs_bytes, "produce.pfs_bytes")                         \
  X(produce_refused, "produce.refused")                             \
  X(produce_waits, "produce.waits")                                 \
  X(produce_wait_ns, "produce.wait_ns")                             \
  X(kept_bytes_adopted, "kept.bytes_adopted")                       \
  X(kept_chunks_adopted, "kept.chunks_adopted")                     \
  X(kept_files_adopted, "kept.files_adopted")                       \
  X(kept_node_files, "kept.node_files")                             \
  X(kept_bytes_evicted, "kept.bytes_evicted")                       \
  X(kept_bytes_demoted, "kept.bytes_demoted")                       \
  X(kept_bytes_dropped_changed, "kept.bytes_dropped_changed")       \
  X(kept_bytes_dropped_unfinished, "kept.bytes_dropped_unfinished") \
  X(kept_bytes_kept, "kept.bytes_kept")                             \
  X(kept_answers_adopted, "kept.answers_adopted")                   \
  X(kept_answers_kept, "kept.answers_kept")                         \
  X(kept_paths_checked_ahead, "kept.paths_checked_ahead")           \
  X(integrity_checked, "integrity.checked")                         \
  X(integrity_bytes_hashed, "integrity.bytes_hashed")               \
  X(integrity_mismatches, "integrity.mismatches")                   \
  X(integrity_refetched, "integrity.refetched")                     \
  X(integrity_reloaded, "integrity.reloaded")                       \
  X(integrity_holders_marked, "integrity.holders_marked")           \
  X(integrity_ns, "integrity.ns")                                   \
  X(served_self_bytes, "served.self_bytes")                         \
  X(served_node_bytes, "served.node_bytes")                         \
  X(served_remote_bytes, "served.remote_bytes")                     \
  X(served_loaded_bytes, "served.loaded_bytes")                     \
  X(served_fallback_bytes, "served.fallback_bytes")                 \
  X(served_disk_bytes, "served.disk_bytes")                         \
  X(fallback_no_room, "fallback_causes.no_room")                    \
  X(fallback_changed, "fallback_causes.changed")                    \
  X(fallback_directory, "fallback_causes.directory")                \
  X(fallback_transport, "fallback_causes.transport")                \
  X(fallback_integrity, "fallback_causes.integrity")                \
  X(fallback_other, "fallback_causes.other")                        \
  X(startup_larder_ns, "startup.larder_ns")                         \
  X(startup_mpi_init_ns, "startup.mpi_init_ns")

enum class Counter : int {
#define LARDER_STATS_ENUM(name, path) name,
  LARDER_STATS_COUNTERS(LARDER_STATS_ENUM)
#undef LARDER_STATS_ENUM
      kCount
};

inline constexpr int kCounterCount = static_cast<int>(Counter::kCount);
// Latency histogram of application reads: bucket i holds reads of [2^i, 2^(i+1)) ns.
inline constexpr int kLatencyBuckets = 40;

// How one quantity spreads over the ranks (and nodes) of the job: a hot spot shows as a max far
// above the median, on rank max_rank. The log2 histograms count ranks (nodes) by value: bucket 0
// holds the zeros, bucket b > 0 the values in [2^(b-1), 2^b).
inline constexpr int kSpreadBuckets = 65;
inline constexpr std::size_t kTopRanks = 10;
struct RankValue {
  int rank = 0;
  int node = -1;  // -1: nodes unknown
  std::uint64_t value = 0;
};
struct Spread {
  std::uint64_t max = 0;
  std::uint64_t median = 0;
  std::uint64_t total = 0;
  int max_rank = 0;
  int max_node = -1;  // the node of max_rank (-1: nodes unknown)
  std::array<std::uint64_t, kSpreadBuckets> ranks_log2{};
  std::vector<RankValue> top_ranks;  // largest first
  // The same over the nodes' sums (set when nodes are known).
  std::uint64_t node_max = 0;
  std::uint64_t node_median = 0;
  int node_max_node = -1;
  std::array<std::uint64_t, kSpreadBuckets> nodes_log2{};
};
// `node_of` (empty, or one node index per rank) adds the nodes' view.
Spread spread_of(std::span<const std::uint64_t> per_rank, std::span<const int> node_of = {});
int spread_bucket(std::uint64_t value) noexcept;

// The per-rank distributions of the load (the stats JSON's "skew"): bytes other ranks copied out
// of each rank's memory, directory operations each rank's shard received, the transfers from
// other nodes each rank made, and the time each rank waited for another's load.
struct Skew {
  Spread bytes_served;
  Spread directory_ops_received;
  Spread remote_fetches;
  Spread wait_ns;
};

// The job as the report shows it (set by the session on the totals it writes).
struct JobInfo {
  int nodes = 1;
  int ranks_per_node = 1;  // the most on one node
  std::int64_t start_unix_ns = 0;
  std::int64_t duration_ns = 0;
  std::string mpi;        // the MPI library's version line
  std::string transport;  // the data path that ran: "ucx", "mpi" or "none"
  std::string directory;  // how the directory reached other ranks: "messages", "rma" or "none"
  std::string version;    // Larder's
  std::string host;       // rank 0's
  std::vector<std::pair<std::string, std::string>> settings;  // LARDER_* set in the environment
};

// What the job report needs beyond the counters: written with the job's totals.
struct JobDetail {
  JobInfo job;
  JobTimeline timeline;
  FileLists files{};
};

struct StatsSnapshot {
  std::array<std::uint64_t, kCounterCount> counters{};
  std::array<std::uint64_t, kLatencyBuckets> latency{};
  std::uint64_t latency_sum_ns = 0;
  std::uint64_t latency_max_ns = 0;
  int ranks = 1;
  std::optional<Skew> skew;  // set on rank 0 of a job's totals
  // Set on the totals written at finalize; on the heap: a snapshot is copied often (a worker's
  // flush) and the file lists alone are 38 KiB.
  std::shared_ptr<JobDetail> detail;

  std::uint64_t get(Counter c) const noexcept { return counters[static_cast<int>(c)]; }
  void add(const StatsSnapshot& other) noexcept;
  // The q-quantile (0..1) of the latency histogram, as the bucket's upper bound in ns.
  std::uint64_t latency_quantile_ns(double q) const noexcept;
  std::string to_json() const;
  // One human-readable line for the rank-0 summary.
  std::string summary_line() const;
};

// What the job report needs beyond the counters, for the rank's own Stats (a worker's Stats in
// shared memory has none): the timeline's samples and the file lists. Owned by the session.
class Recorder {
 public:
  Recorder() noexcept;
  std::int64_t start_unix_ns() const noexcept { return timeline_.start_unix_ns(); }
  // The unix time of a steady-clock reading (no second clock read per application read).
  std::int64_t unix_ns(std::chrono::steady_clock::time_point t) const noexcept;
  Timeline& timeline() noexcept { return timeline_; }
  const Timeline& timeline() const noexcept { return timeline_; }
  FileTop& files() noexcept { return files_; }
  const FileTop& files() const noexcept { return files_; }

 private:
  std::chrono::steady_clock::time_point steady_start_;
  Timeline timeline_;
  FileTop files_;
};

// The counters: a block of lock-free atomics, address-free (a worker's lives in shared memory;
// zeroed memory is a valid empty Stats).
class Stats {
 public:
  // The rank's own Stats feeds `recorder` (which outlives every use of this Stats).
  void attach(Recorder* recorder) noexcept { recorder_.store(recorder, std::memory_order_release); }
  void add(Counter c, std::uint64_t n = 1) noexcept {
    counters_[static_cast<int>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  void record_latency(std::uint64_t ns) noexcept;
  // One read call of the application: app.read_calls, app.bytes_read and its latency.
  void record_app_read(std::uint64_t bytes, std::chrono::steady_clock::time_point start) noexcept;
  // Bytes of an application read served from `source` (one of the served_* counters), from the
  // disk tier when `disk`.
  void served(Counter source, std::uint64_t bytes, bool disk) noexcept;
  // A read piece of `path` that the cache could not serve: read from the PFS for `cause`.
  void fallback(std::string_view path, FallbackCause cause, std::uint64_t bytes) noexcept;
  // One operation of the PFS (one of the pfs_*_ops counters) on `path`, moving `bytes`.
  void pfs_op(Counter op, std::string_view path, std::uint64_t bytes = 0) noexcept;
  // Adds every counter and the histogram of `other` (a worker's slot, at finalize).
  void add(const StatsSnapshot& other) noexcept;
  StatsSnapshot snapshot() const noexcept;

  // The recorder's last sample (at finalize).
  void final_sample();

 private:
  SeriesValues series() const noexcept;
  void maybe_sample(std::chrono::steady_clock::time_point now) noexcept;

  std::array<std::atomic<std::uint64_t>, kCounterCount> counters_{};   // relaxed: stats only
  std::array<std::atomic<std::uint64_t>, kLatencyBuckets> latency_{};  // relaxed
  std::atomic<std::uint64_t> latency_sum_ns_{0};                       // relaxed
  std::atomic<std::uint64_t> latency_max_ns_{0};                       // relaxed
  std::atomic<Recorder*> recorder_{nullptr};
};

// Larder's version (the project's, from the build).
std::string_view larder_version() noexcept;
// Nanoseconds since the epoch, CLOCK_REALTIME.
std::int64_t unix_now_ns() noexcept;

// Writes the JSON to `path` atomically (temporary file, then rename).
Status write_stats_file(const std::string& path, const StatsSnapshot& snapshot);

}  // namespace larder

#endif  // LARDER_RUNTIME_STATS_STATS_HPP_
