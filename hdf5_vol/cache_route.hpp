// Which opens go through the cache, and the file access property list the under connector gets.
//
// A file is read through Larder when it is opened read-only (not for writing, not SWMR), the
// connector's cache option is on, its file driver is one that reads a single POSIX file (sec2,
// the default; stdio; MPI-IO), Larder runs (runtime_start.hpp) and the file is managed
// (under LARDER_PREFIX, or any file when no prefix is set). The under connector then opens it
// with the cache driver in place of the original one. Every other open keeps its property list
// as it was, apart from the under connector being set on it.
#ifndef LARDER_HDF5_VOL_CACHE_ROUTE_HPP_
#define LARDER_HDF5_VOL_CACHE_ROUTE_HPP_

#include <hdf5.h>

#include "hdf5_vol/larder_vol.h"

namespace larder::vol {

enum class Access { kOpen, kCreate, kProbe };

// A new property list (the caller closes it), or negative with an error pushed. `name` and
// `flags` are those of the open; with Access::kCreate and kProbe nothing is routed.
hid_t make_under_fapl(const char* name, unsigned flags, hid_t fapl_id,
                      const larder_vol_info_t& info, Access access) noexcept;

// The connector info to use for an open: NULL info (H5Pset_vol with NULL) means native below
// and every default.
larder_vol_info_t default_info() noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_CACHE_ROUTE_HPP_
