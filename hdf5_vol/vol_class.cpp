// The connector's class table, its life cycle and the plugin entry points.
#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/larder_vol.h"

#define LARDER_VOL_EXPORT __attribute__((visibility("default")))

namespace larder::vol {
namespace {

constexpr H5VL_class_t kLarderVol = {
    .version = H5VL_VERSION,
    .value = LARDER_VOL_VALUE,
    .name = LARDER_VOL_NAME,
    .conn_version = LARDER_VOL_VERSION,
    .cap_flags = H5VL_CAP_FLAG_NONE,  // get_cap_flags reports the under connector's
    .initialize = &connector_init,
    .terminate = &connector_term,
    .info_cls = {.size = sizeof(larder_vol_info_t),
                 .copy = &info_copy,
                 .cmp = &info_cmp,
                 .free = &info_free,
                 .to_str = &info_to_str,
                 .from_str = &str_to_info},
    .wrap_cls = {.get_object = &wrap_get_object,
                 .get_wrap_ctx = &wrap_get_ctx,
                 .wrap_object = &wrap_object,
                 .unwrap_object = &unwrap_object,
                 .free_wrap_ctx = &wrap_free_ctx},
    .attr_cls = {.create = &attr_create,
                 .open = &attr_open,
                 .read = &attr_read,
                 .write = &attr_write,
                 .get = &attr_get,
                 .specific = &attr_specific,
                 .optional = &attr_optional,
                 .close = &attr_close},
    .dataset_cls = {.create = &dataset_create,
                    .open = &dataset_open,
                    .read = &dataset_read,
                    .write = &dataset_write,
                    .get = &dataset_get,
                    .specific = &dataset_specific,
                    .optional = &dataset_optional,
                    .close = &dataset_close},
    .datatype_cls = {.commit = &datatype_commit,
                     .open = &datatype_open,
                     .get = &datatype_get,
                     .specific = &datatype_specific,
                     .optional = &datatype_optional,
                     .close = &datatype_close},
    .file_cls = {.create = &file_create,
                 .open = &file_open,
                 .get = &file_get,
                 .specific = &file_specific,
                 .optional = &file_optional,
                 .close = &file_close},
    .group_cls = {.create = &group_create,
                  .open = &group_open,
                  .get = &group_get,
                  .specific = &group_specific,
                  .optional = &group_optional,
                  .close = &group_close},
    .link_cls = {.create = &link_create,
                 .copy = &link_copy,
                 .move = &link_move,
                 .get = &link_get,
                 .specific = &link_specific,
                 .optional = &link_optional},
    .object_cls = {.open = &object_open,
                   .copy = &object_copy,
                   .get = &object_get,
                   .specific = &object_specific,
                   .optional = &object_optional},
    .introspect_cls = {.get_conn_cls = &introspect_get_conn_cls,
                       .get_cap_flags = &introspect_get_cap_flags,
                       .opt_query = &introspect_opt_query},
    .request_cls = {.wait = &request_wait,
                    .notify = &request_notify,
                    .cancel = &request_cancel,
                    .specific = &request_specific,
                    .optional = &request_optional,
                    .free = &request_free},
    .blob_cls = {.put = &blob_put,
                 .get = &blob_get,
                 .specific = &blob_specific,
                 .optional = &blob_optional},
    .token_cls = {.cmp = &token_cmp, .to_str = &token_to_str, .from_str = &token_from_str},
    .optional = &generic_optional,
};

}  // namespace

const H5VL_class_t& connector_class() noexcept {
  return kLarderVol;
}

// The cache driver and the error class are registered on first use, so nothing here can fail.
herr_t connector_init(hid_t) noexcept {
  return 0;
}

herr_t connector_term() noexcept {
  release_error_class();
  return 0;
}

}  // namespace larder::vol

extern "C" {

LARDER_VOL_EXPORT H5PL_type_t H5PLget_plugin_type(void) {
  return H5PL_TYPE_VOL;
}

LARDER_VOL_EXPORT const void* H5PLget_plugin_info(void) {
  return &larder::vol::connector_class();
}

LARDER_VOL_EXPORT hid_t larder_vol_register(void) {
  // Registering an already registered class returns its existing ID.
  return H5VLregister_connector(&larder::vol::connector_class(), H5P_DEFAULT);
}

}  // extern "C"

#undef LARDER_VOL_EXPORT
