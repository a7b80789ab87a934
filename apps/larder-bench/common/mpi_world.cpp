#include "apps/larder-bench/common/mpi_world.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace larder::bench {

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fmt::print(stderr, "larder-bench: {} failed: {}\n", what, std::string(text, len));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

MpiWorld MpiWorld::create() {
  MpiWorld w;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &w.size_), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank_, MPI_INFO_NULL, &node),
      "MPI_Comm_split_type");
  mpi_check(MPI_Comm_rank(node, &w.local_rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(node, &w.node_size_), "MPI_Comm_size");
  // Nodes are numbered in the order of their lowest rank: a leader's index is the number of
  // leaders at or below it, minus one; the other ranks of the node receive it from the leader.
  const int leader = w.local_rank_ == 0 ? 1 : 0;
  mpi_check(MPI_Allreduce(&leader, &w.nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
  int leaders_up_to_me = 0;
  mpi_check(MPI_Scan(&leader, &leaders_up_to_me, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Scan");
  w.node_index_ = leaders_up_to_me - 1;
  mpi_check(MPI_Bcast(&w.node_index_, 1, MPI_INT, 0, node), "MPI_Bcast");
  mpi_check(MPI_Comm_free(&node), "MPI_Comm_free");
  return w;
}

void MpiWorld::barrier() const {
  mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

std::vector<std::string> MpiWorld::broadcast(std::vector<std::string> items) const {
  std::string packed;
  if (root()) {
    for (const std::string& s : items) packed += s + '\n';
  }
  unsigned long long len = packed.size();
  mpi_check(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  packed.resize(len);
  mpi_check(MPI_Bcast(packed.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD),
            "MPI_Bcast");
  if (root()) return items;
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl = packed.find('\n'); nl != std::string::npos;
       start = nl + 1, nl = packed.find('\n', start)) {
    out.push_back(packed.substr(start, nl - start));
  }
  return out;
}

std::vector<double> MpiWorld::sum_at_root(std::span<const double> values) const {
  std::vector<double> out(values.size(), 0.0);
  mpi_check(MPI_Reduce(values.data(), out.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                       MPI_SUM, 0, MPI_COMM_WORLD),
            "MPI_Reduce");
  return out;
}

std::vector<std::uint64_t> MpiWorld::sum_at_root(std::span<const std::uint64_t> values) const {
  std::vector<std::uint64_t> out(values.size(), 0);
  mpi_check(MPI_Reduce(values.data(), out.data(), static_cast<int>(values.size()), MPI_UINT64_T,
                       MPI_SUM, 0, MPI_COMM_WORLD),
            "MPI_Reduce");
  return out;
}

bool MpiWorld::all_ok(bool ok) const {
  int local = ok ? 1 : 0;
  int global = 0;
  mpi_check(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return global == 1;
}

}  // namespace larder::bench
