// Every callback of the connector's class table (vol_class.cpp), by sub-class. Each is a noexcept
// boundary that forwards to the under connector (forward.hpp); only file open and the file
// probes (vol_file.cpp) do more: they route read-only opens through the cache (cache_route.hpp).
#ifndef LARDER_HDF5_VOL_CALLBACKS_HPP_
#define LARDER_HDF5_VOL_CALLBACKS_HPP_

#include <hdf5.h>

namespace larder::vol {

// The class table itself (get_conn_cls returns it for the current level).
const H5VL_class_t& connector_class() noexcept;

herr_t connector_init(hid_t vipl_id) noexcept;
herr_t connector_term() noexcept;

// info_cls (vol_info.cpp)
void* info_copy(const void* info) noexcept;
herr_t info_cmp(int* cmp_value, const void* info1, const void* info2) noexcept;
herr_t info_free(void* info) noexcept;
herr_t info_to_str(const void* info, char** str) noexcept;
herr_t str_to_info(const char* str, void** info) noexcept;

// wrap_cls (vol_wrap.cpp)
void* wrap_get_object(const void* obj) noexcept;
herr_t wrap_get_ctx(const void* obj, void** wrap_ctx) noexcept;
void* wrap_object(void* obj, H5I_type_t obj_type, void* wrap_ctx) noexcept;
void* unwrap_object(void* obj) noexcept;
herr_t wrap_free_ctx(void* wrap_ctx) noexcept;

// attr_cls (vol_attr.cpp)
void* attr_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t type_id,
                  hid_t space_id, hid_t acpl_id, hid_t aapl_id, hid_t dxpl_id, void** req) noexcept;
void* attr_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t aapl_id,
                hid_t dxpl_id, void** req) noexcept;
herr_t attr_read(void* attr, hid_t mem_type_id, void* buf, hid_t dxpl_id, void** req) noexcept;
herr_t attr_write(void* attr, hid_t mem_type_id, const void* buf, hid_t dxpl_id,
                  void** req) noexcept;
herr_t attr_get(void* obj, H5VL_attr_get_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t attr_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_attr_specific_args_t* args,
                     hid_t dxpl_id, void** req) noexcept;
herr_t attr_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t attr_close(void* attr, hid_t dxpl_id, void** req) noexcept;

// dataset_cls (vol_dataset.cpp)
void* dataset_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t lcpl_id,
                     hid_t type_id, hid_t space_id, hid_t dcpl_id, hid_t dapl_id, hid_t dxpl_id,
                     void** req) noexcept;
void* dataset_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t dapl_id,
                   hid_t dxpl_id, void** req) noexcept;
herr_t dataset_read(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                    hid_t file_space_id[], hid_t dxpl_id, void* buf[], void** req) noexcept;
herr_t dataset_write(size_t count, void* dset[], hid_t mem_type_id[], hid_t mem_space_id[],
                     hid_t file_space_id[], hid_t dxpl_id, const void* buf[], void** req) noexcept;
herr_t dataset_get(void* dset, H5VL_dataset_get_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t dataset_specific(void* obj, H5VL_dataset_specific_args_t* args, hid_t dxpl_id,
                        void** req) noexcept;
herr_t dataset_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t dataset_close(void* dset, hid_t dxpl_id, void** req) noexcept;

// datatype_cls (vol_datatype.cpp)
void* datatype_commit(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t type_id,
                      hid_t lcpl_id, hid_t tcpl_id, hid_t tapl_id, hid_t dxpl_id,
                      void** req) noexcept;
void* datatype_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t tapl_id,
                    hid_t dxpl_id, void** req) noexcept;
herr_t datatype_get(void* dt, H5VL_datatype_get_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t datatype_specific(void* obj, H5VL_datatype_specific_args_t* args, hid_t dxpl_id,
                         void** req) noexcept;
herr_t datatype_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t datatype_close(void* dt, hid_t dxpl_id, void** req) noexcept;

// file_cls (vol_file.cpp)
void* file_create(const char* name, unsigned flags, hid_t fcpl_id, hid_t fapl_id, hid_t dxpl_id,
                  void** req) noexcept;
void* file_open(const char* name, unsigned flags, hid_t fapl_id, hid_t dxpl_id,
                void** req) noexcept;
herr_t file_get(void* file, H5VL_file_get_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t file_specific(void* file, H5VL_file_specific_args_t* args, hid_t dxpl_id,
                     void** req) noexcept;
herr_t file_optional(void* file, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t file_close(void* file, hid_t dxpl_id, void** req) noexcept;

// group_cls (vol_group.cpp)
void* group_create(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t lcpl_id,
                   hid_t gcpl_id, hid_t gapl_id, hid_t dxpl_id, void** req) noexcept;
void* group_open(void* obj, const H5VL_loc_params_t* loc, const char* name, hid_t gapl_id,
                 hid_t dxpl_id, void** req) noexcept;
herr_t group_get(void* obj, H5VL_group_get_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t group_specific(void* obj, H5VL_group_specific_args_t* args, hid_t dxpl_id,
                      void** req) noexcept;
herr_t group_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;
herr_t group_close(void* grp, hid_t dxpl_id, void** req) noexcept;

// link_cls (vol_link.cpp)
herr_t link_create(H5VL_link_create_args_t* args, void* obj, const H5VL_loc_params_t* loc,
                   hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id, void** req) noexcept;
herr_t link_copy(void* src_obj, const H5VL_loc_params_t* loc1, void* dst_obj,
                 const H5VL_loc_params_t* loc2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req) noexcept;
herr_t link_move(void* src_obj, const H5VL_loc_params_t* loc1, void* dst_obj,
                 const H5VL_loc_params_t* loc2, hid_t lcpl_id, hid_t lapl_id, hid_t dxpl_id,
                 void** req) noexcept;
herr_t link_get(void* obj, const H5VL_loc_params_t* loc, H5VL_link_get_args_t* args, hid_t dxpl_id,
                void** req) noexcept;
herr_t link_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_link_specific_args_t* args,
                     hid_t dxpl_id, void** req) noexcept;
herr_t link_optional(void* obj, const H5VL_loc_params_t* loc, H5VL_optional_args_t* args,
                     hid_t dxpl_id, void** req) noexcept;

// object_cls (vol_object_cls.cpp)
void* object_open(void* obj, const H5VL_loc_params_t* loc, H5I_type_t* opened_type, hid_t dxpl_id,
                  void** req) noexcept;
herr_t object_copy(void* src_obj, const H5VL_loc_params_t* src_loc, const char* src_name,
                   void* dst_obj, const H5VL_loc_params_t* dst_loc, const char* dst_name,
                   hid_t ocpypl_id, hid_t lcpl_id, hid_t dxpl_id, void** req) noexcept;
herr_t object_get(void* obj, const H5VL_loc_params_t* loc, H5VL_object_get_args_t* args,
                  hid_t dxpl_id, void** req) noexcept;
herr_t object_specific(void* obj, const H5VL_loc_params_t* loc, H5VL_object_specific_args_t* args,
                       hid_t dxpl_id, void** req) noexcept;
herr_t object_optional(void* obj, const H5VL_loc_params_t* loc, H5VL_optional_args_t* args,
                       hid_t dxpl_id, void** req) noexcept;

// introspect_cls, request_cls, blob_cls, token_cls and the catch-all (vol_services.cpp)
herr_t introspect_get_conn_cls(void* obj, H5VL_get_conn_lvl_t lvl,
                               const H5VL_class_t** conn_cls) noexcept;
herr_t introspect_get_cap_flags(const void* info, uint64_t* cap_flags) noexcept;
herr_t introspect_opt_query(void* obj, H5VL_subclass_t cls, int opt_type, uint64_t* flags) noexcept;
herr_t request_wait(void* req, uint64_t timeout, H5VL_request_status_t* status) noexcept;
herr_t request_notify(void* req, H5VL_request_notify_t cb, void* ctx) noexcept;
herr_t request_cancel(void* req, H5VL_request_status_t* status) noexcept;
herr_t request_specific(void* req, H5VL_request_specific_args_t* args) noexcept;
herr_t request_optional(void* req, H5VL_optional_args_t* args) noexcept;
herr_t request_free(void* req) noexcept;
herr_t blob_put(void* obj, const void* buf, size_t size, void* blob_id, void* ctx) noexcept;
herr_t blob_get(void* obj, const void* blob_id, void* buf, size_t size, void* ctx) noexcept;
herr_t blob_specific(void* obj, void* blob_id, H5VL_blob_specific_args_t* args) noexcept;
herr_t blob_optional(void* obj, void* blob_id, H5VL_optional_args_t* args) noexcept;
herr_t token_cmp(void* obj, const H5O_token_t* token1, const H5O_token_t* token2,
                 int* cmp_value) noexcept;
herr_t token_to_str(void* obj, H5I_type_t obj_type, const H5O_token_t* token,
                    char** token_str) noexcept;
herr_t token_from_str(void* obj, H5I_type_t obj_type, const char* token_str,
                      H5O_token_t* token) noexcept;
herr_t generic_optional(void* obj, H5VL_optional_args_t* args, hid_t dxpl_id, void** req) noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_CALLBACKS_HPP_
