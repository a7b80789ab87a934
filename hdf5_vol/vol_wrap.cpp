// wrap_cls: how HDF5 wraps objects it creates on the connector's behalf (iteration and visit
// callbacks, H5Rdereference, H5Fget_obj_ids). An incomplete wrap class breaks H5Literate/H5Ovisit.
#include <new>

#include "hdf5_vol/callbacks.hpp"
#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/vol_object.hpp"

namespace larder::vol {

void* wrap_get_object(const void* obj) noexcept {
  const auto* o = static_cast<const VolObject*>(obj);
  if (o == nullptr) {
    push_error(Minor::kBadObject, "get_object: null object");
    return nullptr;
  }
  return H5VLget_object(o->under_object, o->under_vol_id);
}

herr_t wrap_get_ctx(const void* obj, void** wrap_ctx) noexcept {
  const auto* o = static_cast<const VolObject*>(obj);
  if (o == nullptr || wrap_ctx == nullptr) {
    push_error(Minor::kBadObject, "get_wrap_ctx: null object");
    return -1;
  }
  auto* ctx = new (std::nothrow) WrapCtx{o->under_vol_id, nullptr};
  if (ctx == nullptr) {
    push_error(Minor::kInternal, "get_wrap_ctx: out of memory");
    return -1;
  }
  if (H5VLget_wrap_ctx(o->under_object, o->under_vol_id, &ctx->under_wrap_ctx) < 0) {
    delete ctx;
    return -1;
  }
  if (H5Iinc_ref(o->under_vol_id) < 0) {
    {
      ErrorStackKeeper keep;
      if (ctx->under_wrap_ctx) H5VLfree_wrap_ctx(ctx->under_wrap_ctx, o->under_vol_id);
    }
    delete ctx;
    return -1;
  }
  *wrap_ctx = ctx;
  return 0;
}

void* wrap_object(void* obj, H5I_type_t obj_type, void* wrap_ctx) noexcept {
  auto* ctx = static_cast<WrapCtx*>(wrap_ctx);
  if (ctx == nullptr) {
    push_error(Minor::kBadObject, "wrap_object: null wrap context");
    return nullptr;
  }
  void* under = H5VLwrap_object(obj, obj_type, ctx->under_vol_id, ctx->under_wrap_ctx);
  return under ? wrap_new(under, ctx->under_vol_id) : nullptr;
}

void* unwrap_object(void* obj) noexcept {
  auto* o = static_cast<VolObject*>(obj);
  if (o == nullptr) {
    push_error(Minor::kBadObject, "unwrap_object: null object");
    return nullptr;
  }
  void* under = H5VLunwrap_object(o->under_object, o->under_vol_id);
  if (under != nullptr) free_wrapper(o);
  return under;
}

herr_t wrap_free_ctx(void* wrap_ctx) noexcept {
  auto* ctx = static_cast<WrapCtx*>(wrap_ctx);
  if (ctx == nullptr) return 0;
  {
    ErrorStackKeeper keep;
    if (ctx->under_wrap_ctx) H5VLfree_wrap_ctx(ctx->under_wrap_ctx, ctx->under_vol_id);
    H5Idec_ref(ctx->under_vol_id);
  }
  delete ctx;
  return 0;
}

}  // namespace larder::vol
