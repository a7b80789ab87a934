// attr_cls: attributes pass straight through.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"

namespace larder::vol {

void* attr_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t type_id,
                  hid_t space_id, hid_t acpl_id, hid_t aapl_id, hid_t dxpl_id,
                  void** req) noexcept {
  return forward_new("attribute create", obj, req, [&](void* under, hid_t id) {
    return H5VLattr_create(under, loc, id, name, type_id, space_id, acpl_id, aapl_id, dxpl_id, req);
  });
}

void* attr_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t aapl_id,
                hid_t dxpl_id, void** req) noexcept {
  return forward_new("attribute open", obj, req, [&](void* under, hid_t id) {
    return H5VLattr_open(under, loc, id, name, aapl_id, dxpl_id, req);
  });
}

herr_t attr_read(void* attr, hid_t mem_type_id, void* buf, hid_t dxpl_id, void** req) noexcept {
  return forward("attribute read", attr, req, [&](void* under, hid_t id) {
    return H5VLattr_read(under, id, mem_type_id, buf, dxpl_id, req);
  });
}

herr_t attr_write(void* attr, hid_t mem_type_id, const void* buf, hid_t dxpl_id,
                  void** req) noexcept {
  return forward("attribute write", attr, req, [&](void* under, hid_t id) {
    return H5VLattr_write(under, id, mem_type_id, buf, dxpl_id, req);
  });
}

herr_t attr_get(void* obj, H5VL_attr_get_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("attribute get", obj, req, [&](void* under, hid_t id) {
    return H5VLattr_get(under, id, args, dxpl_id, req);
  });
}

herr_t attr_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_attr_specific_args_t* args,
                     hid_t dxpl_id, void** req) noexcept {
  return forward("attribute specific", obj, req, [&](void* under, hid_t id) {
    return H5VLattr_specific(under, loc, id, args, dxpl_id, req);
  });
}

herr_t attr_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("attribute optional", obj, req, [&](void* under, hid_t id) {
    return H5VLattr_optional(under, id, args, dxpl_id, req);
  });
}

herr_t attr_close(void* attr, hid_t dxpl_id, void** req) noexcept {
  return forward(
      "attribute close", attr, req,
      [&](void* under, hid_t id) { return H5VLattr_close(under, id, dxpl_id, req); },
      OnSuccess::kFreeWrapper);
}

}  // namespace larder::vol
