#include "apps/larder-bench/data/hdf5_handle.hpp"

namespace larder::bench {
namespace {

// Keeps the innermost (first) description of the stack: the real cause.
herr_t first_message(unsigned n, const H5E_error2_t* err, void* out) {
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

}  // namespace

std::mutex& hdf5_mutex() noexcept {
  static std::mutex mu;  // process-wide: the HDF5 library's state is
  return mu;
}

void quiet_hdf5() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Status hdf5_error(const std::string& what) {
  std::string cause;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &first_message, &cause);
  H5Eclear2(H5E_DEFAULT);
  return Status::error(what + (cause.empty() ? std::string(": HDF5 error") : ": " + cause));
}

}  // namespace larder::bench
