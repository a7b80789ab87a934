// The hdf5 SampleReader (sample_reader.hpp): h5py's f['records'][i] (or every 'records_k' of a
// DLIO HEAD file) through the HDF5 library, or, with the larder backend, the same slab read
// through Larder at the offset the HDF5 library reports for the contiguous dataset.
#include <fmt/format.h>

#include <map>
#include <vector>

#include "apps/larder-bench/data/hdf5_handle.hpp"
#include "apps/larder-bench/io/sample_reader.hpp"

namespace larder::bench {
namespace {

struct Extent {
  haddr_t offset = HADDR_UNDEF;  // of the dataset's data in the file (contiguous layout)
  std::uint64_t sample_bytes = 0;
};

// 'records' (mlperf_storage v2.0) or 'records_0', 'records_1', ... (DLIO HEAD).
std::vector<std::string> record_names(hid_t file) {
  if (H5Lexists(file, "records", H5P_DEFAULT) > 0) return {"records"};
  std::vector<std::string> names;
  for (int k = 0;; ++k) {
    std::string n = fmt::format("records_{}", k);
    if (H5Lexists(file, n.c_str(), H5P_DEFAULT) <= 0) break;
    names.push_back(std::move(n));
  }
  return names;
}

class Hdf5Reader final : public SampleReader {
 public:
  Hdf5Reader(IoBackend& io, std::size_t transfer, bool larder_io)
      : io_(io), buf_(transfer), larder_io_(larder_io) {}

  Result<std::uint64_t> read(const std::string& path, std::int64_t sample) override {
    return larder_io_ ? read_through_backend(path, sample) : read_with_hdf5(path, sample);
  }

 private:
  Result<std::uint64_t> read_with_hdf5(const std::string& path, std::int64_t sample);
  Result<std::uint64_t> read_through_backend(const std::string& path, std::int64_t sample);
  Result<std::vector<Extent>> extents(const std::string& path);

  IoBackend& io_;
  AlignedBuffer buf_;
  bool larder_io_;
  std::vector<std::uint8_t> slab_;
  std::map<std::string, std::vector<Extent>> extents_;  // per file, found once
};

Result<std::uint64_t> Hdf5Reader::read_with_hdf5(const std::string& path, std::int64_t sample) {
  const std::lock_guard<std::mutex> lock(hdf5_mutex());
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) return hdf5_error("cannot open " + path);
  std::uint64_t total = 0;
  for (const std::string& name : record_names(file.get())) {
    Hid dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    Hid space(dset.valid() ? H5Dget_space(dset.get()) : H5I_INVALID_HID, H5Sclose);
    hsize_t dims[3] = {0, 0, 0};
    if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) != 3 ||
        H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0) {
      return hdf5_error(fmt::format("{}:{} is not a 3-d dataset", path, name));
    }
    const hsize_t start[3] = {static_cast<hsize_t>(sample), 0, 0};
    const hsize_t count[3] = {1, dims[1], dims[2]};
    slab_.resize(dims[1] * dims[2]);
    Hid mem(H5Screate_simple(3, count, nullptr), H5Sclose);
    if (!mem.valid() ||
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dread(dset.get(), H5T_NATIVE_UINT8, mem.get(), space.get(), H5P_DEFAULT, slab_.data()) <
            0) {
      return hdf5_error(fmt::format("cannot read {}:{}[{}]", path, name, sample));
    }
    total += slab_.size();
  }
  return total;
}

Result<std::vector<Extent>> Hdf5Reader::extents(const std::string& path) {
  if (auto it = extents_.find(path); it != extents_.end()) return it->second;
  const std::lock_guard<std::mutex> lock(hdf5_mutex());
  Hid file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) return hdf5_error("cannot open " + path);
  std::vector<Extent> out;
  for (const std::string& name : record_names(file.get())) {
    Hid dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    Hid space(dset.valid() ? H5Dget_space(dset.get()) : H5I_INVALID_HID, H5Sclose);
    hsize_t dims[3] = {0, 0, 0};
    if (!space.valid() || H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 3) {
      return hdf5_error(fmt::format("{}:{} is not a 3-d dataset", path, name));
    }
    Extent e{H5Dget_offset(dset.get()), dims[1] * dims[2]};
    if (e.offset == HADDR_UNDEF) {
      return Status::error(fmt::format(
          "{}:{} is chunked or unallocated: --io larder reads contiguous hdf5 datasets only "
          "(use --io hdf5 with the VOL connector, or --io preload)",
          path, name));
    }
    out.push_back(e);
  }
  extents_[path] = out;
  return out;
}

Result<std::uint64_t> Hdf5Reader::read_through_backend(const std::string& path,
                                                       std::int64_t sample) {
  auto ext = extents(path);
  if (!ext.ok()) return ext.status();
  auto file = io_.open(path);
  if (!file.ok()) return file.status();
  std::uint64_t total = 0;
  for (const Extent& e : ext.value()) {
    auto n =
        read_range(*file.value(), buf_.span(),
                   e.offset + e.sample_bytes * static_cast<std::uint64_t>(sample), e.sample_bytes);
    if (!n.ok()) return n.status();
    total += n.value();
  }
  return total;
}

}  // namespace

Result<std::unique_ptr<SampleReader>> make_hdf5_reader(const Workload& w, IoBackend& io,
                                                       bool larder_io) {
  {
    const std::lock_guard<std::mutex> lock(hdf5_mutex());
    quiet_hdf5();
  }
  return std::unique_ptr<SampleReader>(
      new Hdf5Reader(io, static_cast<std::size_t>(w.transfer_bytes()), larder_io));
}

}  // namespace larder::bench
