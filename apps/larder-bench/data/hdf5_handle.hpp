// Hid: the one owner of an HDF5 identifier (file, dataset, dataspace, property list), closed with
// the matching H5*close when the owner goes away. Move-only.
//
// This HDF5 build is not thread-safe: every HDF5 call from a reader thread holds hdf5_mutex()
// (as h5py holds its global lock).
//
// hdf5_error(what) builds an error from the top of HDF5's error stack; call quiet_hdf5() once so
// HDF5 does not print its stack to stderr itself.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_HDF5_HANDLE_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_HDF5_HANDLE_HPP_

#include <hdf5.h>

#include <mutex>
#include <string>
#include <utility>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Hid& operator=(Hid&& o) noexcept {
    std::swap(id_, o.id_);
    std::swap(closer_, o.closer_);
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  ~Hid() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
  }

  hid_t get() const noexcept { return id_; }
  // Gives up ownership (to close explicitly and check the result).
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

void quiet_hdf5() noexcept;
std::mutex& hdf5_mutex() noexcept;
Status hdf5_error(const std::string& what);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_HDF5_HANDLE_HPP_
