// Starting Larder from the connector, for programs in which nothing else started it.
//
// Once Larder runs (started by its MPI_Init hooks, or by the program with larder_init), the
// connector only uses it. Otherwise, at a read-only open routed through the cache, it starts
// Larder according to the `start` option, and stops it itself later:
//
//   MPI not initialized (serial)   a cache private to the process: larder_init(MPI_COMM_NULL);
//                                  finalized at exit.
//   auto, MPI-IO open              larder_init over the file's communicator. H5Fopen with an
//                                  MPI-IO property list is collective over that communicator, so
//                                  every rank is here: they first agree (one MPI_Allreduce) that
//                                  all of them need a start, so ranks that already run Larder,
//                                  or cannot start it, never leave the others waiting.
//   auto, any other open           no start (the open is not collective; a larder_init here could
//                                  wait forever for ranks that never open a file): pass through,
//                                  and rank 0 says once, at warn, exactly what to add (the
//                                  preload library and LARDER_PREFIX, or MPI_THREAD_MULTIPLE and
//                                  start=world).
//   world                          larder_init(MPI_COMM_WORLD) at the first read-only open: the
//                                  user promises every rank opens a file through the connector.
//   local                          a cache private to each process, even in an MPI job.
//   never                          never start Larder.
//
// A worker process of a rank (larder_active() == LARDER_ACTIVE_WORKER: a DataLoader worker under
// the preload library) never starts a cache: its reads are served by its rank below HDF5.
//
// A session over MPI is finalized at the start of MPI_Finalize (an attribute on MPI_COMM_SELF,
// the hook HDF5 itself uses), where every rank is, so the collective larder_finalize is safe.
// LARDER_ENABLE=0 turns the cache off.
#ifndef LARDER_HDF5_VOL_RUNTIME_START_HPP_
#define LARDER_HDF5_VOL_RUNTIME_START_HPP_

#include <mpi.h>

#include "hdf5_vol/larder_vol.h"

namespace larder::vol {

// True when Larder is running in this process on return (started here if needed and allowed).
// `file_comm` is the communicator of an MPI-IO open (collective: every rank of it must call),
// else MPI_COMM_NULL. `file` is the name being opened (for messages).
bool ensure_runtime(larder_vol_start_t mode, MPI_Comm file_comm, const char* file) noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_RUNTIME_START_HPP_
