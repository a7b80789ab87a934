// link_cls: links pass straight through. Hard-link creation, copy and move may name a second
// object, or give a null one of the two (H5L_SAME_LOC): both are unwrapped here.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"

namespace larder::vol {
namespace {

void* under_of(void* obj) {
  return obj ? static_cast<VolObject*>(obj)->under_object : nullptr;
}

}  // namespace

herr_t link_create(H5VL_link_create_args_t* args, void* obj, const H5VL_loc_params_t* loc,
                   hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id, void** req) noexcept {
  if (args == nullptr) {
    push_error(Minor::kBadObject, "link create: null arguments");
    return -1;
  }
  void* target = args->op_type == H5VL_LINK_CREATE_HARD ? args->args.hard.curr_obj : nullptr;
  return forward("link create", obj ? obj : target, req, [&](void*, hid_t id) {
    H5VL_link_create_args_t mine = *args;
    if (target != nullptr) mine.args.hard.curr_obj = under_of(target);
    return H5VLlink_create(&mine, under_of(obj), loc, id, lcpl_id, lapl_id, dxpl_id, req);
  });
}

herr_t link_copy(void* src_obj, const H5VL_loc_params_t* loc1, void* dst_obj,
                 const H5VL_loc_params_t* loc2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req) noexcept {
  return forward("link copy", src_obj ? src_obj : dst_obj, req, [&](void*, hid_t id) {
    return H5VLlink_copy(under_of(src_obj), loc1, under_of(dst_obj), loc2, id, lcpl_id, lapl_id,
                         dxpl_id, req);
  });
}

herr_t link_move(void* src_obj, const H5VL_loc_params_t* loc1, void* dst_obj,
                 const H5VL_loc_params_t* loc2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req) noexcept {
  return forward("link move", src_obj ? src_obj : dst_obj, req, [&](void*, hid_t id) {
    return H5VLlink_move(under_of(src_obj), loc1, under_of(dst_obj), loc2, id, lcpl_id, lapl_id,
                         dxpl_id, req);
  });
}

herr_t link_get(void* obj, const H5VL_loc_params_t* loc, H5VL_link_get_args_t* args, hid_t dxpl_id,
                void** req) noexcept {
  return forward("link get", obj, req, [&](void* under, hid_t id) {
    return H5VLlink_get(under, loc, id, args, dxpl_id, req);
  });
}

herr_t link_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_link_specific_args_t* args,
                     hid_t dxpl_id, void** req) noexcept {
  return forward("link specific", obj, req, [&](void* under, hid_t id) {
    return H5VLlink_specific(under, loc, id, args, dxpl_id, req);
  });
}

herr_t link_optional(void* obj, const H5VL_loc_params_t* loc, H5VL_optional_args_t* args,
                     hid_t dxpl_id, void** req) noexcept {
  return forward("link optional", obj, req, [&](void* under, hid_t id) {
    return H5VLlink_optional(under, loc, id, args, dxpl_id, req);
  });
}

}  // namespace larder::vol
