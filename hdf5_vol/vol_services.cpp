// introspect_cls, request_cls, blob_cls, token_cls and the catch-all optional callback.
//
// Introspection matters more than it looks: HDF5 asks get_conn_cls(TERM) to decide whether the
// stack ends in the native connector (native-only and deprecated APIs, vlen data, the file's
// post-open step), and opt_query whether an optional operation is supported. Both are forwarded.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/forward.hpp"
#include "hdf5_vol/larder_vol.h"

namespace larder::vol {

herr_t introspect_get_conn_cls(void* obj, H5VL_get_conn_lvl_t lvl,
                               const H5VL_class_t** conn_cls) noexcept {
  if (conn_cls == nullptr) {
    push_error(Minor::kBadObject, "get_conn_cls: null output");
    return -1;
  }
  if (lvl == H5VL_GET_CONN_LVL_CURR) {
    *conn_cls = &connector_class();
    return 0;
  }
  return forward("get_conn_cls", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLintrospect_get_conn_cls(under, id, lvl, conn_cls);
  });
}

herr_t introspect_get_cap_flags(const void* info, uint64_t* cap_flags) noexcept {
  if (cap_flags == nullptr) {
    push_error(Minor::kBadObject, "get_cap_flags: null output");
    return -1;
  }
  // No info (H5Pset_vol with NULL): the native connector is below.
  const auto* i = static_cast<const larder_vol_info_t*>(info);
  const hid_t under_id = i != nullptr ? i->under_vol_id : H5VL_NATIVE;
  const void* under_info = i != nullptr ? i->under_vol_info : nullptr;
  if (H5Iis_valid(under_id) <= 0) {
    push_error(Minor::kBadInfo, "get_cap_flags: the under connector ID is not valid");
    return -1;
  }
  const herr_t rc = H5VLintrospect_get_cap_flags(under_info, under_id, cap_flags);
  if (rc >= 0) *cap_flags |= connector_class().cap_flags;
  return rc;
}

herr_t introspect_opt_query(void* obj, H5VL_subclass_t cls, int opt_type,
                            uint64_t* flags) noexcept {
  return forward("opt_query", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLintrospect_opt_query(under, id, cls, opt_type, flags);
  });
}

herr_t request_wait(void* req, uint64_t timeout, H5VL_request_status_t* status) noexcept {
  const herr_t rc = forward("request wait", req, nullptr, [&](void* under, hid_t id) {
    return H5VLrequest_wait(under, id, timeout, status);
  });
  if (rc >= 0 && status != nullptr && *status != H5VL_REQUEST_STATUS_IN_PROGRESS)
    free_wrapper(static_cast<VolObject*>(req));
  return rc;
}

herr_t request_notify(void* req, H5VL_request_notify_t cb, void* ctx) noexcept {
  return forward(
      "request notify", req, nullptr,
      [&](void* under, hid_t id) { return H5VLrequest_notify(under, id, cb, ctx); },
      OnSuccess::kFreeWrapper);
}

herr_t request_cancel(void* req, H5VL_request_status_t* status) noexcept {
  return forward(
      "request cancel", req, nullptr,
      [&](void* under, hid_t id) { return H5VLrequest_cancel(under, id, status); },
      OnSuccess::kFreeWrapper);
}

herr_t request_specific(void* req, H5VL_request_specific_args_t* args) noexcept {
  return forward("request specific", req, nullptr,
                 [&](void* under, hid_t id) { return H5VLrequest_specific(under, id, args); });
}

herr_t request_optional(void* req, H5VL_optional_args_t* args) noexcept {
  return forward("request optional", req, nullptr,
                 [&](void* under, hid_t id) { return H5VLrequest_optional(under, id, args); });
}

herr_t request_free(void* req) noexcept {
  return forward(
      "request free", req, nullptr,
      [&](void* under, hid_t id) { return H5VLrequest_free(under, id); }, OnSuccess::kFreeWrapper);
}

herr_t blob_put(void* obj, const void* buf, size_t size, void* blob_id, void* ctx) noexcept {
  return forward("blob put", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLblob_put(under, id, buf, size, blob_id, ctx);
  });
}

herr_t blob_get(void* obj, const void* blob_id, void* buf, size_t size, void* ctx) noexcept {
  return forward("blob get", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLblob_get(under, id, blob_id, buf, size, ctx);
  });
}

herr_t blob_specific(void* obj, void* blob_id, H5VL_blob_specific_args_t* args) noexcept {
  return forward("blob specific", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLblob_specific(under, id, blob_id, args);
  });
}

herr_t blob_optional(void* obj, void* blob_id, H5VL_optional_args_t* args) noexcept {
  return forward("blob optional", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLblob_optional(under, id, blob_id, args);
  });
}

herr_t token_cmp(void* obj, const H5O_token_t* token1, const H5O_token_t* token2,
                 int* cmp_value) noexcept {
  return forward("token compare", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLtoken_cmp(under, id, token1, token2, cmp_value);
  });
}

herr_t token_to_str(void* obj, H5I_type_t obj_type, const H5O_token_t* token,
                    char** token_str) noexcept {
  return forward("token to string", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLtoken_to_str(under, obj_type, id, token, token_str);
  });
}

herr_t token_from_str(void* obj, H5I_type_t obj_type, const char* token_str,
                      H5O_token_t* token) noexcept {
  return forward("token from string", obj, nullptr, [&](void* under, hid_t id) {
    return H5VLtoken_from_str(under, obj_type, id, token_str, token);
  });
}

herr_t generic_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept {
  return forward("optional", obj, req, [&](void* under, hid_t id) {
    return H5VLoptional(under, id, args, dxpl_id, req);
  });
}

}  // namespace larder::vol
