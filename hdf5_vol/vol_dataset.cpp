// dataset_cls: datasets pass straight through. Reads of a file opened read-only are served by
// the cache below HDF5 (the file driver of cache_route.hpp), so HDF5 itself still decodes every
// layout, filter, selection and memory type, exactly as native. A collective read of a cached
// file is done independently (independent_reads.hpp).
#include <string>
#include <vector>

#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"
#include "hdf5_vol/independent_reads.hpp"

namespace larder::vol {
namespace {

// HDF5 1.14 reads and writes several datasets at once; all of them belong to one connector.
// Unwraps dset[1..count) into `unders` (dset[0] is unwrapped by forward); false on a bad one.
bool unwrap_rest(size_t count, void* dset[], void* first_under, std::vector<void*>& unders) {
  unders.assign(count, nullptr);
  unders[0] = first_under;
  const hid_t first_id = static_cast<VolObject*>(dset[0])->under_vol_id;
  for (size_t i = 1; i < count; ++i) {
    auto* o = static_cast<VolObject*>(dset[i]);
    if (o == nullptr || o->under_vol_id != first_id) {
      push_error(Minor::kBadObject, "datasets of one multi-dataset transfer use different stacks");
      return false;
    }
    unders[i] = o->under_object;
  }
  return true;
}

// forward for a multi-dataset transfer: `fn(under_objects, under_vol_id)`.
template <class Fn>
herr_t forward_multi(const char* what, size_t count, void* dset[], void** req, Fn&& fn) noexcept {
  if (count == 0 || dset == nullptr) {
    push_error(Minor::kBadObject, std::string(what) + ": no datasets");
    return -1;
  }
  std::vector<void*> unders;
  return forward(what, dset[0], req, [&](void* first, hid_t id) -> herr_t {
    if (!unwrap_rest(count, dset, first, unders)) return -1;
    return fn(unders.data(), id);
  });
}

}  // namespace

void* dataset_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t lcpl_id,
                     hid_t type_id, hid_t space_id, hid_t dcpl_id, hid_t dapl_id, hid_t dxpl_id,
                     void** req) noexcept {
  return forward_new("dataset create", obj, req, [&](void* under, hid_t id) {
    return H5VLdataset_create(under, loc, id, name, lcpl_id, type_id, space_id, dcpl_id, dapl_id,
                              dxpl_id, req);
  });
}

void* dataset_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t dapl_id,
                   hid_t dxpl_id, void** req) noexcept {
  return forward_new("dataset open", obj, req, [&](void* under, hid_t id) {
    return H5VLdataset_open(under, loc, id, name, dapl_id, dxpl_id, req);
  });
}

herr_t dataset_read(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                    hid_t file_space_id[], hid_t dxpl_id, void* buf[], void** req) noexcept {
  return forward_multi("dataset read", count, dset, req, [&](void** unders, hid_t id) {
    const ReadDxpl dxpl(unders[0], id, dxpl_id);  // all the datasets are in one file
    return H5VLdataset_read(count, unders, id, mem_type_id, mem_space_id, file_space_id, dxpl.get(),
                            buf, req);
  });
}

herr_t dataset_write(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                     hid_t file_space_id[], hid_t dxpl_id, const void* buf[], void** req) noexcept {
  return forward_multi("dataset write", count, dset, req, [&](void** unders, hid_t id) {
    return H5VLdataset_write(count, unders, id, mem_type_id, mem_space_id, file_space_id, dxpl_id,
                             buf, req);
  });
}

herr_t dataset_get(void* dset, H5VL_dataset_get_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("dataset get", dset, req, [&](void* under, hid_t id) {
    return H5VLdataset_get(under, id, args, dxpl_id, req);
  });
}

herr_t dataset_specific(void* obj, H5VL_dataset_specific_args_t* args, hid_t dxpl_id,
                        void** req) noexcept {
  return forward("dataset specific", obj, req, [&](void* under, hid_t id) {
    return H5VLdataset_specific(under, id, args, dxpl_id, req);
  });
}

herr_t dataset_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("dataset optional", obj, req, [&](void* under, hid_t id) {
    return H5VLdataset_optional(under, id, args, dxpl_id, req);
  });
}

herr_t dataset_close(void* dset, hid_t dxpl_id, void** req) noexcept {
  return forward(
      "dataset close", dset, req,
      [&](void* under, hid_t id) { return H5VLdataset_close(under, id, dxpl_id, req); },
      OnSuccess::kFreeWrapper);
}

}  // namespace larder::vol
