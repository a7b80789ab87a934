#include "mpi_transport/mpi_job.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "mpi_transport/comm.hpp"
#include "mpi_transport/mpi_messenger.hpp"
#include "mpi_transport/mpi_status.hpp"
#include "mpi_transport/rma_transport.hpp"
#include "mpi_transport/spread_reduce.hpp"
#include "mpi_transport/window_shards.hpp"
#include "runtime/common/log.hpp"
#include "runtime/directory/message_shards.hpp"
#include "runtime/directory/sharded_directory.hpp"
#include "runtime/tier/job_dir.hpp"
#include "ucx_transport/ucx_factory.hpp"

namespace larder {

// Whether the progress thread may call MPI; the mutex makes stop_mpi_polling wait for a poll
// under way.
struct MpiPolling {
  std::mutex mu;
  bool on = true;  // guarded by mu
};

struct MpiJob::Impl {
  std::shared_ptr<MpiPolling> polling = std::make_shared<MpiPolling>();
  mpi::Comm comm;
  mpi::Comm node_comm;
  std::unique_ptr<mpi::MpiMessenger> messenger;   // the MPI path only
  std::unique_ptr<mpi::WindowShards> shards;      // the MPI path, one-sided directory
  std::unique_ptr<MessageShards> message_shards;  // the MPI path, directory as messages
  std::unique_ptr<ShardedDirectory> directory;
  std::unique_ptr<mpi::RmaTransport> rma;
  std::unique_ptr<ClosableTransport> ucx;
  std::unique_ptr<ProgressThread> progress;
};

MpiJob::MpiJob() : impl_(std::make_unique<Impl>()) {}
MpiJob::~MpiJob() = default;

namespace {

// How long the progress thread polls hot after it served another rank's request
// (ProgressThread): a lone reader's next request arrives well within it.
constexpr auto kHotWindow = std::chrono::microseconds(2000);

// The outcome of an agreement: `first` is the lowest failing rank (INT32_MAX: none failed).
Status verdict(int first, const Status& local, const char* step) {
  if (first == INT32_MAX) return {};
  if (!local.ok()) return local;
  return {Errc::kUnavailable, 0,
          "rank " + std::to_string(first) + " could not " + step + " larder"};
}

// The first rank of every node, ascending, on every rank: an MPI_Allgather among the nodes' first
// ranks (`leader`), then an MPI_Bcast of the count and of the list on each node. Collective over
// `comm` and `node_comm`; every rank takes every step, whatever failed before it.
Result<std::vector<int>> node_starts(MPI_Comm comm, MPI_Comm node_comm, bool leader) {
  Status first;
  auto keep = [&first](Status st) {
    if (first.ok() && !st.ok()) first = std::move(st);
  };
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm leaders = MPI_COMM_NULL;
  keep(mpi::from_mpi(MPI_Comm_split(comm, leader ? 0 : MPI_UNDEFINED, rank, &leaders),
                     "MPI_Comm_split"));
  std::vector<int> starts;
  int count = 0;
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_size(leaders, &count);
    starts.resize(static_cast<std::size_t>(count));
    keep(mpi::from_mpi(MPI_Allgather(&rank, 1, MPI_INT, starts.data(), 1, MPI_INT, leaders),
                       "MPI_Allgather"));
    keep(mpi::from_mpi(MPI_Comm_free(&leaders), "MPI_Comm_free"));
  }
  keep(mpi::from_mpi(MPI_Bcast(&count, 1, MPI_INT, 0, node_comm), "MPI_Bcast"));
  starts.resize(static_cast<std::size_t>(std::max(count, 0)));
  keep(mpi::from_mpi(MPI_Bcast(starts.data(), count, MPI_INT, 0, node_comm), "MPI_Bcast"));
  if (!first.ok()) return first;
  if (count <= 0 || !std::is_sorted(starts.begin(), starts.end()) || starts.front() != 0) {
    return Status(Errc::kInternal, 0, "the nodes' first ranks are not a placement");
  }
  return starts;
}

}  // namespace

Status MpiJob::agree(MPI_Comm comm, const Status& local) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // The lowest failing rank, or INT_MAX when all succeeded.
  const int mine = local.ok() ? INT32_MAX : rank;
  int first = INT32_MAX;
  if (Status s =
          mpi::from_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
      !s.ok()) {
    return s;
  }
  return verdict(first, local, "start");
}

Status MpiJob::agree_while_serving(const Status& local) {
  const int mine = local.ok() ? INT32_MAX : topology_.rank;
  int first = INT32_MAX;
  MPI_Request request = MPI_REQUEST_NULL;
  if (Status s = mpi::from_mpi(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_, &request),
                               "MPI_Iallreduce");
      !s.ok()) {
    return s;
  }
  for (;;) {
    int done = 0;
    if (Status s = mpi::from_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
        !s.ok()) {
      return s;
    }
    if (done != 0) break;
    // Answers other ranks' requests (MPI transport; with UCX the progress thread still does).
    if (impl_->messenger == nullptr || !impl_->messenger->poll()) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // pacing, not ordering
    }
  }
  return verdict(first, local, "close");
}

Result<Topology> MpiJob::place_ranks(MPI_Comm comm, MPI_Comm node_comm) {
  Topology t;
  MPI_Comm_rank(comm, &t.rank);
  MPI_Comm_size(comm, &t.size);
  int node_size = 1;
  MPI_Comm_size(node_comm, &node_size);
  // Placed in equal blocks (every node's ranks consecutive, every node but the last `ppn` of
  // them), a node is rank / ppn; dealt round robin over N nodes (Slurm's cyclic distribution,
  // `mpiexec --map-by node`), a node is rank % N. Either is found with one allreduce on the node
  // and two on the job, each carrying its agreement, and nothing held per rank. Any other
  // placement: every rank's node leader gathered (4 bytes per rank, to every rank).
  int ends[2] = {t.rank, -t.rank};  // -> the node's lowest rank, minus its highest
  const Status on_node = mpi::from_mpi(
      MPI_Allreduce(MPI_IN_PLACE, ends, 2, MPI_INT, MPI_MIN, node_comm), "MPI_Allreduce");
  const int first = ends[0];
  const int last = -ends[1];
  // The largest and smallest node sizes, the lowest rank whose step failed (as -rank), and the
  // largest lowest rank of a node (round robin over N nodes: N - 1).
  int sizes[4] = {node_size, -node_size, on_node.ok() ? INT32_MIN : -t.rank, first};
  if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, sizes, 4, MPI_INT, MPI_MAX, comm),
                               "MPI_Allreduce");
      !s.ok()) {
    return s;
  }
  if (Status s = verdict(sizes[2] == INT32_MIN ? INT32_MAX : -sizes[2], on_node, "start");
      !s.ok()) {
    return s;
  }
  const int ppn = sizes[0];
  const int nodes = sizes[3] + 1;  // if dealt round robin
  // Whether every node is one block of ppn ranks (the last may be shorter), whether every node
  // holds the ranks r with r % nodes == its lowest rank, and only those, and whether every node's
  // ranks are consecutive.
  int placed[3] = {
      last - first + 1 == node_size && first % ppn == 0 && (node_size == ppn || last == t.size - 1)
          ? 1
          : 0,
      first < nodes && t.rank % nodes == first &&
              node_size == (t.size - first + nodes - 1) / nodes &&
              last == first + (node_size - 1) * nodes
          ? 1
          : 0,
      last - first + 1 == node_size ? 1 : 0};
  if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, placed, 3, MPI_INT, MPI_MIN, comm),
                               "MPI_Allreduce");
      !s.ok()) {
    return s;
  }
  if (placed[0] == 1) {
    t.block = ppn;
    return t;
  }
  if (placed[1] == 1) {
    t.block = 0;
    t.cyclic = nodes;
    return t;
  }
  if (placed[2] == 1) {
    // Consecutive ranks, nodes of different sizes: each node's first rank, gathered among the
    // nodes' first ranks and passed on to their nodes (4 bytes a node to every rank).
    auto starts = node_starts(comm, node_comm, t.rank == first);
    if (Status s = agree(comm, starts.status()); !s.ok()) return s;
    t.block = 0;
    t.starts = std::move(*starts);
    return t;
  }
  if (t.rank == 0) {
    LARDER_LOG_INFO(
        "ranks are placed on nodes neither in consecutive blocks nor round robin: every rank "
        "holds a table of every rank's node ({} bytes)",
        4 * t.size);
  }
  std::vector<int> leaders(static_cast<std::size_t>(t.size));
  const Status gathered = mpi::from_mpi(
      MPI_Allgather(&first, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm), "MPI_Allgather");
  if (Status s = agree(comm, gathered); !s.ok()) return s;
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  t.block = 0;
  t.table.resize(static_cast<std::size_t>(t.size));
  for (std::size_t r = 0; r < leaders.size(); ++r) {
    t.table[r] = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), leaders[r]) -
                                  distinct.begin());
  }
  return t;
}

Result<std::unique_ptr<MpiJob>> MpiJob::create(MPI_Comm parent, const Config& config) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  int parent_size = 1;
  MPI_Comm_size(parent, &parent_size);
  Status thread_ok;
  if (provided < MPI_THREAD_MULTIPLE) {
    thread_ok =
        Status(Errc::kInvalidArgument, EINVAL,
               "MPI was initialized without MPI_THREAD_MULTIPLE; larder needs it for its "
               "progress thread (use MPI_Init_thread, or let larder's MPI_Init hook ask for it)");
  }

  // Every rank takes every collective step and then agrees (one allreduce on the parent, or a
  // word of the step's own allreduce) on whether all ranks succeeded: a step that failed on one
  // rank makes every rank return the same error here, instead of leaving the others waiting in
  // the next collective. Steps that cannot leave ranks apart share one agreement.
  std::unique_ptr<MpiJob> job(new MpiJob());
  auto comm = mpi::Comm::dup(parent);
  if (Status s = agree(parent, !thread_ok.ok() ? thread_ok : comm.status()); !s.ok()) return s;
  job->impl_->comm = std::move(*comm);
  job->comm_ = job->impl_->comm.get();
  Status made = mpi::from_mpi(MPI_Comm_set_errhandler(job->comm_, MPI_ERRORS_RETURN),
                              "MPI_Comm_set_errhandler");
  auto node = mpi::Comm::split_shared(job->comm_);
  if (made.ok()) made = node.status();
  if (Status s = agree(parent, made); !s.ok()) return s;
  job->impl_->node_comm = std::move(*node);
  job->node_rank_ = job->impl_->node_comm.rank();

  auto placed = place_ranks(job->comm_, job->impl_->node_comm.get());
  if (!placed.ok()) return placed.status();
  job->topology_ = std::move(*placed);
  Topology& t = job->topology_;
  // Locality for the read path: real nodes, or emulated ones (consecutive groups of ranks).
  if (config.node_size > 0) {
    t.block = config.node_size;
    t.cyclic = 0;
    t.starts.clear();
    t.starts.shrink_to_fit();
    t.table.clear();
    t.table.shrink_to_fit();
  }

  char id[17] = {};
  if (t.rank == 0) std::snprintf(id, sizeof id, "%s", JobDir::new_job_id().c_str());
  const Status told = mpi::from_mpi(MPI_Bcast(id, sizeof id, MPI_CHAR, 0, job->comm_), "MPI_Bcast");
  if (Status s = agree(parent, told); !s.ok()) return s;
  job->job_id_ = id;
  log::set_rank(t.rank);
  return job;
}

int MpiJob::ranks_sharing_budget() const noexcept {
  return std::max(1, topology_.ranks_on_node(topology_.node()));
}

Status MpiJob::barrier() {
  return mpi::from_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

Status MpiJob::sum(std::span<std::uint64_t> values) {
  return mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                                     MPI_UINT64_T, MPI_SUM, comm_),
                       "MPI_Allreduce");
}

namespace {

// MPI_Op over FileLists blocks (MPI_BYTE of sizeof(FileLists) each): merge_file_lists.
void merge_lists_op(void* in, void* inout, int* len, MPI_Datatype* /*type*/) {
  auto* from = static_cast<const FileLists*>(in);
  auto* into = static_cast<FileLists*>(inout);
  for (int i = 0; i < *len; ++i) merge_file_lists(into[i], from[i]);
}

}  // namespace

std::string MpiJob::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string version(text, static_cast<std::size_t>(std::max(length, 0)));
  if (const auto eol = version.find('\n'); eol != std::string::npos) version.resize(eol);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0')) version.pop_back();
  return version;
}

Status MpiJob::reduce_detail(const ReportParts& parts, JobDetail& detail) {
  // The grid every rank shares: from the earliest start to the latest end.
  std::int64_t bounds[2] = {parts.start_unix_ns, -parts.end_unix_ns};
  if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_INT64_T, MPI_MIN, comm_),
                               "MPI_Allreduce");
      !s.ok()) {
    return s;
  }
  JobTimeline grid = timeline_grid(bounds[0], -bounds[1]);
  add_samples(parts.samples, grid);
  std::vector<std::uint64_t> amounts(topology_.rank == 0 ? grid.amounts.size() : 0);
  if (Status s = mpi::from_mpi(
          MPI_Reduce(grid.amounts.data(), amounts.data(), static_cast<int>(grid.amounts.size()),
                     MPI_UINT64_T, MPI_SUM, 0, comm_),
          "MPI_Reduce");
      !s.ok()) {
    return s;
  }
  grid.amounts = std::move(amounts);
  detail.timeline = std::move(grid);
  MPI_Datatype block = MPI_DATATYPE_NULL;
  MPI_Op merge = MPI_OP_NULL;
  Status s = mpi::from_mpi(MPI_Type_contiguous(sizeof(FileLists), MPI_BYTE, &block),
                           "MPI_Type_contiguous");
  if (s.ok()) s = mpi::from_mpi(MPI_Type_commit(&block), "MPI_Type_commit");
  if (s.ok()) s = mpi::from_mpi(MPI_Op_create(&merge_lists_op, 1, &merge), "MPI_Op_create");
  if (s.ok()) {
    s = mpi::from_mpi(MPI_Reduce(&parts.files, &detail.files, 1, block, merge, 0, comm_),
                      "MPI_Reduce");
  }
  if (merge != MPI_OP_NULL) MPI_Op_free(&merge);
  if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
  return s;
}

// Each rank sends each rank it asked what it asked (nonblocking synchronous sends), receives
// whatever arrives, and joins a nonblocking barrier once its own sends are matched; the barrier
// completes when every send in the job was received (Hoefler, Siebert and Lumsdaine's NBX). A
// rank exchanges one message per rank it asked and per rank that asked it, never one per rank.
Status MpiJob::exchange_load(const PeerLoad* load, std::uint64_t carried[2]) {
  constexpr int kTag = 0x4c4c;  // Larder's own communicator: no application message has it
  const std::vector<PeerLoad::Entry> entries =
      load != nullptr ? load->entries() : std::vector<PeerLoad::Entry>{};
  std::vector<std::array<std::uint64_t, 2>> out;
  out.reserve(entries.size());
  std::vector<MPI_Request> sends;
  sends.reserve(entries.size());
  for (const PeerLoad::Entry& e : entries) {
    if (e.target == topology_.rank) {
      carried[0] += e.bytes;
      carried[1] += e.ops;
      continue;
    }
    out.push_back({e.bytes, e.ops});
    sends.push_back(MPI_REQUEST_NULL);
    if (Status s = mpi::from_mpi(
            MPI_Issend(out.back().data(), 2, MPI_UINT64_T, e.target, kTag, comm_, &sends.back()),
            "MPI_Issend");
        !s.ok()) {
      return s;
    }
  }
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool barrier_started = false;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    if (Status s =
            mpi::from_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_, &arrived, &status), "MPI_Iprobe");
        !s.ok()) {
      return s;
    }
    if (arrived != 0) {
      std::uint64_t in[2] = {0, 0};
      if (Status s = mpi::from_mpi(
              MPI_Recv(in, 2, MPI_UINT64_T, status.MPI_SOURCE, kTag, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
          !s.ok()) {
        return s;
      }
      carried[0] += in[0];
      carried[1] += in[1];
      continue;
    }
    int done = 0;
    if (!barrier_started) {
      if (Status s = mpi::from_mpi(
              MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
          !s.ok()) {
        return s;
      }
      if (done != 0) {
        if (Status s = mpi::from_mpi(MPI_Ibarrier(comm_, &barrier), "MPI_Ibarrier"); !s.ok()) {
          return s;
        }
        barrier_started = true;
      }
    } else {
      if (Status s = mpi::from_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test");
          !s.ok()) {
        return s;
      }
      if (done != 0) return {};
    }
    std::this_thread::yield();  // ranks of a node share its cores with the readers still ending
  }
}

Result<StatsSnapshot> MpiJob::reduce_stats(const StatsSnapshot& mine, const PeerLoad* load,
                                           const ReportParts* parts) {
  std::vector<std::uint64_t> send;
  send.insert(send.end(), mine.counters.begin(), mine.counters.end());
  // The messages this rank sent (counted by the transports, not by the cache).
  send[static_cast<std::size_t>(Counter::transport_messages)] +=
      impl_->ucx ? impl_->ucx->messages_sent()
                 : (impl_->messenger ? impl_->messenger->messages_sent() : 0);
  // The directory's growth (counted by the directory, not by the cache).
  if (impl_->directory) {
    send[static_cast<std::size_t>(Counter::directory_overflow_entries)] +=
        impl_->directory->overflow_entries();
    send[static_cast<std::size_t>(Counter::directory_overflow_requests)] +=
        impl_->directory->overflow_requests();
    send[static_cast<std::size_t>(Counter::directory_refused)] += impl_->directory->refused();
  }
  send.insert(send.end(), mine.latency.begin(), mine.latency.end());
  send.push_back(mine.latency_sum_ns);
  std::vector<std::uint64_t> sum(send.size());
  if (Status s = mpi::from_mpi(MPI_Reduce(send.data(), sum.data(), static_cast<int>(send.size()),
                                          MPI_UINT64_T, MPI_SUM, 0, comm_),
                               "MPI_Reduce");
      !s.ok()) {
    return s;
  }
  std::uint64_t max = 0;
  if (Status s = mpi::from_mpi(
          MPI_Reduce(&mine.latency_max_ns, &max, 1, MPI_UINT64_T, MPI_MAX, 0, comm_), "MPI_Reduce");
      !s.ok()) {
    return s;
  }
  StatsSnapshot total;
  std::size_t i = 0;
  for (auto& c : total.counters) c = sum[i++];
  for (auto& b : total.latency) b = sum[i++];
  total.latency_sum_ns = sum[i];
  total.latency_max_ns = max;
  total.ranks = topology_.size;

  // The load each rank carried: what every rank asked of it, summed at the rank asked (one
  // message from each asker, nothing between ranks that never met); then its spread over the
  // ranks and nodes by reductions (no rank holds a row per rank: spread_reduce.hpp).
  std::uint64_t carried[2] = {0, 0};  // bytes served, directory operations received
  if (Status s = exchange_load(load, carried); !s.ok()) return s;
  const std::uint64_t own[4] = {carried[0], carried[1], mine.get(Counter::transport_gets),
                                mine.get(Counter::wait_ns)};
  const SpreadPlace place{comm_, impl_->node_comm.get(), &topology_};
  auto spreads = reduce_spreads(place, own);
  if (!spreads.ok()) return spreads.status();
  if (topology_.rank == 0) {
    Skew skew;
    skew.bytes_served = (*spreads)[0];
    skew.directory_ops_received = (*spreads)[1];
    skew.remote_fetches = (*spreads)[2];
    skew.wait_ns = (*spreads)[3];
    total.skew = skew;
  }
  if (parts != nullptr) {
    auto detail = std::make_shared<JobDetail>();
    if (Status s = reduce_detail(*parts, *detail); !s.ok()) return s;
    if (topology_.rank == 0) total.detail = std::move(detail);
  }
  return total;
}

Status MpiJob::start(const Config& config, const LocalTiers& tiers, PeerLoad* load,
                     const std::string& book_dir, int ucx_dead_peer) {
  const std::size_t shard_bytes = ShardedDirectory::shard_bytes(config.dir_slots);
  if (config.transport == TransportKind::kUcx) {
    UcxOptions options;
    options.timeout = config.wait_timeout;
    options.fault_peer = ucx_dead_peer;
    options.directory_ops = config.directory_ops;
    options.remote_reads = config.remote_reads;
    options.book_dir = book_dir;
    auto ucx = make_ucx_transport(comm_, tiers, options, shard_bytes);
    // A rank whose UCX could not start makes every rank use MPI, so the choice is uniform.
    Status agreed = agree(ucx.ok() ? Status() : ucx.status());
    if (agreed.ok()) {
      impl_->ucx = std::move(*ucx);
    } else {
      if (ucx.ok()) (void)(*ucx)->close();
      if (topology_.rank == 0) {
        LARDER_LOG_WARN("the ucx transport could not start ({}); using mpi", agreed.message());
      }
    }
  }
  // Every collective step is taken by every rank, whatever failed before it here; the caller
  // agrees on the outcome (so no rank leaves another waiting in a collective).
  Status first;
  auto keep = [&first](Status st) {
    if (first.ok() && !st.ok()) first = std::move(st);
  };
  ShardOps* shards = nullptr;
  Messenger* messenger = nullptr;
  if (impl_->ucx) {
    // Directory and messages on Larder's own UCX worker: served by the target's progress thread
    // as soon as they arrive (it sleeps on the worker's event fd), and no MPI call after this.
    shards = impl_->ucx->shards();
    messenger = impl_->ucx->messenger();
  } else {
    auto m = mpi::MpiMessenger::create(comm_);
    if (m.ok()) impl_->messenger = std::move(*m);
    keep(m.status());
    // The directory as one-sided MPI operations only if every rank asks for them
    // (LARDER_DIRECTORY_OPS=rma): MPI cannot tell whether its atomics are done by the network
    // adapter, and where they are not (MPICH and Open MPI over UCX without RDMA, over TCP, over
    // shared memory on one host) each one waits for the target's progress thread, while the
    // origin spins in MPI_Win_flush. Messages batch a flush's operations into one message per home
    // and the waiting thread sleeps (docs/protocol.md, "The directory over MPI").
    int rma_asked = config.directory_ops == DirectoryOps::kRma ? 1 : 0;
    int rma_everywhere = 0;  // collective on every rank, whatever failed above
    keep(mpi::from_mpi(MPI_Allreduce(&rma_asked, &rma_everywhere, 1, MPI_INT, MPI_MIN, comm_),
                       "MPI_Allreduce"));
    if (rma_everywhere == 1) {
      auto w = mpi::WindowShards::create(comm_, shard_bytes);
      if (w.ok()) impl_->shards = std::move(*w);
      keep(w.status());
    } else if (impl_->messenger) {
      // A home that does not answer within the timeout fails the flush (the reader reads the
      // PFS); MPI reports no failed peers, so there is nothing to ask or give up.
      impl_->message_shards =
          std::make_unique<MessageShards>(topology_.rank, topology_.size, shard_bytes,
                                          *impl_->messenger, config.wait_timeout, nullptr, nullptr);
    }
    auto rma = mpi::RmaTransport::create(comm_, tiers, impl_->messenger.get(), config.wait_timeout);
    if (rma.ok()) impl_->rma = std::move(*rma);
    keep(rma.status());
    shards = impl_->shards ? static_cast<ShardOps*>(impl_->shards.get())
                           : static_cast<ShardOps*>(impl_->message_shards.get());
    messenger = impl_->messenger.get();
  }
  if (!first.ok()) return first;
  if (shards == nullptr || messenger == nullptr) {
    return {Errc::kInternal, 0, "no directory shards or messenger"};
  }
  ShardedDirectory::Options options;
  // The overflow holds what LARDER_DIR_ENTRIES allows beyond the shard's slots.
  options.overflow_entries =
      config.dir_entries > config.dir_slots ? config.dir_entries - config.dir_slots : 0;
  options.timeout = config.wait_timeout;
  impl_->directory =
      std::make_unique<ShardedDirectory>(*shards, config.dir_slots, *messenger, load, options);
  // No eager timed polling (busy = idle): every wake-up is a context switch on cores the ranks
  // share, and a waiting thread polls for its own answers (MessageShards, RmaTransport); what
  // answers others promptly is hot polling after work (docs/transports.md, "Waiting without an
  // event to sleep on").
  impl_->progress = std::make_unique<ProgressThread>(std::chrono::microseconds(1000),
                                                     std::chrono::microseconds(1000), kHotWindow);
  if (impl_->messenger) {
    // A rank that sends a request waits for its answer: its progress thread polls eagerly from
    // now on (MPI gives no descriptor to sleep on), beside the waiting thread's own polls.
    impl_->messenger->on_send([p = impl_->progress.get()] { p->notify_activity(); });
    ProgressSource mpi_source;
    mpi_source.progress = [m = impl_->messenger.get(), polling = impl_->polling] {
      std::lock_guard lock(polling->mu);
      if (!polling->on) return false;
      // MPI has no event descriptor: poking its progress engine (here, by looking for
      // messages) is the only way; one-sided operations that target this rank complete meanwhile.
      return m->poll();
    };
    mpi_source.driven_elsewhere = [m = impl_->messenger.get()] { return m->driven_by_waiters(); };
    impl_->progress->add(std::move(mpi_source));
  }
  if (impl_->ucx) {
    for (ProgressSource& source : impl_->ucx->progress_sources())
      impl_->progress->add(std::move(source));
  }
  impl_->progress->start();
  return {};
}

void MpiJob::stop_mpi_polling() noexcept {
  std::lock_guard lock(impl_->polling->mu);
  impl_->polling->on = false;
}

void MpiJob::poll() noexcept {
  if (impl_->messenger) {
    (void)impl_->messenger->poll();
    return;
  }
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

Messenger* MpiJob::messenger() const noexcept {
  if (impl_->ucx) return impl_->ucx->messenger();
  return impl_->messenger.get();
}

Directory* MpiJob::directory() const noexcept {
  return impl_->directory.get();
}

const char* MpiJob::directory_ops() const noexcept {
  if (impl_->message_shards) return "messages";
  if (impl_->shards) return "rma";
  if (impl_->ucx && impl_->ucx->shards() != nullptr) {
    return dynamic_cast<const MessageShards*>(impl_->ucx->shards()) != nullptr ? "messages" : "rma";
  }
  return "none";
}

Transport* MpiJob::transport() const noexcept {
  if (impl_->ucx) return impl_->ucx.get();
  return impl_->rma.get();
}

ProgressThread* MpiJob::progress() const noexcept {
  return impl_->progress.get();
}

Status MpiJob::close(bool free_resources) {
  Status first;
  auto keep = [&first](Status s) {
    if (first.ok() && !s.ok()) first = std::move(s);
  };
  // Every rank has finished reading before any window goes away.
  keep(barrier());
  if (impl_->messenger) impl_->messenger->on_send(nullptr);  // no read sends after the barrier
  if (impl_->progress) impl_->progress->stop();
  if (!free_resources) {
    // Leaked on purpose (see the header); the owners must not free them later either.
    (void)impl_->ucx.release();
    (void)impl_->rma.release();
    (void)impl_->directory.release();
    (void)impl_->shards.release();
    (void)impl_->message_shards.release();
    if (impl_->messenger) impl_->messenger->leak();
    (void)impl_->messenger.release();
    impl_->comm.leak();
    impl_->node_comm.leak();
    comm_ = MPI_COMM_NULL;
    return first;
  }
  impl_->directory.reset();
  impl_->message_shards.reset();
  if (impl_->ucx) keep(impl_->ucx->close());
  if (impl_->rma) keep(impl_->rma->close());
  if (impl_->shards) keep(impl_->shards->close());
  if (impl_->messenger) keep(impl_->messenger->close());
  keep(impl_->node_comm.close());
  keep(impl_->comm.close());
  comm_ = MPI_COMM_NULL;
  return first;
}

}  // namespace larder
