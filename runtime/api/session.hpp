// Session: everything larder_init builds and larder_finalize tears down, owned in one place.
//
// Member order is teardown order (last declared, first destroyed): the cache goes before the
// directory and transport it uses, and those before the arenas they expose.
#ifndef LARDER_RUNTIME_API_SESSION_HPP_
#define LARDER_RUNTIME_API_SESSION_HPP_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "runtime/api/file_service.hpp"
#include "runtime/api/file_table.hpp"
#include "runtime/api/seams.hpp"
#include "runtime/api/stage.hpp"
#include "runtime/cache/cache.hpp"
#include "runtime/config/config.hpp"
#include "runtime/directory/directory.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/pfs/file_system.hpp"
#include "runtime/stats/peer_load.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/tier/job_dir.hpp"
#include "runtime/tier/kept_store.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/tier/peer_arenas.hpp"
#include "runtime/tier/segments.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "runtime/transport/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

class MpiJob;  // mpi_transport: the collective side of a session over MPI

class Session final : public FileService {
 public:
  // A cache private to this process (no MPI).
  static Result<std::unique_ptr<Session>> create_local(Config config, const Seams& seams = {});
  // Collective over `job`'s communicator.
  static Result<std::unique_ptr<Session>> create_mpi(Config config, std::unique_ptr<MpiJob> job,
                                                     const Seams& seams = {});

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() override;

  // Collective: refuses new leases, waits for the reads in flight (up to LARDER_TIMEOUT), totals
  // the stats, writes LARDER_STATS, prints the summary (rank 0), frees the MPI resources and
  // removes this job's node-local files. Call once. `before_drain` runs after new leases are
  // refused and before the wait (the hooks stop the agent there, so its requests end).
  Status close(const std::function<void()>& before_drain = {});

  // Read leases (Runtime::session hands them out). try_lease fails once close has begun.
  bool try_lease() noexcept;
  void release_lease() noexcept;

  const Config& config() const noexcept override { return config_; }
  // FileService, over this session's cache (unavailable once the session is closed).
  Result<PathRecord> lookup(const std::string& path) override;
  Result<PathRecord> lookup_for_open(const std::string& path) override;
  Result<PathRecord> lookup_link(const std::string& path) override;
  Result<std::shared_ptr<const Listing>> list(const std::string& path) override;
  Result<std::size_t> read(const CachedFile& file, std::span<std::byte> into,
                           std::uint64_t offset) override;
  Result<std::string> node_file(const CachedFile& file) override;
  Result<std::string> produce_claim(const std::string& path) override;
  Result<PathRecord> produce_publish(const std::string& path, const std::string& canonical,
                                     const std::string& staging, std::uint32_t mode) override;
  void produce_abandon(const std::string& path, const std::string& canonical) override;
  Result<PathRecord> produce_alias(const std::string& from, const std::string& to) override;
  std::string produce_dir() override { return node_files_dir_; }
  // The node's loader tree (runtime/api/loader_objects.hpp); empty when there is none.
  const std::string& loader_root() const noexcept { return loader_root_; }
  // Collective: loads the trees under `roots` into the job's cache, spread over the ranks
  // (runtime/api/stage.hpp). The totals are the job's, the same on every rank.
  Result<StageTotals> stage(std::span<const std::string> roots);

  Stats& stats() noexcept { return stats_; }
  Cache& cache() noexcept { return *cache_; }
  FileTable& files() noexcept { return files_; }
  const Topology& topology() const noexcept { return topology_; }
  const JobDir& job_dir() const noexcept { return job_dir_; }
  // The file of rank `rank`'s arena `tier` (or, for Tier::kFile, its segment `segment`) on this
  // node; empty when there is none.
  std::string storage_path(int rank, Tier tier, std::uint32_t segment) const;
  // The node table's file (level 0), which the node's workers map read-only (NodeView); empty
  // without a node table (the cache's answers and words are then its own).
  std::string node_table_path() const;
  // The collective side; null for a local session (the C API's job-wide stats use it).
  MpiJob* mpi_job() noexcept { return mpi_.get(); }

 private:
  explicit Session(Config config);
  Status build_local_tiers(std::uint64_t mem_share, std::uint64_t disk_share);
  // Collective: the node leaders create their node's table, then the others map it. A rank
  // that cannot ends up without one (it then resolves every key for itself).
  void build_node_table();
  KeptPlace kept_place_of(const std::string& name) const;
  void prepare_kept();                // the node leader, before its ranks open the store
  void open_kept(int ranks_on_node);  // every rank
  void keep_step();                   // every rank, at the step's end
  // The node's leader, once every rank has drained: the chunks its schedules made ready that no
  // read of the node used (prefetch.unused_chunks, prefetch.unused_bytes).
  void count_unused_prefetch();
  void complete_kept(bool leader);  // after every rank kept its part
  void build_cache();
  // Puts the tests' fakes (if any) in front of the file system, directory and transport.
  void apply_seams(const Seams& seams);
  Status close_mpi();
  StatsSnapshot local_totals();
  // Waits until no lease is held; false when `timeout` passed first. `progress` (may be empty)
  // runs every few hundred microseconds while it waits.
  bool drain(std::chrono::milliseconds timeout, const std::function<void()>& progress);

  // The job report's parts (stats.hpp): the job's information, timeline and file lists.
  JobInfo job_info(std::int64_t start_unix_ns, std::int64_t end_unix_ns) const;

  Config config_;
  Recorder recorder_;  // before stats_, which feeds it
  Stats stats_;
  Topology topology_;
  JobDir job_dir_;
  LocalTiers tiers_;
  std::unique_ptr<Segments> segments_;  // null without a files directory
  std::unique_ptr<PeerArenas> peers_;
  std::unique_ptr<NodeTable> node_table_;  // null: a local session, or the table failed
  std::unique_ptr<KeptPlace> kept_place_;  // null: this step keeps nothing (LARDER_KEEP)
  std::unique_ptr<KeptStore> kept_;        // null: no kept store to adopt from
  std::unique_ptr<PeerLoad> load_;
  std::unique_ptr<FileSystem> pfs_;
  std::unique_ptr<MpiJob> mpi_;           // null for a local session
  std::unique_ptr<Directory> directory_;  // LocalDirectory, or owned by mpi_ (then null)
  Directory* directory_view_ = nullptr;
  Transport* transport_view_ = nullptr;  // owned by mpi_
  // Tests' fakes in front of the directory and the transport (seams.hpp); null otherwise.
  std::unique_ptr<Directory> directory_seam_;
  std::unique_ptr<Transport> transport_seam_;
  std::function<std::int64_t()> clock_;  // Seams::clock (empty: the real clock)
  std::function<bool(std::span<const std::byte>)> resident_;  // Seams::resident (empty: mincore)
  std::string node_files_dir_;  // Cache::node_file's directory (empty: none)
  std::string disk_files_dir_;  // kept disk-tier files linked as segments (empty: none)
  std::string loader_root_;     // <node_files_dir_>/tree (empty: none)
  ProgressThread* progress_view_ = nullptr;  // owned by mpi_
  std::unique_ptr<Cache> cache_;
  FileTable files_;
  std::atomic<bool> closed_{false};  // close() ran (or runs): once only
  // Leases: the count of reads in flight, and kClosing once close has begun (acq_rel: a lease
  // taken before kClosing is set is waited for; one taken after sees it and is given back).
  static constexpr std::uint64_t kClosing = 1ull << 63;
  std::atomic<std::uint64_t> leases_{0};
  std::mutex drain_mu_;
  std::condition_variable drained_;  // notified when the last lease goes while closing
  // False when leases were still held at the end of the drain: the mappings then stay (leaked)
  // rather than be pulled from under a read; the process is ending anyway.
  bool unmap_allowed_ = true;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_SESSION_HPP_
