// The connector in a serial program (MPI not initialized): it starts a cache private to the
// process at the first read-only open, and every read through it returns what native returns.
#include <gtest/gtest.h>
#include <larder/larder.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>

#include "tests/hdf5/h5_support.hpp"
#include "tests/hdf5/vol_test_files.hpp"

namespace larder::testing {
namespace {

// This process's Larder counters (the connector started Larder at its first cached open).
larder_stats_t stats() {
  larder_stats_t s{};
  EXPECT_EQ(larder_stats_get(&s), LARDER_OK) << larder_last_error();
  return s;
}

// A selection of `records` (file space), the memory space to read it into, and a name.
struct Selection {
  std::string name;
  Hid file_space;
  Hid mem_space;  // invalid: H5S_ALL
  hid_t mem(void) const { return mem_space.valid() ? mem_space.get() : H5S_ALL; }
};

std::vector<Selection> selections(hid_t dset, const DlioShape& s) {
  std::vector<Selection> out;
  auto space = [&] { return space_hid(H5Dget_space(dset)); };
  auto mem = [](std::vector<hsize_t> dims) {
    return space_hid(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  };
  out.push_back({"all", space(), {}});
  {  // one sample, as h5py's dset[i]
    Hid f = space();
    const hsize_t start[3] = {5, 0, 0}, count[3] = {1, s.d1, s.d2};
    H5Sselect_hyperslab(f.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    out.push_back({"sample", std::move(f), mem({s.d1, s.d2})});
  }
  {  // strided, into a flat buffer
    Hid f = space();
    const hsize_t start[3] = {1, 2, 3}, stride[3] = {3, 2, 5}, count[3] = {5, 4, 6};
    H5Sselect_hyperslab(f.get(), H5S_SELECT_SET, start, stride, count, nullptr);
    out.push_back({"strided", std::move(f), mem({120})});
  }
  {  // h5py fancy indexing: a union of single-sample hyperslabs
    Hid f = space();
    H5Sselect_none(f.get());
    for (hsize_t i : {3, 9, 10, 40}) {
      const hsize_t start[3] = {i, 0, 0}, count[3] = {1, s.d1, s.d2};
      H5Sselect_hyperslab(f.get(), H5S_SELECT_OR, start, nullptr, count, nullptr);
    }
    out.push_back({"fancy", std::move(f), mem({4, s.d1, s.d2})});
  }
  {  // points
    Hid f = space();
    std::mt19937 rng(7);
    std::vector<hsize_t> coords;
    for (int i = 0; i < 50; ++i) {
      coords.push_back(rng() % s.samples);
      coords.push_back(rng() % s.d1);
      coords.push_back(rng() % s.d2);
    }
    H5Sselect_elements(f.get(), H5S_SELECT_SET, 50, coords.data());
    out.push_back({"points", std::move(f), mem({50})});
  }
  {  // H5S_BLOCK as the memory space
    Hid f = space();
    const hsize_t start[3] = {2, 1, 0}, count[3] = {3, 4, s.d2};
    H5Sselect_hyperslab(f.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    out.push_back({"block", std::move(f), Hid(H5S_BLOCK, nullptr)});
  }
  return out;
}

std::vector<std::byte> read_records(hid_t file, const std::string& sel_name, hid_t mem_type,
                                    const DlioShape& s) {
  Hid dset = dataset_hid(H5Dopen2(file, "records", H5P_DEFAULT));
  for (Selection& sel : selections(dset.get(), s)) {
    if (sel.name != sel_name) continue;
    const hssize_t n = H5Sget_select_npoints(sel.file_space.get());
    std::vector<std::byte> buf(static_cast<std::size_t>(n) * H5Tget_size(mem_type));
    const hid_t file_space = sel.name == "all" ? H5S_ALL : sel.file_space.get();
    EXPECT_GE(H5Dread(dset.get(), mem_type, sel.mem(), file_space, H5P_DEFAULT, buf.data()), 0)
        << sel_name;
    return buf;
  }
  ADD_FAILURE() << "no selection " << sel_name;
  return {};
}

using VolSerialTest = VolTestFiles;

TEST_F(VolSerialTest, EveryDatasetOfTheZooReadsAsNative) {
  Hid native = open_native("zoo.h5");
  Hid cached = open_larder("zoo.h5");
  ASSERT_TRUE(native.valid() && cached.valid());
  const larder_stats_t before = stats();
  const auto paths = dataset_paths(native.get());
  ASSERT_EQ(dataset_paths(cached.get()), paths);
  ASSERT_GE(paths.size(), 20u);
  for (const std::string& p : paths)
    EXPECT_EQ(read_canonical(cached.get(), p), read_canonical(native.get(), p)) << p;
  const larder_stats_t after = stats();
  EXPECT_GT(after.hits_self + after.misses, before.hits_self + before.misses);
}

TEST_F(VolSerialTest, SelectionsAndMemoryTypesReadAsNative) {
  for (const char* name : {"dlio_contig.h5", "dlio_gzip.h5"}) {
    Hid native = open_native(name);
    Hid cached = open_larder(name);
    for (const char* sel : {"all", "sample", "strided", "fancy", "points", "block"}) {
      for (hid_t type : {H5T_NATIVE_UINT8, H5T_NATIVE_FLOAT, H5T_NATIVE_INT32, H5T_NATIVE_DOUBLE}) {
        EXPECT_EQ(read_records(cached.get(), sel, type, kDlioShape),
                  read_records(native.get(), sel, type, kDlioShape))
            << name << " " << sel;
      }
    }
  }
}

TEST_F(VolSerialTest, MultiDatasetReadReadsAsNative) {
  auto read_both = [](hid_t file) {
    Hid records = dataset_hid(H5Dopen2(file, "records", H5P_DEFAULT));
    Hid labels = dataset_hid(H5Dopen2(file, "labels", H5P_DEFAULT));
    std::vector<std::uint8_t> r(kDlioShape.samples * kDlioShape.d1 * kDlioShape.d2);
    std::vector<double> l(kDlioShape.samples);
    hid_t dsets[2] = {records.get(), labels.get()};
    hid_t types[2] = {H5T_NATIVE_UINT8, H5T_NATIVE_DOUBLE};
    hid_t spaces[2] = {H5S_ALL, H5S_ALL};
    void* bufs[2] = {r.data(), l.data()};
    EXPECT_GE(H5Dread_multi(2, dsets, types, spaces, spaces, H5P_DEFAULT, bufs), 0);
    return std::make_pair(r, l);
  };
  Hid native = open_native("dlio_gzip.h5");
  Hid cached = open_larder("dlio_gzip.h5");
  EXPECT_EQ(read_both(cached.get()), read_both(native.get()));
}

TEST_F(VolSerialTest, EachPieceOfAFileIsReadFromThePfsOnce) {
  const std::string name = "dlio_once.h5";
  write_dlio_file(path(name), kDlioShape, DlioLayout::kChunkedGzip);
  ASSERT_TRUE(open_larder("zoo.h5").valid());  // Larder runs from here on
  const auto size = std::filesystem::file_size(path(name));
  const larder_stats_t s0 = stats();
  for (int pass = 0; pass < 3; ++pass) {
    Hid cached = open_larder(name);
    for (const char* p : {"/records", "/labels"}) read_canonical(cached.get(), p);
  }
  const larder_stats_t s1 = stats();
  EXPECT_EQ(s1.pfs_bytes_read - s0.pfs_bytes_read, size);
  EXPECT_EQ(s1.pfs_read_ops - s0.pfs_read_ops, (size + 4095) / 4096);
  // Each PFS read was a miss or a load ahead of the reads (read-ahead: HDF5 reads much of this
  // file in order).
  EXPECT_LE(s1.misses - s0.misses, s1.pfs_read_ops - s0.pfs_read_ops);
  EXPECT_GT(s1.misses - s0.misses, 0u);
  EXPECT_EQ(s1.fallbacks, s0.fallbacks);
  EXPECT_GT(s1.hits_self - s0.hits_self, 2 * (s1.misses - s0.misses));
}

TEST_F(VolSerialTest, ReadWriteOpensBypassTheCache) {
  const std::string name = "rw.h5";
  write_dlio_file(path(name), kDlioShape, DlioLayout::kContiguous);
  ASSERT_TRUE(open_larder("zoo.h5").valid());  // Larder runs from here on
  const larder_stats_t s0 = stats();
  std::vector<std::uint8_t> sample(kDlioShape.d1 * kDlioShape.d2, 0xAB);
  {
    Hid fapl = larder_fapl();
    Hid file = file_hid(H5Fopen(path(name).c_str(), H5F_ACC_RDWR, fapl.get()));
    ASSERT_TRUE(file.valid());
    read_canonical(file.get(), "/records");
    Hid dset = dataset_hid(H5Dopen2(file.get(), "records", H5P_DEFAULT));
    Hid fs = space_hid(H5Dget_space(dset.get()));
    const hsize_t start[3] = {1, 0, 0}, count[3] = {1, kDlioShape.d1, kDlioShape.d2};
    H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    const hsize_t n = count[1] * count[2];
    Hid ms = space_hid(H5Screate_simple(1, &n, nullptr));
    ASSERT_GE(
        H5Dwrite(dset.get(), H5T_NATIVE_UINT8, ms.get(), fs.get(), H5P_DEFAULT, sample.data()), 0);
  }
  const larder_stats_t s1 = stats();
  EXPECT_EQ(s1.hits_self + s1.misses, s0.hits_self + s0.misses) << "a read-write open was cached";
  Hid native = open_native(name);
  const auto records = read_canonical(native.get(), "/records");
  const auto* first = reinterpret_cast<const std::uint8_t*>(records.data()) + sample.size();
  EXPECT_TRUE(std::all_of(first, first + sample.size(), [](auto b) { return b == 0xAB; }));
}

TEST_F(VolSerialTest, FilesCreatedThroughTheConnectorAreNativeFiles) {
  const std::string name = "created.h5";
  {
    Hid fapl = larder_fapl();
    Hid file = file_hid(H5Fcreate(path(name).c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
    ASSERT_TRUE(file.valid());
    const hsize_t n = 1000;
    Hid space = space_hid(H5Screate_simple(1, &n, nullptr));
    std::vector<int> v(n);
    for (int i = 0; i < 1000; ++i) v[static_cast<std::size_t>(i)] = i * 3;
    Hid d = dataset_hid(H5Dcreate2(file.get(), "v", H5T_STD_I32LE, space.get(), H5P_DEFAULT,
                                   H5P_DEFAULT, H5P_DEFAULT));
    ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  }
  Hid native = open_native(name);
  Hid cached = open_larder(name);
  EXPECT_EQ(read_canonical(cached.get(), "/v"), read_canonical(native.get(), "/v"));
}

// (The native and the uncached open are not held at once: HDF5 1.14 shares one file object
// between them and records only the first opener's connector, for every pass-through connector.)
TEST_F(VolSerialTest, CacheOffPassesThrough) {
  const auto expected = read_canonical(open_native("dlio_contig.h5").get(), "/records");
  Hid cached = open_larder("dlio_contig.h5");  // Larder runs from here on
  const larder_stats_t s0 = stats();
  Hid plain = open_larder("dlio_contig.h5", "cache=off;under_vol=0;under_info={}");
  ASSERT_TRUE(plain.valid());
  EXPECT_EQ(read_canonical(plain.get(), "/records"), expected);
  const larder_stats_t s1 = stats();
  EXPECT_EQ(s1.hits_self + s1.misses, s0.hits_self + s0.misses);
}

}  // namespace
}  // namespace larder::testing
