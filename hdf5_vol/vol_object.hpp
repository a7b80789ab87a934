// VolObject: what the connector hands HDF5 in place of every object, request and blob owner:
// the under connector's object plus the under connector's ID, on which it holds a reference.
#ifndef LARDER_HDF5_VOL_VOL_OBJECT_HPP_
#define LARDER_HDF5_VOL_VOL_OBJECT_HPP_

#include <hdf5.h>

namespace larder::vol {

struct VolObject {
  hid_t under_vol_id;  // referenced (H5Iinc_ref) for the wrapper's life
  void* under_object;
};

// The wrap context (wrap_cls): the under connector's context plus its ID, referenced.
struct WrapCtx {
  hid_t under_vol_id;
  void* under_wrap_ctx;
};

// Wraps `under_object`; null (with an error pushed) when it is null or memory runs out.
VolObject* wrap_new(void* under_object, hid_t under_vol_id) noexcept;
// Drops the wrapper and its reference, keeping the caller's error stack.
void free_wrapper(VolObject* object) noexcept;
// Wraps an asynchronous request the under connector produced, if any.
void wrap_request(void** req, hid_t under_vol_id) noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_VOL_OBJECT_HPP_
