#include "hdf5_vol/cache_route.hpp"

#include <larder/larder.h>
#include <mpi.h>

#include <string>

#include "hdf5_vol/cache_driver.hpp"
#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/runtime_start.hpp"

namespace larder::vol {
namespace {

bool read_only(unsigned flags) {
  return (flags & (H5F_ACC_RDWR | H5F_ACC_SWMR_READ | H5F_ACC_SWMR_WRITE)) == 0;
}

// The communicator of an MPI-IO property list (a duplicate, freed by the caller), or NULL.
MPI_Comm mpio_comm(hid_t fapl_id) {
  MPI_Comm comm = MPI_COMM_NULL;
#ifdef H5_HAVE_PARALLEL
  MPI_Info info = MPI_INFO_NULL;
  if (H5Pget_fapl_mpio(fapl_id, &comm, &info) < 0) return MPI_COMM_NULL;
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
#else
  (void)fapl_id;
#endif
  return comm;
}

bool is_mpio(hid_t driver) {
#ifdef H5_HAVE_PARALLEL
  return driver == H5FD_MPIO;
#else
  (void)driver;
  return false;
#endif
}

// Puts the cache driver on `fapl_id` when this open should read through Larder.
void route_through_cache(const char* name, hid_t fapl_id, const larder_vol_info_t& info) {
  const hid_t driver = H5Pget_driver(fapl_id);
  if (driver < 0) return;
  const bool mpio = is_mpio(driver);
  if (!mpio && driver != H5FD_SEC2 && driver != H5FD_STDIO && !is_cache_driver(driver)) return;
  MPI_Comm comm = mpio ? mpio_comm(fapl_id) : MPI_COMM_NULL;
  const bool running = ensure_runtime(info.start, comm, name);  // collective when comm is set
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  if (!running || !larder_is_managed(name)) return;
  const hid_t cache_driver = cache_driver_id();
  if (cache_driver < 0 || H5Pset_driver(fapl_id, cache_driver, nullptr) < 0)
    log_line(LogLevel::kWarn, "cannot set the cache driver for '" + std::string(name) +
                                  "': reading it without the cache");
}

}  // namespace

larder_vol_info_t default_info() noexcept {
  return larder_vol_info_t{H5VL_NATIVE, nullptr, LARDER_VOL_START_AUTO, 1};
}

hid_t make_under_fapl(const char* name, unsigned flags, hid_t fapl_id,
                      const larder_vol_info_t& info, Access access) noexcept {
  try {
    const hid_t under = H5Pcopy(fapl_id);
    if (under < 0) return -1;
    if (H5Pset_vol(under, info.under_vol_id, info.under_vol_info) < 0) {
      ErrorStackKeeper keep;
      H5Pclose(under);
      return -1;
    }
    const bool cached_read = access == Access::kOpen && read_only(flags) && info.cache != 0;
    // Our driver only reads: a property list taken from a cached file (H5Fget_access_plist)
    // and reused to write or probe gets the default driver back.
    if (!cached_read && is_cache_driver(H5Pget_driver(under)) && H5Pset_fapl_sec2(under) < 0) {
      ErrorStackKeeper keep;
      H5Pclose(under);
      return -1;
    }
    if (cached_read && name != nullptr) route_through_cache(name, under, info);
    return under;
  } catch (...) {
    push_error(Minor::kInternal, "out of memory preparing an open");
    return -1;
  }
}

}  // namespace larder::vol
