#include "apps/larder-bench/io/io_setup.hpp"

#include <fmt/format.h>
#include <larder/larder.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace larder::bench {
namespace {

Status start_larder(const Workload& w, const MpiWorld& world, IoSetup& io, Console& console) {
  const char* prefix = std::getenv("LARDER_PREFIX");
  if (prefix == nullptr || *prefix == '\0') {
    std::error_code err;
    const std::string abs = std::filesystem::absolute(w.dataset.data_folder, err).string();
    ::setenv("LARDER_PREFIX", abs.c_str(), 1);
    console.output(fmt::format("LARDER_PREFIX not set: using the data folder {}", abs));
  }
  // A benchmark of the cache against the file system: a data folder on a local disk stands in
  // for the PFS and is cached too, unless the user says otherwise (docs/larder-bench.md).
  ::setenv("LARDER_LOCAL_FS", "cache", 0);
  const larder_status_t rc = larder_init(MPI_COMM_WORLD);
  const bool ok = rc == LARDER_OK || rc == LARDER_ERR_ALREADY_INITIALIZED;
  const std::string why = ok ? "" : larder_last_error();
  if (!world.all_ok(ok)) {
    if (rc == LARDER_OK) larder_finalize();
    return Status::error(ok ? "larder_init failed on another rank" : "larder_init failed: " + why);
  }
  io.owns_larder = rc == LARDER_OK;
  return {};
}

bool preload_present() {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload != nullptr && std::string(preload).find("liblarder_preload") != std::string::npos;
}

}  // namespace

Result<IoSetup> start_io(IoMode mode, const Workload& w, const MpiWorld& world, Console& console) {
  IoSetup io;
  switch (mode) {
    case IoMode::kPosix:
      if (larder_initialized() != 0) {
        console.warning(
            "Larder was started by its MPI_Init hooks (LARDER_PREFIX is set), but "
            "--io posix reads bypass it: this run measures the file system");
      }
      break;
    case IoMode::kLarder:
      if (Status s = start_larder(w, world, io, console); !s.ok()) return s;
      io.larder_io = true;
      io.larder_counters = true;
      io.backend = make_larder_backend();
      return io;
    case IoMode::kPreload:
      if (!preload_present()) {
        return Status::error(
            "--io preload: the job must be launched with LD_PRELOAD=<build>/lib/"
            "liblarder_preload.so (mpiexec.mpich -genv LD_PRELOAD ...); LD_PRELOAD does not "
            "name liblarder_preload");
      }
      io.larder_counters = true;
      break;
    case IoMode::kHdf5:
      if (w.dataset.format != Format::kHdf5) {
        return Status::error("--io hdf5 reads hdf5 datasets: dataset.format is " +
                             std::string(format_name(w.dataset.format)));
      }
      if (std::getenv("HDF5_VOL_CONNECTOR") == nullptr) {
        console.warning(
            "--io hdf5 without HDF5_VOL_CONNECTOR: reads use HDF5's native file "
            "driver, not Larder's VOL connector");
      } else if (Status s = start_larder(w, world, io, console); !s.ok()) {
        return s;  // started here, the connector uses it (its opens are not collective)
      } else {
        io.larder_counters = true;
      }
      break;
  }
  io.backend = make_posix_backend(w.reader.odirect);
  return io;
}

void finish_io(IoSetup& io, Console& console) {
  if (!io.owns_larder) return;
  io.owns_larder = false;
  if (larder_finalize() != LARDER_OK) {
    console.error(std::string("larder_finalize failed: ") + larder_last_error());
  }
}

}  // namespace larder::bench
