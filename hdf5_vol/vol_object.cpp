#include "hdf5_vol/vol_object.hpp"

#include <new>

#include "hdf5_vol/errors.hpp"

namespace larder::vol {

VolObject* wrap_new(void* under_object, hid_t under_vol_id) noexcept {
  if (under_object == nullptr) return nullptr;
  auto* object = new (std::nothrow) VolObject{under_vol_id, under_object};
  if (object == nullptr) {
    push_error(Minor::kInternal, "out of memory wrapping an object");
    return nullptr;
  }
  if (H5Iinc_ref(under_vol_id) < 0) {
    delete object;
    push_error(Minor::kBadObject, "the under connector ID is not valid");
    return nullptr;
  }
  return object;
}

void free_wrapper(VolObject* object) noexcept {
  if (object == nullptr) return;
  {
    ErrorStackKeeper keep;
    H5Idec_ref(object->under_vol_id);
  }
  delete object;
}

void wrap_request(void** req, hid_t under_vol_id) noexcept {
  if (req == nullptr || *req == nullptr) return;
  if (VolObject* wrapped = wrap_new(*req, under_vol_id)) *req = wrapped;
}

}  // namespace larder::vol
