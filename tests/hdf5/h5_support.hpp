// Test helpers for the HDF5 connector: owned HDF5 IDs, property lists for native and connector
// opens, the DLIO-style file and the file zoo, and reading a dataset into comparable bytes.
#ifndef LARDER_TESTS_HDF5_H5_SUPPORT_HPP_
#define LARDER_TESTS_HDF5_H5_SUPPORT_HPP_

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace larder::testing {

// One owned HDF5 ID and the function that closes it.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer close) noexcept : id_(id), close_(close) {}
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Hid& operator=(Hid o) noexcept {
    std::swap(id_, o.id_);
    std::swap(close_, o.close_);
    return *this;
  }
  ~Hid() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
  }
  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

Hid file_hid(hid_t id);
Hid plist_hid(hid_t id);
Hid space_hid(hid_t id);
Hid type_hid(hid_t id);
Hid dataset_hid(hid_t id);

// A file access property list with the native connector, whatever HDF5_VOL_CONNECTOR says.
Hid native_fapl();
// One with the larder connector (loaded from HDF5_PLUGIN_PATH) and `info` as its info string;
// invalid when the string is refused.
Hid larder_fapl(const std::string& info = "under_vol=0;under_info={}");
// The connector's ID (registered once; the caller does not close it).
hid_t larder_connector_id();

// DLIO's HDF5 layout: `records` uint8 (n, d1, d2) and `labels` int64 (n).
struct DlioShape {
  hsize_t samples = 64;
  hsize_t d1 = 32;
  hsize_t d2 = 48;
};
enum class DlioLayout { kContiguous, kChunkedGzip };
std::uint8_t dlio_byte(hsize_t sample, hsize_t row, hsize_t col);
void write_dlio_file(const std::string& path, const DlioShape& shape, DlioLayout layout);

// Every type, layout and link kind of the issue, in `dir`/zoo.h5 (+ zoo_ext.h5, the target of
// its external link). Written with the native connector.
void write_zoo(const std::string& dir);

// The paths of every dataset reachable in `file`, sorted.
std::vector<std::string> dataset_paths(hid_t file);
// A dataset's whole contents in the native memory type, variable-length data flattened into
// comparable bytes (string contents, sequence contents), so two reads compare with ==.
std::vector<std::byte> read_canonical(hid_t file, const std::string& path);
// The whole file, by POSIX read.
std::vector<std::byte> file_bytes(const std::string& path);

}  // namespace larder::testing

#endif  // LARDER_TESTS_HDF5_H5_SUPPORT_HPP_
