#include "runtime/api/session.hpp"

#include <sys/statvfs.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/units.hpp"
#include "runtime/directory/local_directory.hpp"
#include "runtime/node/prefetch_marks.hpp"
#include "runtime/pfs/posix_file_system.hpp"

namespace larder {

Session::Session(Config config) : config_(std::move(config)) {
  stats_.attach(&recorder_);
}

JobInfo Session::job_info(std::int64_t start_unix_ns, std::int64_t end_unix_ns) const {
  JobInfo job;
  job.nodes = topology_.node_count();
  for (int node = 0; node < job.nodes; ++node) {
    job.ranks_per_node = std::max(job.ranks_per_node, topology_.ranks_on_node(node));
  }
  job.start_unix_ns = start_unix_ns;
  job.duration_ns = std::max<std::int64_t>(end_unix_ns - start_unix_ns, 0);
  job.mpi = mpi_ ? MpiJob::library_version() : "none";
  // What ran, not what was asked: the UCX transport falls back to MPI when it cannot start.
  job.transport = transport_view_ != nullptr ? transport_view_->name() : "none";
  job.directory = mpi_ ? mpi_->directory_ops() : "none";
  job.version = std::string(larder_version());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) job.host = host;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto eq = entry.find('=');
    // LARDER_AGENT* and LARDER_NOTICE_GIVEN: set by Larder for the processes it starts.
    const bool internal =
        entry.starts_with("LARDER_AGENT") || entry.starts_with("LARDER_NOTICE_GIVEN=");
    if (entry.starts_with("LARDER_") && !internal && eq != std::string_view::npos) {
      job.settings.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  std::sort(job.settings.begin(), job.settings.end());
  return job;
}

StatsSnapshot Session::local_totals() {
  stats_.final_sample();
  StatsSnapshot totals = stats_.snapshot();
  totals.ranks = topology_.size;
  const std::int64_t end = unix_now_ns();
  auto detail = std::make_shared<JobDetail>();
  detail->job = job_info(recorder_.start_unix_ns(), end);
  detail->timeline = timeline_grid(recorder_.start_unix_ns(), end);
  add_samples(recorder_.timeline().samples(), detail->timeline);
  detail->files = recorder_.files().lists();
  totals.detail = std::move(detail);
  return totals;
}

Session::~Session() {
  // The transport (owned by mpi_, which outlives this body) must not call into the cache
  // once it is gone.
  if (Transport* real = mpi_ ? mpi_->transport() : nullptr; real != nullptr && cache_) {
    real->set_serve_check(nullptr);
  }
  if (!closed_) {
    // Not collective here: only a local session or an aborted init reaches this.
    job_dir_.remove_all();
  }
}

Status Session::build_local_tiers(std::uint64_t mem_share, std::uint64_t disk_share) {
  if (disk_share > 0 && !config_.keep.empty()) {
    // Kept disk-tier files are linked here as segments (links do not cross file systems).
    const int node = topology_.node();
    const std::string files = job_dir_.disk_job_dir() + "/files-" + std::to_string(node);
    if (sys::mkdir(files.c_str(), 0700) == 0 || errno == EEXIST) disk_files_dir_ = files;
  }
  if (mem_share > 0) {
    auto arena = Arena::create(job_dir_.arena_path(topology_.rank, Tier::kMem), mem_share);
    if (!arena.ok()) return arena.status();
    tiers_.set(Tier::kMem, std::move(*arena));
    // Node files (Cache::node_file) of this node (a real or an emulated one), beside the arenas.
    const int node = topology_.node();
    const std::string files = job_dir_.shm_job_dir() + "/files-" + std::to_string(node);
    if (sys::mkdir(files.c_str(), 0700) == 0 || errno == EEXIST) {
      node_files_dir_ = files;
      segments_ = std::make_unique<Segments>(files, topology_.rank, disk_files_dir_);
      // Shared objects are mapped for execution from here: not on a noexec mount.
      struct statvfs fs {};
      const bool noexec = ::statvfs(files.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC) != 0;
      const std::string tree = files + "/tree";
      if (noexec) {
        if (topology_.rank == 0) {
          LARDER_LOG_WARN(
              "{} is mounted noexec: shared objects load from their original paths "
              "(set LARDER_SHM_DIR to a tmpfs that allows execution)",
              config_.shm_dir);
        }
      } else if (sys::mkdir(tree.c_str(), 0700) == 0 || errno == EEXIST) {
        loader_root_ = tree;
      }
    } else {
      LARDER_LOG_INFO("no node files: cannot create {}: {}", files, log::errno_text(errno));
    }
  }
  if (segments_ == nullptr && !disk_files_dir_.empty()) {
    // No memory tier, a kept disk tier: segments for the kept disk-tier files an earlier step
    // left (and produced files in local mode), but no node files (they would live in memory).
    const int node = topology_.node();
    const std::string files = job_dir_.shm_job_dir() + "/files-" + std::to_string(node);
    if (sys::mkdir(files.c_str(), 0700) == 0 || errno == EEXIST) {
      segments_ = std::make_unique<Segments>(files, topology_.rank, disk_files_dir_);
    } else {
      LARDER_LOG_INFO("kept disk-tier files not used: cannot create {}: {}", files,
                      log::errno_text(errno));
    }
  }
  if (disk_share > 0) {
    auto arena = Arena::create(job_dir_.arena_path(topology_.rank, Tier::kDisk), disk_share);
    if (!arena.ok()) return arena.status();
    tiers_.set(Tier::kDisk, std::move(*arena));
  }
  return {};
}

// Kept stores (LARDER_KEEP): the node leader prepares the node's store before the step starts,
// the node's ranks then map its table, and the budgets of their arenas leave the kept bytes room.
KeptPlace Session::kept_place_of(const std::string& name) const {
  KeptPlace place;
  place.shm_base = job_dir_.shm_base();
  place.disk_base = job_dir_.disk_base();
  place.name = name;
  const int node = topology_.node();
  place.node = config_.node_size > 0 ? "node-" + std::to_string(node) : "host";
  return place;
}

void Session::prepare_kept() {
  if (config_.keep.empty()) {
    // Keeping nothing itself, the job still removes this user's stores past LARDER_KEEP_TTL.
    (void)KeptStore::sweep(job_dir_.shm_base(), job_dir_.disk_base(), config_.keep_ttl);
    return;
  }
  auto prepared = KeptStore::prepare(kept_place_of(config_.keep), job_dir_.job_id(),
                                     config_.mem_budget, config_.disk_budget, config_.keep_ttl);
  if (!prepared.ok()) {
    LARDER_LOG_WARN("the kept store {} is not used: {}", config_.keep, prepared.status().message());
    return;
  }
  stats_.add(Counter::kept_bytes_evicted, prepared->evicted_bytes);
  stats_.add(Counter::kept_bytes_demoted, prepared->demoted_bytes);
  stats_.add(Counter::kept_bytes_dropped_unfinished, prepared->unfinished_bytes);
  LARDER_LOG_INFO("kept store {}: {} chunks, {} in memory, {} on disk", config_.keep,
                  prepared->chunks, format_size(prepared->mem_bytes),
                  format_size(prepared->disk_bytes));
}

void Session::open_kept(int ranks_on_node) {
  if (config_.keep.empty()) return;
  kept_place_ = std::make_unique<KeptPlace>(kept_place_of(config_.keep));
  auto kept = KeptStore::open(*kept_place_, job_dir_.job_id());
  if (!kept.ok()) {
    LARDER_LOG_INFO("no kept store to adopt from: {}", kept.status().message());
    return;
  }
  kept_ = std::move(*kept);
  // The kept bytes count against the node's budgets: each rank leaves its share of them.
  const auto share = static_cast<std::uint64_t>(ranks_on_node > 0 ? ranks_on_node : 1);
  for (auto [tier, bytes] :
       {std::pair{Tier::kMem, kept_->mem_bytes()}, std::pair{Tier::kDisk, kept_->disk_bytes()}}) {
    Arena* arena = tiers_.get(tier);
    if (arena == nullptr) continue;
    const std::uint64_t mine = (bytes + share - 1) / share;
    arena->set_limit(arena->capacity() > mine ? arena->capacity() - mine : 0);
  }
}

void Session::keep_step() {
  if (kept_place_ == nullptr || cache_ == nullptr) return;
  auto kept = cache_->keep_step(job_dir_.job_id());
  if (!kept.ok()) {
    LARDER_LOG_WARN("this rank's part of the step is not kept: {}", kept.status().message());
  }
}

void Session::complete_kept(bool leader) {
  if (kept_place_ == nullptr) return;
  kept_.reset();
  if (!leader) return;
  if (Status s = KeptStore::complete_step(*kept_place_, job_dir_.job_id()); !s.ok()) {
    LARDER_LOG_WARN("the step is not kept: {}", s.message());
  }
  KeptStore::remove_table(*kept_place_, job_dir_.job_id());
}

void Session::count_unused_prefetch() {
  if (node_table_ == nullptr || topology_.leader_of(topology_.node()) != topology_.rank) return;
  auto marks = PrefetchMarks::open(PrefetchMarks::path_for(node_table_->path()), false);
  if (!marks.ok()) return;  // the node was never told an order (or could not count it)
  const PrefetchMarks::Unused unused = (*marks)->unused();
  stats_.add(Counter::prefetch_unused_chunks, unused.chunks);
  stats_.add(Counter::prefetch_unused_bytes, unused.bytes);
}

void Session::build_node_table() {
  MpiJob& mpi = *mpi_;
  const int node = topology_.node();
  const std::string path = job_dir_.shm_job_dir() + "/node-" + std::to_string(node) + ".table";
  const bool leader = topology_.leader_of(node) == topology_.rank;
  Status made;
  if (leader) {
    prepare_kept();  // before the agreement below: the node's ranks open it after
    auto table = NodeTable::create(path, NodeTable::kFirstLevel, config_.node_slots);
    if (table.ok()) {
      node_table_ = std::move(*table);
    } else {
      made = table.status();
    }
  }
  // The agreement is the barrier between the leaders' creation and the others' mapping; a node
  // whose table failed goes on without one (its ranks then cannot open it either).
  if (Status agreed = mpi.agree(made); !agreed.ok()) {
    LARDER_LOG_WARN("node tables are off for this job: {}", agreed.message());
    node_table_.reset();
    open_kept(topology_.ranks_on_node(node));
    return;
  }
  open_kept(topology_.ranks_on_node(node));
  if (!leader) {
    auto table = NodeTable::attach(path, config_.node_slots);
    if (table.ok()) {
      node_table_ = std::move(*table);
    } else {
      LARDER_LOG_WARN("this rank resolves every key itself: {}", table.status().message());
    }
  }
}

void Session::apply_seams(const Seams& seams) {
  clock_ = seams.clock;
  resident_ = seams.resident;
  if (seams.file_system) pfs_ = seams.file_system(std::move(pfs_));
  if (seams.directory && directory_view_ != nullptr) {
    directory_seam_ = seams.directory(*directory_view_);
    directory_view_ = directory_seam_.get();
  }
  if (seams.transport && transport_view_ != nullptr) {
    transport_seam_ = seams.transport(*transport_view_);
    transport_view_ = transport_seam_.get();
  }
}

void Session::build_cache() {
  CacheParts parts;
  parts.config = &config_;
  parts.stats = &stats_;
  parts.pfs = pfs_.get();
  parts.directory = directory_view_;
  parts.tiers = &tiers_;
  parts.peers = peers_.get();
  parts.transport = transport_view_;
  parts.progress = progress_view_;
  parts.node = node_table_.get();
  parts.load = load_.get();
  parts.topology = topology_;
  parts.clock = clock_;
  parts.resident = resident_;
  parts.node_files_dir = node_files_dir_;
  parts.segments = segments_.get();
  parts.kept = kept_.get();
  parts.kept_place = kept_place_.get();
  const char* audit = std::getenv("LD_AUDIT");
  parts.objects_as_node_files = audit != nullptr && std::strstr(audit, "larder_audit") != nullptr;
  cache_ = std::make_unique<Cache>(std::move(parts));
  // The real transport's holder side (not a test's seam in front of it): pieces of this rank's
  // disk-tier chunks are checked before they are served (Cache::serve_check). It is cleared
  // before the cache goes (~Session), and the transport serves nothing after its close.
  if (Transport* real = mpi_ ? mpi_->transport() : nullptr; real != nullptr) {
    Cache* cache = cache_.get();
    real->set_serve_check(
        [cache](Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk) {
          return cache->serve_check(tier, segment, chunk);
        });
  }
}

Result<std::unique_ptr<Session>> Session::create_local(Config config, const Seams& seams) {
  std::unique_ptr<Session> s(new Session(std::move(config)));
  const Config& c = s->config_;
  JobDir::clean_stale_jobs(c.shm_dir, c.local_dir, "");
  auto dir = JobDir::join(c.shm_dir, c.local_dir, JobDir::new_job_id(), c.disk_budget > 0);
  if (!dir.ok()) return dir.status();
  s->job_dir_ = std::move(*dir);
  if (Status st = s->build_local_tiers(c.mem_budget, c.disk_budget); !st.ok()) return st;
  s->prepare_kept();
  s->open_kept(1);
  s->pfs_ = std::make_unique<PosixFileSystem>(s->stats_);
  s->directory_ = std::make_unique<LocalDirectory>(c.dir_entries);
  s->directory_view_ = s->directory_.get();
  s->apply_seams(seams);
  s->build_cache();
  LARDER_LOG_INFO("local cache started: memory {}, disk {}, chunk {}", format_size(c.mem_budget),
                  format_size(c.disk_budget), format_size(c.chunk_size));
  return s;
}

Result<std::unique_ptr<Session>> Session::create_mpi(Config config, std::unique_ptr<MpiJob> job,
                                                     const Seams& seams) {
  std::unique_ptr<Session> s(new Session(std::move(config)));
  const Config& c = s->config_;
  s->mpi_ = std::move(job);
  MpiJob& mpi = *s->mpi_;
  s->topology_ = mpi.topology();
  const int rank = s->topology_.rank;
  // Every rank creates its arenas; agreement first, so a failure anywhere stops every rank.
  Status local;
  auto dir = JobDir::join(c.shm_dir, c.local_dir, mpi.job_id(), c.disk_budget > 0);
  if (dir.ok()) {
    s->job_dir_ = std::move(*dir);
    const auto share = static_cast<std::uint64_t>(mpi.ranks_sharing_budget());
    local = s->build_local_tiers(c.mem_budget / share, c.disk_budget / share);
  } else {
    local = dir.status();
  }
  if (Status agreed = mpi.agree(local); !agreed.ok()) {
    (void)mpi.close();
    return agreed;
  }
  if (mpi.node_leader()) JobDir::clean_stale_jobs(c.shm_dir, c.local_dir, mpi.job_id());
  s->pfs_ = std::make_unique<PosixFileSystem>(s->stats_);
  s->peers_ =
      std::make_unique<PeerArenas>([self = s.get()](int r, Tier tier, std::uint32_t segment) {
        return self->storage_path(r, tier, segment);
      });
  s->load_ = std::make_unique<PeerLoad>(s->topology_.size);
  s->build_node_table();
  if (Status st = mpi.agree(
          mpi.start(c, s->tiers_, s->load_.get(), s->job_dir_.shm_job_dir(), seams.ucx_dead_peer));
      !st.ok()) {
    (void)mpi.close();
    return st;
  }
  s->directory_view_ = mpi.directory();
  s->transport_view_ = mpi.transport();
  s->progress_view_ = mpi.progress();
  s->apply_seams(seams);
  s->build_cache();
  if (!c.keep.empty()) {
    // What the nodes kept is published before any rank reads (LARDER_KEEP is the same on every
    // rank of a job step, so every rank takes this barrier or none does).
    s->cache_->publish_kept();
    s->cache_->publish_kept_produced();
    if (Status st = mpi.barrier(); !st.ok()) {
      (void)mpi.close();
      return st;
    }
    // The paths the nodes kept answers for, checked against the PFS in the background.
    s->cache_->check_kept_paths_soon();
  }
  if (rank == 0) {
    LARDER_LOG_INFO("started over {} ranks on {} nodes: memory {} per node, chunk {}, transport {}",
                    s->topology_.size, s->topology_.node_count(), format_size(c.mem_budget),
                    format_size(c.chunk_size), s->transport_view_->name());
  }
  return s;
}

std::string Session::node_table_path() const {
  return node_table_ ? node_table_->path() : std::string();
}

std::string Session::storage_path(int rank, Tier tier, std::uint32_t segment) const {
  if (tier != Tier::kFile) return job_dir_.arena_path(rank, tier);
  if ((segment & Segments::kDiskSegment) != 0) {
    return disk_files_dir_.empty() ? std::string() : Segments::path(disk_files_dir_, rank, segment);
  }
  if (node_files_dir_.empty()) return {};
  return Segments::path(node_files_dir_, rank, segment);
}

Result<PathRecord> Session::lookup(const std::string& path) {
  return cache_->lookup(path);
}

Result<PathRecord> Session::lookup_for_open(const std::string& path) {
  return cache_->lookup_for_open(path);
}

Result<PathRecord> Session::lookup_link(const std::string& path) {
  return cache_->lookup_link(path);
}

Result<std::shared_ptr<const Listing>> Session::list(const std::string& path) {
  return cache_->list(path);
}

Result<std::size_t> Session::read(const CachedFile& file, std::span<std::byte> into,
                                  std::uint64_t offset) {
  const auto start = std::chrono::steady_clock::now();
  auto n = cache_->read(file, into, offset);
  stats_.record_app_read(n.ok() ? *n : 0, start);
  return n;
}

Result<std::string> Session::node_file(const CachedFile& file) {
  return cache_->node_file(file);
}

Result<std::string> Session::produce_claim(const std::string& path) {
  return cache_->claim_produced(path);
}

Result<PathRecord> Session::produce_publish(const std::string& path, const std::string& canonical,
                                            const std::string& staging, std::uint32_t mode) {
  return cache_->publish_produced(path, canonical, staging, mode);
}

void Session::produce_abandon(const std::string& path, const std::string& canonical) {
  cache_->abandon_produced(path, canonical);
}

Result<PathRecord> Session::produce_alias(const std::string& from, const std::string& to) {
  return cache_->alias_produced(from, to);
}

Result<StageTotals> Session::stage(std::span<const std::string> roots) {
  StageTotals totals;
  const std::vector<CachedFile> files = stage_walk(*this, roots, totals);
  stage_load(*cache_, files, topology_.rank, topology_.size, totals);
  if (mpi_) {
    // Every rank walked the same tree: files, bytes, chunks and skipped are the same everywhere;
    // what each rank could not cache is its own.
    std::uint64_t not_cached = totals.not_cached;
    const Status s = mpi_->sum(std::span(&not_cached, 1));
    if (!s.ok()) return s;  // an MPI error: every rank gets one (the collective failed)
    totals.not_cached = not_cached;
  }
  return totals;
}

bool Session::try_lease() noexcept {
  // acq_rel: pairs with the fetch_or of close(): either close sees this lease, or we see kClosing.
  if ((leases_.fetch_add(1, std::memory_order_acq_rel) & kClosing) == 0) return true;
  release_lease();
  return false;
}

void Session::release_lease() noexcept {
  const std::uint64_t before = leases_.fetch_sub(1, std::memory_order_acq_rel);
  if ((before & kClosing) != 0 && (before & ~kClosing) == 1) {
    std::lock_guard lock(drain_mu_);  // the drainer checks the count under this mutex
    drained_.notify_all();
  }
}

bool Session::drain(std::chrono::milliseconds timeout, const std::function<void()>& progress) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto idle = [&] { return (leases_.load(std::memory_order_acquire) & ~kClosing) == 0; };
  std::unique_lock lock(drain_mu_);
  while (!idle()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (progress) {
      lock.unlock();
      progress();
      lock.lock();
    }
    drained_.wait_for(lock, std::chrono::microseconds(200), idle);
  }
  return true;
}

Status Session::close(const std::function<void()>& before_drain) {
  if (closed_.exchange(true)) return {};
  leases_.fetch_or(kClosing, std::memory_order_acq_rel);  // no new lease from here on
  // List-ahead's directories being resolved in the background finish while the directory is
  // still up (what they claimed is published: other ranks may be waiting for it); those not
  // started are dropped.
  cache_->stop_background();
  cache_->begin_close();  // a read still in flight after the drain makes no MPI call
  if (before_drain) before_drain();
  // Only this thread calls MPI from here on: finalize may run inside MPI_Finalize (an
  // MPI_COMM_SELF attribute callback, as the HDF5 connector does), where MPICH no longer
  // serialises threads. So this thread drives MPI's progress while the reads in flight end
  // (their one-sided operations on other ranks need those ranks' progress, and theirs ours).
  std::function<void()> progress;
  if (mpi_) {
    mpi_->stop_mpi_polling();
    progress = [this] { mpi_->poll(); };
  }
  if (!drain(config_.wait_timeout, progress)) {
    unmap_allowed_ = false;
    LARDER_LOG_WARN(
        "{} reads were still in flight {} s after finalize began; their memory stays mapped "
        "until the process ends",
        leases_.load() & ~kClosing, config_.wait_timeout.count() / 1000);
  }
  if (mpi_) return close_mpi();
  if (unmap_allowed_) keep_step();
  StatsSnapshot totals = local_totals();
  Status result;
  if (!config_.stats_path.empty()) result = write_stats_file(config_.stats_path, totals);
  if (topology_.rank == 0 && log::enabled(log::Level::kWarn))
    log::print_line(totals.summary_line());
  if (unmap_allowed_) {
    cache_.reset();
    complete_kept(true);
    job_dir_.remove_all();
  }
  return result;
}

}  // namespace larder

namespace larder {

Status Session::close_mpi() {
  MpiJob& mpi = *mpi_;
  // Freeing windows and the transport is collective: a rank with a read still in flight keeps
  // them, so every rank does (the agreement makes the choice uniform).
  // Until every rank is here, others may still be reading and need this rank's answers.
  const bool all_drained =
      mpi.agree_while_serving(unmap_allowed_ ? Status()
                                             : Status(Errc::kUnavailable, 0, "reads in flight"))
          .ok();
  Status result;
  // Every rank has drained: what this rank placed goes to the kept store (its files moved, its
  // index written) before the stats are totalled, so kept.bytes_kept is in them.
  if (all_drained) keep_step();
  if (all_drained) count_unused_prefetch();
  stats_.final_sample();
  MpiJob::ReportParts parts;
  parts.start_unix_ns = recorder_.start_unix_ns();
  parts.end_unix_ns = unix_now_ns();
  parts.samples = recorder_.timeline().samples();
  parts.files = recorder_.files().lists();
  auto totals = mpi.reduce_stats(stats_.snapshot(), load_.get(), &parts);
  if (totals.ok() && totals->detail) {
    totals->detail->job = job_info(totals->detail->timeline.start_unix_ns, parts.end_unix_ns);
  }
  if (!totals.ok()) result = totals.status();
  // Windows go (collectively) before the arenas they expose are unmapped.
  Status closed = mpi.close(all_drained);
  if (result.ok()) result = closed;
  if (topology_.rank == 0 && totals.ok()) {
    if (!config_.stats_path.empty()) {
      if (Status s = write_stats_file(config_.stats_path, *totals); !s.ok()) {
        LARDER_LOG_ERROR("{}", s.message());
        if (result.ok()) result = s;
      }
    }
    if (log::enabled(log::Level::kWarn)) log::print_line(totals->summary_line());
  }
  if (!all_drained) return result;  // mappings and files stay; the next job removes the files
  // After mpi.close() every rank of the job has passed its final barrier: nobody reads our
  // arenas any more. Each rank removes its own files; the node leader removes the directory.
  cache_.reset();
  segments_.reset();
  tiers_ = LocalTiers();
  peers_.reset();
  // The leader of each node (emulated nodes too: each has a store of its own) completes it.
  const int node = topology_.node();
  complete_kept(topology_.leader_of(node) == topology_.rank);
  if (mpi.node_leader()) job_dir_.remove_all();
  return result;
}

}  // namespace larder
