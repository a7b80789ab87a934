// IoSetup: prepares the read path of an --io mode for `train`, and undoes it.
//   posix    the POSIX backend (O_DIRECT with reader.odirect)
//   larder   starts Larder over MPI_COMM_WORLD (larder_init, collective); LARDER_PREFIX defaults
//            to the dataset's data_folder; finish() calls larder_finalize (collective)
//   preload  the POSIX backend; refuses to run unless LD_PRELOAD names liblarder_preload
//   hdf5     the HDF5 API (format hdf5 only). With HDF5_VOL_CONNECTOR set, starts Larder as
//            `larder` does, so that the VOL connector (which shares liblarder) serves the
//            reads; warns when HDF5_VOL_CONNECTOR is not set
#ifndef LARDER_APPS_LARDER_BENCH_IO_IO_SETUP_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_IO_SETUP_HPP_

#include <memory>

#include "apps/larder-bench/cli.hpp"
#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/io/io_backend.hpp"
#include "apps/larder-bench/output/console.hpp"

namespace larder::bench {

struct IoSetup {
  std::unique_ptr<IoBackend> backend;
  bool larder_io = false;        // reads go through Larder's API
  bool owns_larder = false;      // larder_init was ours: finish() finalizes
  bool larder_counters = false;  // Larder serves the reads: report its counters
};

// Collective (larder_init): every rank gets the same answer.
Result<IoSetup> start_io(IoMode mode, const Workload& w, const MpiWorld& world, Console& console);
void finish_io(IoSetup& io, Console& console);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_IO_SETUP_HPP_
