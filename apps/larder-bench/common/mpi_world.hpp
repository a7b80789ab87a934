// MpiWorld: this rank's place in the job (rank, size, node), and the few collectives the tool
// uses. Every MPI call is checked; a failing call aborts the job with a message naming it (MPI
// errors on MPI_COMM_WORLD are fatal by default anyway). Collective: create() and every member
// function except the accessors must be called by all ranks.
#ifndef LARDER_APPS_LARDER_BENCH_COMMON_MPI_WORLD_HPP_
#define LARDER_APPS_LARDER_BENCH_COMMON_MPI_WORLD_HPP_

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace larder::bench {

void mpi_check(int rc, const char* what);

class MpiWorld {
 public:
  static MpiWorld create();  // after MPI_Init

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  bool root() const noexcept { return rank_ == 0; }
  int ranks_per_node() const noexcept { return node_size_; }  // this node's rank count
  int local_rank() const noexcept { return local_rank_; }
  int nodes() const noexcept { return nodes_; }
  int node_index() const noexcept { return node_index_; }

  void barrier() const;
  // Rank 0's list, on every rank.
  std::vector<std::string> broadcast(std::vector<std::string> items) const;
  // Element-wise sums at rank 0 (other ranks get zeros).
  std::vector<double> sum_at_root(std::span<const double> values) const;
  std::vector<std::uint64_t> sum_at_root(std::span<const std::uint64_t> values) const;
  // True on every rank when `ok` is true on every rank.
  bool all_ok(bool ok) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int node_size_ = 1;
  int nodes_ = 1;
  int node_index_ = 0;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_COMMON_MPI_WORLD_HPP_
