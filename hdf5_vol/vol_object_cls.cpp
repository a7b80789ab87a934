// object_cls: H5O* calls pass straight through. h5py opens datasets with H5Oopen, which lands in
// object_open, so nothing about caching may depend on dataset_open alone (it does not: the cache
// sits below HDF5, in the file driver).
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"

namespace larder::vol {

void* object_open(void* obj, const H5VL_loc_params_t* loc, H5I_type_t* opened_type, hid_t dxpl_id,
                  void** req) noexcept {
  return forward_new("object open", obj, req, [&](void* under, hid_t id) {
    return H5VLobject_open(under, loc, id, opened_type, dxpl_id, req);
  });
}

herr_t object_copy(void* src_obj, const H5VL_loc_params_t* src_loc, const char* src_name,
                   void* dst_obj, const H5VL_loc_params_t* dst_loc, const char* dst_name,
                   hid_t ocpypl_id, hid_t lcpl_id, hid_t dxpl_id, void** req) noexcept {
  return forward("object copy", src_obj, req, [&](void* under, hid_t id) -> herr_t {
    if (dst_obj == nullptr) {
      push_error(Minor::kBadObject, "object copy: null destination");
      return -1;
    }
    return H5VLobject_copy(under, src_loc, src_name, static_cast<VolObject*>(dst_obj)->under_object,
                           dst_loc, dst_name, id, ocpypl_id, lcpl_id, dxpl_id, req);
  });
}

herr_t object_get(void* obj, const H5VL_loc_params_t* loc, H5VL_object_get_args_t* args,
                  hid_t dxpl_id, void** req) noexcept {
  return forward("object get", obj, req, [&](void* under, hid_t id) {
    return H5VLobject_get(under, loc, id, args, dxpl_id, req);
  });
}

herr_t object_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_object_specific_args_t* args,
                       hid_t dxpl_id, void** req) noexcept {
  return forward("object specific", obj, req, [&](void* under, hid_t id) {
    return H5VLobject_specific(under, loc, id, args, dxpl_id, req);
  });
}

herr_t object_optional(void* obj, const H5VL_loc_params_t* loc, H5VL_optional_args_t* args,
                       hid_t dxpl_id, void** req) noexcept {
  return forward("object optional", obj, req, [&](void* under, hid_t id) {
    return H5VLobject_optional(under, loc, id, args, dxpl_id, req);
  });
}

}  // namespace larder::vol
