// group_cls: groups pass straight through; mounting unwraps the child file too.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"

namespace larder::vol {

void* group_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t lcpl_id,
                   hid_t gcpl_id, hid_t gapl_id, hid_t dxpl_id, void** req) noexcept {
  return forward_new("group create", obj, req, [&](void* under, hid_t id) {
    return H5VLgroup_create(under, loc, id, name, lcpl_id, gcpl_id, gapl_id, dxpl_id, req);
  });
}

void* group_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t gapl_id,
                 hid_t dxpl_id, void** req) noexcept {
  return forward_new("group open", obj, req, [&](void* under, hid_t id) {
    return H5VLgroup_open(under, loc, id, name, gapl_id, dxpl_id, req);
  });
}

herr_t group_get(void* obj, H5VL_group_get_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("group get", obj, req, [&](void* under, hid_t id) {
    return H5VLgroup_get(under, id, args, dxpl_id, req);
  });
}

herr_t group_specific(void* obj, H5VL_group_specific_args_t* args, hid_t dxpl_id,
                      void** req) noexcept {
  return forward("group specific", obj, req, [&](void* under, hid_t id) -> herr_t {
    if (args == nullptr || args->op_type != H5VL_GROUP_MOUNT)
      return H5VLgroup_specific(under, id, args, dxpl_id, req);
    // The file to mount is one of ours: hand the under connector its own object.
    auto* child = static_cast<VolObject*>(args->args.mount.child_file);
    if (child == nullptr) {
      push_error(Minor::kBadObject, "group mount: null child file");
      return -1;
    }
    H5VL_group_specific_args_t mine = *args;
    mine.args.mount.child_file = child->under_object;
    return H5VLgroup_specific(under, id, &mine, dxpl_id, req);
  });
}

herr_t group_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("group optional", obj, req, [&](void* under, hid_t id) {
    return H5VLgroup_optional(under, id, args, dxpl_id, req);
  });
}

herr_t group_close(void* grp, hid_t dxpl_id, void** req) noexcept {
  return forward(
      "group close", grp, req,
      [&](void* under, hid_t id) { return H5VLgroup_close(under, id, dxpl_id, req); },
      OnSuccess::kFreeWrapper);
}

}  // namespace larder::vol
