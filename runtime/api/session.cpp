#include "runtime/api/session.hpp"

#include "mpi_transport/mpi_job.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/units.hpp"
#include "runtime/directory/local_directory.hpp"
#include "runtime/pfs/posix_file_system.hpp"

namespace larder {

Session::Session(Config config) : config_(std::move(config)) {}

Session::~Session() {
  if (!closed_) {
    // Not collective here: only a local session or an aborted init reaches this.
    job_dir_.remove_all();
  }
}

Status Session::build_local_tiers(std::uint64_t mem_share, std::uint64_t disk_share) {
  if (mem_share > 0) {
    auto arena = Arena::create(job_dir_.arena_path(topology_.rank, Tier::kMem), mem_share);
    if (!arena.ok()) return arena.status();
    tiers_.set(Tier::kMem, std::move(*arena));
  }
  if (disk_share > 0) {
    auto arena = Arena::create(job_dir_.arena_path(topology_.rank, Tier::kDisk), disk_share);
    if (!arena.ok()) return arena.status();
    tiers_.set(Tier::kDisk, std::move(*arena));
  }
  return {};
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
  parts.topology = topology_;
  cache_ = std::make_unique<Cache>(std::move(parts));
}

Result<std::unique_ptr<Session>> Session::create_local(Config config) {
  std::unique_ptr<Session> s(new Session(std::move(config)));
  const Config& c = s->config_;
  JobDir::clean_stale_jobs(c.shm_dir, c.local_dir, "");
  auto dir = JobDir::join(c.shm_dir, c.local_dir, JobDir::new_job_id(), c.disk_budget > 0);
  if (!dir.ok()) return dir.status();
  s->job_dir_ = std::move(*dir);
  if (Status st = s->build_local_tiers(c.mem_budget, c.disk_budget); !st.ok()) return st;
  s->pfs_ = std::make_unique<PosixFileSystem>(s->stats_);
  s->directory_ = std::make_unique<LocalDirectory>(c.dir_slots);
  s->directory_view_ = s->directory_.get();
  s->build_cache();
  LARDER_LOG_INFO("local cache started: memory {}, disk {}, chunk {}", format_size(c.mem_budget),
                  format_size(c.disk_budget), format_size(c.chunk_size));
  return s;
}

Result<std::unique_ptr<Session>> Session::create_mpi(Config config, std::unique_ptr<MpiJob> job) {
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
  s->peers_ = std::make_unique<PeerArenas>(
      [d = &s->job_dir_](int r, Tier tier) { return d->arena_path(r, tier); });
  if (Status st = mpi.agree(mpi.start(c, s->tiers_)); !st.ok()) {
    (void)mpi.close();
    return st;
  }
  s->directory_view_ = mpi.directory();
  s->transport_view_ = mpi.transport();
  s->progress_view_ = mpi.progress();
  s->build_cache();
  if (rank == 0) {
    LARDER_LOG_INFO("started over {} ranks on {} nodes: memory {} per node, chunk {}, transport {}",
                    s->topology_.size, s->topology_.node_count(), format_size(c.mem_budget),
                    format_size(c.chunk_size), s->transport_view_->name());
  }
  return s;
}

namespace {
Status closed_session() {
  return Status(Errc::kUnavailable, 0, "the larder session is closed");
}
}  // namespace

Result<PathRecord> Session::lookup(const std::string& path) {
  if (closed_) return closed_session();
  return cache_->lookup(path);
}

Result<PathRecord> Session::lookup_link(const std::string& path) {
  if (closed_) return closed_session();
  return cache_->lookup_link(path);
}

Result<std::shared_ptr<const Listing>> Session::list(const std::string& path) {
  if (closed_) return closed_session();
  return cache_->list(path);
}

Result<std::size_t> Session::read(const CachedFile& file, std::span<std::byte> into,
                                  std::uint64_t offset) {
  if (closed_) return closed_session();
  return cache_->read(file, into, offset);
}

Result<StageTotals> Session::stage(std::span<const std::string> roots) {
  if (closed_) return closed_session();
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

Status Session::close() {
  if (closed_) return {};
  closed_ = true;
  if (mpi_) return close_mpi();
  StatsSnapshot totals = stats_.snapshot();
  totals.ranks = topology_.size;
  Status result;
  if (!config_.stats_path.empty()) result = write_stats_file(config_.stats_path, totals);
  if (topology_.rank == 0 && log::enabled(log::Level::kWarn))
    log::print_line(totals.summary_line());
  cache_.reset();
  job_dir_.remove_all();
  return result;
}

}  // namespace larder

namespace larder {

Status Session::close_mpi() {
  MpiJob& mpi = *mpi_;
  mpi.stop_mpi_polling();  // from here on only this thread calls MPI
  Status result;
  auto totals = mpi.reduce_stats(stats_.snapshot());
  if (!totals.ok()) result = totals.status();
  // Windows go (collectively) before the arenas they expose are unmapped.
  Status closed = mpi.close();
  if (result.ok()) result = closed;
  cache_.reset();
  if (topology_.rank == 0 && totals.ok()) {
    if (!config_.stats_path.empty()) {
      if (Status s = write_stats_file(config_.stats_path, *totals); !s.ok()) {
        LARDER_LOG_ERROR("{}", s.message());
        if (result.ok()) result = s;
      }
    }
    if (log::enabled(log::Level::kWarn)) log::print_line(totals->summary_line());
  }
  // After mpi.close() every rank of the job has passed its final barrier: nobody reads our
  // arenas any more. Each rank removes its own files; the node leader removes the directory.
  tiers_ = LocalTiers();
  peers_.reset();
  if (mpi.node_leader()) {
    job_dir_.remove_all();
  }
  return result;
}

}  // namespace larder
