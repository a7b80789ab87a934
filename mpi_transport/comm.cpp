#include "mpi_transport/comm.hpp"

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi {

Result<Comm> Comm::dup(MPI_Comm parent) {
  MPI_Comm c = MPI_COMM_NULL;
  if (Status s = from_mpi(MPI_Comm_dup(parent, &c), "MPI_Comm_dup"); !s.ok()) return s;
  return Comm(c);
}

Result<Comm> Comm::split_shared(MPI_Comm parent) {
  MPI_Comm c = MPI_COMM_NULL;
  int rank = 0;
  MPI_Comm_rank(parent, &rank);
  if (Status s =
          from_mpi(MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c),
                   "MPI_Comm_split_type");
      !s.ok()) {
    return s;
  }
  return Comm(c);
}

Result<Comm> Comm::split(MPI_Comm parent, int color, int key) {
  MPI_Comm c = MPI_COMM_NULL;
  if (Status s = from_mpi(MPI_Comm_split(parent, color, key, &c), "MPI_Comm_split"); !s.ok())
    return s;
  return Comm(c);
}

Comm::~Comm() {
  if (comm_ != MPI_COMM_NULL) LARDER_LOG_WARN("a communicator was not freed (close() not called)");
}

int Comm::rank() const noexcept {
  int r = 0;
  MPI_Comm_rank(comm_, &r);
  return r;
}

int Comm::size() const noexcept {
  int n = 0;
  MPI_Comm_size(comm_, &n);
  return n;
}

Status Comm::close() {
  if (comm_ == MPI_COMM_NULL) return {};
  return from_mpi(MPI_Comm_free(&comm_), "MPI_Comm_free");
}

}  // namespace larder::mpi
