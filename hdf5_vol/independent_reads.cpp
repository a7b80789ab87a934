#include "hdf5_vol/independent_reads.hpp"

#include "hdf5_vol/cache_driver.hpp"
#include "hdf5_vol/errors.hpp"

namespace larder::vol {
namespace {

#ifdef H5_HAVE_PARALLEL
bool wants_collective(hid_t dxpl_id) {
  H5FD_mpio_xfer_t mode = H5FD_MPIO_INDEPENDENT;
  ErrorStackKeeper keep;  // a list without MPI-IO settings is simply not collective
  return H5Pget_dxpl_mpio(dxpl_id, &mode) >= 0 && mode == H5FD_MPIO_COLLECTIVE;
}

bool file_is_cached(void* under_dset, hid_t under_vol_id) {
  ErrorStackKeeper keep;
  H5VL_loc_params_t self{};
  self.obj_type = H5I_DATASET;
  self.type = H5VL_OBJECT_BY_SELF;
  void* file = nullptr;
  H5VL_object_get_args_t get_file{};
  get_file.op_type = H5VL_OBJECT_GET_FILE;
  get_file.args.get_file.file = &file;
  if (H5VLobject_get(under_dset, &self, under_vol_id, &get_file, H5P_DATASET_XFER_DEFAULT,
                     nullptr) < 0 ||
      file == nullptr)
    return false;
  H5VL_file_get_args_t get_fapl{};
  get_fapl.op_type = H5VL_FILE_GET_FAPL;
  if (H5VLfile_get(file, under_vol_id, &get_fapl, H5P_DATASET_XFER_DEFAULT, nullptr) < 0)
    return false;
  const bool cached = is_cache_driver(H5Pget_driver(get_fapl.args.get_fapl.fapl_id));
  H5Pclose(get_fapl.args.get_fapl.fapl_id);
  return cached;
}
#endif

}  // namespace

ReadDxpl::ReadDxpl([[maybe_unused]] void* under_dset, [[maybe_unused]] hid_t under_vol_id,
                   hid_t dxpl_id) noexcept
    : dxpl_id_(dxpl_id) {
#ifdef H5_HAVE_PARALLEL
  if (!wants_collective(dxpl_id) || !file_is_cached(under_dset, under_vol_id)) return;
  ErrorStackKeeper keep;
  copy_ = H5Pcopy(dxpl_id);
  if (copy_ >= 0 && H5Pset_dxpl_mpio(copy_, H5FD_MPIO_INDEPENDENT) < 0) {
    H5Pclose(copy_);
    copy_ = H5I_INVALID_HID;
  }
#endif
}

ReadDxpl::~ReadDxpl() {
  if (copy_ < 0) return;
  ErrorStackKeeper keep;
  H5Pclose(copy_);
}

}  // namespace larder::vol
