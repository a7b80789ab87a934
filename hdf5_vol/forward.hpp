// forward: the one helper behind every pass-through callback.
//
// It checks the object (a null object gets an error, never a crash), calls `fn(under_object,
// under_vol_id)` — the matching H5VL* routine of the under connector — inside a noexcept
// boundary, wraps the asynchronous request the under connector may have produced, and frees our
// wrapper after a successful close. forward_new is the same for callbacks that return an object.
#ifndef LARDER_HDF5_VOL_FORWARD_HPP_
#define LARDER_HDF5_VOL_FORWARD_HPP_

#include <hdf5.h>

#include <new>
#include <string>
#include <utility>

#include "hdf5_vol/errors.hpp"
#include "hdf5_vol/vol_object.hpp"

namespace larder::vol {

enum class OnSuccess { kKeepWrapper, kFreeWrapper };

template <class Fn>
herr_t forward(const char* what, void* obj, void** req, Fn&& fn,
               OnSuccess after = OnSuccess::kKeepWrapper) noexcept {
  auto* o = static_cast<VolObject*>(obj);
  if (o == nullptr) {
    push_error(Minor::kBadObject, std::string(what) + ": null object");
    return -1;
  }
  const hid_t under_vol_id = o->under_vol_id;  // `o` may be gone after a refresh or close
  herr_t rc = -1;
  try {
    rc = std::forward<Fn>(fn)(o->under_object, under_vol_id);
  } catch (const std::bad_alloc&) {
    push_error(Minor::kInternal, std::string(what) + ": out of memory");
    return -1;
  } catch (...) {
    push_error(Minor::kInternal, std::string(what) + ": unexpected exception");
    return -1;
  }
  wrap_request(req, under_vol_id);
  if (rc >= 0 && after == OnSuccess::kFreeWrapper) free_wrapper(o);
  return rc;
}

template <class Fn>
void* forward_new(const char* what, void* obj, void** req, Fn&& fn) noexcept {
  void* result = nullptr;
  forward(what, obj, req, [&](void* under, hid_t under_vol_id) -> herr_t {
    void* made = fn(under, under_vol_id);
    if (made == nullptr) return -1;
    result = wrap_new(made, under_vol_id);
    return result != nullptr ? 0 : -1;
  });
  return result;
}

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_FORWARD_HPP_
