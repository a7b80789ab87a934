// from_mpi: the one place an MPI return code becomes a Status (error class kept as native code).
#ifndef LARDER_MPI_TRANSPORT_MPI_STATUS_HPP_
#define LARDER_MPI_TRANSPORT_MPI_STATUS_HPP_

#include <string_view>

#include "runtime/common/status.hpp"

namespace larder::mpi {

Status from_mpi(int rc, std::string_view what);

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_MPI_STATUS_HPP_
