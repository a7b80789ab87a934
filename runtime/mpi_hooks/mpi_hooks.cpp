// The PMPI hooks: MPI_Init, MPI_Init_thread and MPI_Finalize start and stop Larder (see
// lifecycle.hpp). Exported by liblarder.so and by liblarder_preload.so, which comes first in
// symbol lookup when preloaded, so these win over the MPI library's own definitions.
#include <mpi.h>

#include "runtime/mpi_hooks/lifecycle.hpp"

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  return larder::mpi_hooks::on_init(argc, argv, MPI_THREAD_SINGLE, nullptr, false);
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  return larder::mpi_hooks::on_init(argc, argv, required, provided, true);
}

int MPI_Finalize(void) {
  return larder::mpi_hooks::on_finalize();
}

}  // extern "C"
