#include "mpi_transport/window_shards.hpp"

#include "mpi_transport/mpi_status.hpp"

namespace larder::mpi {

Result<std::unique_ptr<WindowShards>> WindowShards::create(MPI_Comm comm, std::size_t bytes) {
  auto window = Window::allocate(comm, bytes);
  if (!window.ok()) return window.status();
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::unique_ptr<WindowShards>(new WindowShards(std::move(*window), rank, size));
}

Status WindowShards::compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                                      const std::uint64_t* expected, std::uint64_t* old) {
  return from_mpi(MPI_Compare_and_swap(desired, expected, old, MPI_UINT64_T, target,
                                       static_cast<MPI_Aint>(disp), window_.get()),
                  "MPI_Compare_and_swap");
}

Status WindowShards::fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                               std::uint64_t* old) {
  return from_mpi(MPI_Fetch_and_op(add, old, MPI_UINT64_T, target, static_cast<MPI_Aint>(disp),
                                   MPI_SUM, window_.get()),
                  "MPI_Fetch_and_op");
}

Status WindowShards::store(int target, std::uint64_t disp, const std::uint64_t* value) {
  return from_mpi(MPI_Accumulate(value, 1, MPI_UINT64_T, target, static_cast<MPI_Aint>(disp), 1,
                                 MPI_UINT64_T, MPI_REPLACE, window_.get()),
                  "MPI_Accumulate");
}

Status WindowShards::get(int target, std::uint64_t disp, void* into, std::size_t bytes) {
  return from_mpi(
      MPI_Get(into, static_cast<int>(bytes), MPI_BYTE, target, static_cast<MPI_Aint>(disp),
              static_cast<int>(bytes), MPI_BYTE, window_.get()),
      "MPI_Get");
}

Status WindowShards::put(int target, std::uint64_t disp, const void* from, std::size_t bytes) {
  return from_mpi(
      MPI_Put(from, static_cast<int>(bytes), MPI_BYTE, target, static_cast<MPI_Aint>(disp),
              static_cast<int>(bytes), MPI_BYTE, window_.get()),
      "MPI_Put");
}

Status WindowShards::flush(int target) {
  return from_mpi(MPI_Win_flush(target, window_.get()), "MPI_Win_flush");
}

Status WindowShards::flush_all() {
  return from_mpi(MPI_Win_flush_all(window_.get()), "MPI_Win_flush_all");
}

Status WindowShards::close() {
  return window_.close();
}

}  // namespace larder::mpi
