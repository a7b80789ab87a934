// datatype_cls: committed datatypes pass straight through.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"

namespace larder::vol {

void* datatype_commit(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t type_id,
                      hid_t lcpl_id, hid_t tcpl_id, hid_t tapl_id, hid_t dxpl_id,
                      void** req) noexcept {
  return forward_new("datatype commit", obj, req, [&](void* under, hid_t id) {
    return H5VLdatatype_commit(under, loc, id, name, type_id, lcpl_id, tcpl_id, tapl_id, dxpl_id,
                               req);
  });
}

void* datatype_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t tapl_id,
                    hid_t dxpl_id, void** req) noexcept {
  return forward_new("datatype open", obj, req, [&](void* under, hid_t id) {
    return H5VLdatatype_open(under, loc, id, name, tapl_id, dxpl_id, req);
  });
}

herr_t datatype_get(void* dt, H5VL_datatype_get_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("datatype get", dt, req, [&](void* under, hid_t id) {
    return H5VLdatatype_get(under, id, args, dxpl_id, req);
  });
}

herr_t datatype_specific(void* obj, H5VL_datatype_specific_args_t* args, hid_t dxpl_id,
                         void** req) noexcept {
  return forward("datatype specific", obj, req, [&](void* under, hid_t id) {
    return H5VLdatatype_specific(under, id, args, dxpl_id, req);
  });
}

herr_t datatype_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id,
                         void** req) noexcept {
  return forward("datatype optional", obj, req, [&](void* under, hid_t id) {
    return H5VLdatatype_optional(under, id, args, dxpl_id, req);
  });
}

herr_t datatype_close(void* dt, hid_t dxpl_id, void** req) noexcept {
  return forward(
      "datatype close", dt, req,
      [&](void* under, hid_t id) { return H5VLdatatype_close(under, id, dxpl_id, req); },
      OnSuccess::kFreeWrapper);
}

}  // namespace larder::vol
