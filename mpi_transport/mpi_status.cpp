#include "mpi_transport/mpi_status.hpp"

#include <mpi.h>

#include <string>

namespace larder::mpi {

Status from_mpi(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return {};
  int error_class = rc;
  MPI_Error_class(rc, &error_class);
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return {Errc::kMpi, error_class,
          std::string(what) + ": " + std::string(text, static_cast<std::size_t>(len))};
}

}  // namespace larder::mpi
