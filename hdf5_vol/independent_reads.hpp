// Collective reads of cached files.
//
// A program that opened a file with MPI-IO may read it with a collective transfer property list
// (H5Pset_dxpl_mpio(..., H5FD_MPIO_COLLECTIVE), h5py's dset.collective[...]). HDF5 refuses
// collective transfers on a file whose driver is not MPI-based, and a cached file's driver is the
// cache driver. The bytes of a read are the same either way, so such a read is done independently.
#ifndef LARDER_HDF5_VOL_INDEPENDENT_READS_HPP_
#define LARDER_HDF5_VOL_INDEPENDENT_READS_HPP_

#include <hdf5.h>

namespace larder::vol {

// The transfer property list to read `under_dset` with: `dxpl_id` itself, or (when it asks for
// collective transfer and the dataset's file uses the cache driver) an independent copy that
// the destructor closes.
class ReadDxpl {
 public:
  ReadDxpl(void* under_dset, hid_t under_vol_id, hid_t dxpl_id) noexcept;
  ReadDxpl(const ReadDxpl&) = delete;
  ReadDxpl& operator=(const ReadDxpl&) = delete;
  ~ReadDxpl();

  hid_t get() const noexcept { return copy_ >= 0 ? copy_ : dxpl_id_; }

 private:
  hid_t dxpl_id_;
  hid_t copy_ = H5I_INVALID_HID;
};

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_INDEPENDENT_READS_HPP_
