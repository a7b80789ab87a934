#include "apps/larder-bench/data/hdf5_writer.hpp"

#include <algorithm>

#include "apps/larder-bench/data/hdf5_handle.hpp"
#include "apps/larder-bench/data/output_file.hpp"

namespace larder::bench {
namespace {

constexpr std::int64_t kRowBlockBytes = 4 << 20;

Result<Hid> create_file(const std::string& path, const Hdf5Layout& layout) {
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid()) return hdf5_error("cannot create a file access list");
  if (layout.libver_latest &&
      H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0) {
    return hdf5_error("cannot set libver latest");
  }
  Hid file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  if (!file.valid()) return hdf5_error("cannot create " + path);
  return file;
}

Result<Hid> records_dcpl(const Hdf5Layout& layout) {
  Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!dcpl.valid()) return hdf5_error("cannot create a dataset creation list");
  if (layout.chunk_dim > 0) {
    const hsize_t chunk[3] = {1, static_cast<hsize_t>(layout.chunk_dim),
                              static_cast<hsize_t>(layout.chunk_dim)};
    if (H5Pset_chunk(dcpl.get(), 3, chunk) < 0) return hdf5_error("cannot set chunks");
    if (layout.gzip_level >= 0 &&
        H5Pset_deflate(dcpl.get(), static_cast<unsigned>(layout.gzip_level)) < 0) {
      return hdf5_error("cannot set gzip");
    }
  }
  return dcpl;
}

Status write_records(hid_t file, const std::string& name, Dims dims, std::int64_t samples,
                     hid_t dcpl, std::uint64_t seed, const std::string& path) {
  const hsize_t shape[3] = {static_cast<hsize_t>(samples), static_cast<hsize_t>(dims.d1),
                            static_cast<hsize_t>(dims.d2)};
  Hid space(H5Screate_simple(3, shape, nullptr), H5Sclose);
  Hid dset(
      H5Dcreate2(file, name.c_str(), H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl, H5P_DEFAULT),
      H5Dclose);
  if (!space.valid() || !dset.valid()) return hdf5_error("cannot create " + path + ":" + name);
  const std::int64_t rows = std::clamp<std::int64_t>(kRowBlockBytes / dims.d2, 1, dims.d1);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(rows * dims.d2));
  for (std::int64_t k = 0; k < samples; ++k) {
    for (std::int64_t r = 0; r < dims.d1; r += rows) {
      const std::int64_t n = std::min(rows, dims.d1 - r);
      const hsize_t start[3] = {static_cast<hsize_t>(k), static_cast<hsize_t>(r), 0};
      const hsize_t count[3] = {1, static_cast<hsize_t>(n), static_cast<hsize_t>(dims.d2)};
      fill_content(seed, static_cast<std::uint64_t>((k * dims.d1 + r) * dims.d2),
                   std::span(buf.data(), static_cast<std::size_t>(n * dims.d2)));
      Hid mem(H5Screate_simple(3, count, nullptr), H5Sclose);
      if (!mem.valid() ||
          H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
          H5Dwrite(dset.get(), H5T_NATIVE_UINT8, mem.get(), space.get(), H5P_DEFAULT, buf.data()) <
              0) {
        return hdf5_error("cannot write " + path + ":" + name);
      }
    }
  }
  return {};
}

Status write_labels(hid_t file, std::int64_t samples, const std::string& path) {
  const hsize_t shape[1] = {static_cast<hsize_t>(samples)};
  Hid space(H5Screate_simple(1, shape, nullptr), H5Sclose);
  Hid dset(
      H5Dcreate2(file, "labels", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  const std::vector<std::int64_t> zeros(static_cast<std::size_t>(samples), 0);
  if (!space.valid() || !dset.valid() ||
      H5Dwrite(dset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, zeros.data()) < 0) {
    return hdf5_error("cannot write " + path + ":labels");
  }
  return {};
}

}  // namespace

Status write_hdf5(const std::string& path, Dims dims, std::int64_t samples,
                  const Hdf5Layout& layout, std::uint64_t seed) {
  auto file = create_file(path, layout);
  if (!file.ok()) return file.status();
  auto dcpl = records_dcpl(layout);
  if (!dcpl.ok()) return dcpl.status();
  std::uint64_t dataset_seed = seed;
  for (const std::string& name : layout.record_datasets) {
    Status s = write_records(file->get(), name, dims, samples, dcpl->get(), dataset_seed++, path);
    if (!s.ok()) return s;
  }
  if (Status s = write_labels(file->get(), samples, path); !s.ok()) return s;
  if (H5Fclose(file->release()) < 0) return hdf5_error("cannot close " + path);
  return {};
}

}  // namespace larder::bench
