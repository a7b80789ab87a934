// MpiJob: the collective side of a Larder session over MPI.
//
// Owns a private duplicate of the application's communicator (Larder's traffic never mixes
// with the application's), the topology (real nodes from MPI_Comm_split_type, or emulated ones
// from LARDER_NODE_SIZE), the window directory, the data transport and the progress thread.
// Everything here is collective unless said otherwise.
#ifndef LARDER_MPI_TRANSPORT_MPI_JOB_HPP_
#define LARDER_MPI_TRANSPORT_MPI_JOB_HPP_

#include <mpi.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/config/config.hpp"
#include "runtime/directory/directory.hpp"
#include "runtime/stats/peer_load.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/messenger.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "runtime/transport/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

class MpiJob {
 public:
  // Agrees collectively that every rank could start (`local` is this rank's verdict): returns
  // OK on all ranks, or on all ranks an error (this rank's own, or "rank R failed: ...").
  static Status agree(MPI_Comm comm, const Status& local);

  static Result<std::unique_ptr<MpiJob>> create(MPI_Comm comm, const Config& config);
  // Collective over `comm`: which node each rank is on, `node_comm` being this rank's node
  // (MPI_Comm_split_type's shared-memory split in create; any split in tests). Equal blocks and
  // round robin are found by three allreduces and hold nothing per rank; other placements, by a
  // gather of every rank's node leader into a table of 4 bytes per rank.
  static Result<Topology> place_ranks(MPI_Comm comm, MPI_Comm node_comm);
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;
  ~MpiJob();

  const Topology& topology() const noexcept { return topology_; }
  const std::string& job_id() const noexcept { return job_id_; }
  // The first rank of this rank's physical node (removes node files, cleans stale jobs).
  bool node_leader() const noexcept { return node_rank_ == 0; }
  // Ranks sharing this rank's budget: its emulated node, or its physical node.
  int ranks_sharing_budget() const noexcept;

  Status barrier();
  // Sums `values` over all ranks, in place, on every rank.
  Status sum(std::span<std::uint64_t> values);
  Status agree(const Status& local) { return agree(comm_, local); }
  // agree() at the end of the job, on the closing thread, once the progress thread no longer
  // calls MPI (stop_mpi_polling): a non-blocking allreduce, and Larder's messages are received
  // and answered while it is incomplete. A rank that finishes first must still answer the others'
  // requests (a wait registered with it, a watch of a key it homes) until every rank has stopped
  // reading; a blocking allreduce there left them waiting until LARDER_TIMEOUT.
  Status agree_while_serving(const Status& local);
  // What a rank adds to the job report (stats.hpp): its timeline's samples and file lists.
  struct ReportParts {
    std::int64_t start_unix_ns = 0;
    std::int64_t end_unix_ns = 0;
    std::vector<TimelineSample> samples;
    FileLists files{};
  };
  // Sums the snapshots of all ranks, with the per-rank distributions of the load (skew, from
  // `load` and each rank's own counters) and, given `parts`, the job's timeline and file lists
  // (detail: every rank moves a fixed amount, whatever the job's size); meaningful on rank 0.
  // What every rank asked of this one (bytes served, directory operations received), summed
  // here: a sparse exchange, one message per pair of ranks that met (NBX).
  Status exchange_load(const PeerLoad* load, std::uint64_t carried[2]);
  Result<StatsSnapshot> reduce_stats(const StatsSnapshot& mine, const PeerLoad* load,
                                     const ReportParts* parts = nullptr);
  // The MPI library's version (its first line).
  static std::string library_version();

  // Builds the messenger, the directory, the data transport over `tiers` and starts the progress
  // thread. `load` (may be null) counts what this rank asks of each other rank.
  // `ucx_dead_peer` (tests only, seams.hpp): this rank's UCX endpoint to that rank is dead.
  // `book_dir`: a directory of this host's shared memory for UCX's address books (the job's).
  Status start(const Config& config, const LocalTiers& tiers, PeerLoad* load,
               const std::string& book_dir, int ucx_dead_peer = -1);
  Directory* directory() const noexcept;
  // How the directory reaches other ranks' shards: "messages" (MessageShards, over UCX or MPI)
  // or "rma" (UCX remote memory or MPI windows); "none" before start().
  const char* directory_ops() const noexcept;
  Transport* transport() const noexcept;
  ProgressThread* progress() const noexcept;
  Messenger* messenger() const noexcept;

  // Stops the progress thread's MPI polling (its UCX progress goes on). Teardown calls it before
  // its first collective: larder_finalize may run inside MPI_Finalize (from an MPI_COMM_SELF
  // attribute callback, as the HDF5 connector does), where MPICH no longer serialises threads.
  void stop_mpi_polling() noexcept;
  // One poke of MPI's progress engine on Larder's communicator (what the progress thread does).
  void poll() noexcept;

  // Collective. Stops progress and, when `free_resources`, frees the transport, windows and
  // communicators (every rank passes the same value: freeing is collective). Without it they
  // stay allocated until the process ends: a read still in flight may be using them.
  Status close(bool free_resources = true);

 private:
  Status reduce_detail(const ReportParts& parts, JobDetail& detail);
  MpiJob();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Topology topology_;
  std::string job_id_;
  int node_rank_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;  // owned by impl_
};

}  // namespace larder

#endif  // LARDER_MPI_TRANSPORT_MPI_JOB_HPP_
