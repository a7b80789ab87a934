// The PMPI hooks: MPI_Init, MPI_Init_thread and MPI_Finalize start and stop Larder (see
// lifecycle.hpp). Exported by liblarder.so and by liblarder_preload.so, which comes first in
// symbol lookup when preloaded, so these win over the MPI library's own definitions.
#include <mpi.h>

#include "runtime/api/runtime.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"

namespace {

// When the library loads (the process has one thread, MPI has not started): the Open MPI
// defaults Larder needs, for a program that will call MPI_Init itself. Nothing is set later.
__attribute__((constructor)) void larder_hooks_init() {
  int initialized = 0;
  if (PMPI_Initialized(&initialized) != MPI_SUCCESS || initialized != 0) return;
  if (larder::Runtime::instance().requested() && !larder::mpi_hooks::is_worker_process()) {
    larder::mpi_hooks::set_openmpi_defaults();
  }
}

}  // namespace

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
