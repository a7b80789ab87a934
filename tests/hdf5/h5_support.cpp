#include "tests/hdf5/h5_support.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace larder::testing {

Hid file_hid(hid_t id) {
  return Hid(id, &H5Fclose);
}
Hid plist_hid(hid_t id) {
  return Hid(id, &H5Pclose);
}
Hid space_hid(hid_t id) {
  return Hid(id, &H5Sclose);
}
Hid type_hid(hid_t id) {
  return Hid(id, &H5Tclose);
}
Hid dataset_hid(hid_t id) {
  return Hid(id, &H5Dclose);
}

Hid native_fapl() {
  Hid fapl = plist_hid(H5Pcreate(H5P_FILE_ACCESS));
  if (H5Pset_vol(fapl.get(), H5VL_NATIVE, nullptr) < 0) throw std::runtime_error("H5Pset_vol");
  return fapl;
}

hid_t larder_connector_id() {
  static const hid_t id = H5VLregister_connector_by_name("larder", H5P_DEFAULT);
  return id;
}

Hid larder_fapl(const std::string& info) {
  const hid_t id = larder_connector_id();
  if (id < 0) throw std::runtime_error("the larder connector is not in HDF5_PLUGIN_PATH");
  void* vol_info = nullptr;
  if (H5VLconnector_str_to_info(info.c_str(), id, &vol_info) < 0) return {};
  Hid fapl = plist_hid(H5Pcreate(H5P_FILE_ACCESS));
  const herr_t rc = H5Pset_vol(fapl.get(), id, vol_info);
  H5VLfree_connector_info(id, vol_info);
  if (rc < 0) throw std::runtime_error("H5Pset_vol(larder)");
  return fapl;
}

namespace {

herr_t collect_dataset(hid_t, const char* name, const H5O_info2_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET)
    static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
  return 0;
}

void append(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

// Variable-length strings and sequences as their contents, each prefixed by its length.
std::vector<std::byte> read_variable(hid_t dset, hid_t mem_type, hsize_t count, bool is_string) {
  std::vector<std::byte> out;
  if (is_string) {
    std::vector<char*> strings(count);
    if (H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, strings.data()) < 0)
      throw std::runtime_error("H5Dread of strings");
    for (char* s : strings) {
      const std::uint64_t n = s ? std::strlen(s) : ~0ull;
      append(out, &n, sizeof n);
      if (s) append(out, s, std::strlen(s));
    }
    Hid space = space_hid(H5Dget_space(dset));
    H5Treclaim(mem_type, space.get(), H5P_DEFAULT, strings.data());
    return out;
  }
  Hid base = type_hid(H5Tget_super(mem_type));
  const std::size_t elem = H5Tget_size(base.get());
  std::vector<hvl_t> seqs(count);
  if (H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, seqs.data()) < 0)
    throw std::runtime_error("H5Dread of sequences");
  for (const hvl_t& v : seqs) {
    append(out, &v.len, sizeof v.len);
    append(out, v.p, v.len * elem);
  }
  Hid space = space_hid(H5Dget_space(dset));
  H5Treclaim(mem_type, space.get(), H5P_DEFAULT, seqs.data());
  return out;
}

}  // namespace

std::vector<std::string> dataset_paths(hid_t file) {
  std::vector<std::string> paths;
  if (H5Ovisit3(file, H5_INDEX_NAME, H5_ITER_INC, &collect_dataset, &paths, H5O_INFO_BASIC) < 0)
    throw std::runtime_error("H5Ovisit3");
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<std::byte> read_canonical(hid_t file, const std::string& path) {
  Hid dset = dataset_hid(H5Dopen2(file, path.c_str(), H5P_DEFAULT));
  if (!dset.valid()) throw std::runtime_error("H5Dopen2 " + path);
  Hid file_type = type_hid(H5Dget_type(dset.get()));
  Hid mem_type = type_hid(H5Tget_native_type(file_type.get(), H5T_DIR_DEFAULT));
  Hid space = space_hid(H5Dget_space(dset.get()));
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0) throw std::runtime_error("npoints " + path);
  if (count == 0) return {};
  const bool vlen_string = H5Tis_variable_str(mem_type.get()) > 0;
  if (vlen_string || H5Tget_class(mem_type.get()) == H5T_VLEN)
    return read_variable(dset.get(), mem_type.get(), static_cast<hsize_t>(count), vlen_string);
  std::vector<std::byte> out(static_cast<std::size_t>(count) * H5Tget_size(mem_type.get()));
  if (H5Dread(dset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    throw std::runtime_error("H5Dread " + path);
  return out;
}

std::vector<std::byte> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

}  // namespace larder::testing
