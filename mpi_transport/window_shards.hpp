// WindowShards: the directory's shards in an MPI one-sided window (ShardOps over MPI RMA).
//
// Each rank allocates its shard with MPI_Win_allocate (displacement unit 1), zeroed, kept in a
// passive-target epoch (MPI_Win_lock_all) for the whole job. Atomic words use
// MPI_Compare_and_swap, MPI_Fetch_and_op and MPI_Accumulate(MPI_REPLACE); bytes MPI_Get and
// MPI_Put; a flush is MPI_Win_flush (all of this process's operations to that target).
// MPICH serves these in software at the target: the target's progress thread must poll MPI.
//
// flush_all() is MPI_Win_flush to each target this thread issued operations to since its last
// flush, never MPI_Win_flush_all: with MPICH's ch4:ucx (4.0) MPI_Win_flush_all completes gets and
// puts with ucp_worker_flush, which UCX (1.13) declares done while an operation still waits in an
// endpoint's pending queue (a connection busy with a remote read), so the put's bytes were read
// after the caller had freed them and the get's after it had used them (docs/protocol.md).
// MPI_Win_flush flushes the endpoint, which waits behind its pending queue.
#ifndef LARDER_MPI_TRANSPORT_WINDOW_SHARDS_HPP_
#define LARDER_MPI_TRANSPORT_WINDOW_SHARDS_HPP_

#include <mpi.h>

#include <memory>

#include "mpi_transport/window.hpp"
#include "runtime/directory/shard_ops.hpp"

namespace larder::mpi {

class WindowShards final : public ShardOps {
 public:
  // Collective over `comm` (which must outlive the shards): `bytes` zeroed bytes per rank.
  static Result<std::unique_ptr<WindowShards>> create(MPI_Comm comm, std::size_t bytes);

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  Status compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                          const std::uint64_t* expected, std::uint64_t* old) override;
  Status fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                   std::uint64_t* old) override;
  Status store(int target, std::uint64_t disp, const std::uint64_t* value) override;
  Status get(int target, std::uint64_t disp, void* into, std::size_t bytes) override;
  Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) override;
  Status flush(int target) override;
  Status flush_all() override;

  Status close();  // collective

 private:
  // Records that this thread has an operation to `target` for the next flush.
  void touch(int target);
  WindowShards(Window window, int rank, int size)
      : window_(std::move(window)), rank_(rank), size_(size) {}
  Window window_;
  int rank_;
  int size_;
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_WINDOW_SHARDS_HPP_
