// The cache driver: a small read-only HDF5 file driver (VFD) whose reads are larder_pread.
//
// The connector puts it on the file access property list of every read-only open it routes
// through the cache (cache_route.hpp). HDF5 itself, below the connector, then decodes every
// layout, filter, selection and memory type exactly as with its default driver, while each byte
// it reads comes from Larder: from the parallel file system once per job, then from node-local
// memory. The driver is registered by the connector on first use; it is not a separate plugin.
#ifndef LARDER_HDF5_VOL_CACHE_DRIVER_HPP_
#define LARDER_HDF5_VOL_CACHE_DRIVER_HPP_

#include <hdf5.h>

namespace larder::vol {

// The driver's ID (registered on first use, again if HDF5 was closed); negative on failure.
hid_t cache_driver_id() noexcept;
// True when `driver_id` is the cache driver.
bool is_cache_driver(hid_t driver_id) noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_CACHE_DRIVER_HPP_
