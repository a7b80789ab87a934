// The connector as a pass-through: NULL info, probes without an object, iteration and visit
// (wrap contexts), references, native-only and deprecated calls (get_conn_cls), native optional
// operations, stacking on another pass-through, info strings, and errors as native.
#include <gtest/gtest.h>
#include <larder/larder.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/hdf5/h5_support.hpp"
#include "tests/hdf5/vol_test_files.hpp"

namespace larder::testing {
namespace {

using VolApiTest = VolTestFiles;

herr_t collect_link(hid_t, const char* name, const H5L_info2_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

std::vector<std::string> links_of(hid_t file) {
  std::vector<std::string> names;
  EXPECT_GE(H5Literate2(file, H5_INDEX_NAME, H5_ITER_INC, nullptr, &collect_link, &names), 0);
  return names;
}

herr_t collect_error(unsigned, const H5E_error2_t* e, void* data) {
  static_cast<std::string*>(data)->append(e->desc ? e->desc : "").append("\n");
  return 0;
}

// The current error stack's messages (the stack stays as it is).
std::string error_text() {
  std::string text;
  const hid_t stack = H5Eget_current_stack();
  H5Ewalk2(stack, H5E_WALK_DOWNWARD, &collect_error, &text);
  H5Eset_current_stack(stack);
  return text;
}

TEST_F(VolApiTest, NullInfoMeansNativeBelow) {
  Hid fapl = plist_hid(H5Pcreate(H5P_FILE_ACCESS));
  ASSERT_GE(H5Pset_vol(fapl.get(), larder_connector_id(), nullptr), 0);
  Hid file = file_hid(H5Fopen(path("zoo.h5").c_str(), H5F_ACC_RDONLY, fapl.get()));
  ASSERT_TRUE(file.valid());
  Hid native = open_native("zoo.h5");
  EXPECT_EQ(read_canonical(file.get(), "/numbers/int8"),
            read_canonical(native.get(), "/numbers/int8"));
  uint64_t flags = 0;
  EXPECT_GE(H5Pget_vol_cap_flags(fapl.get(), &flags), 0);
}

TEST_F(VolApiTest, FileProbesHaveNoObjectAndAnswerAsNative) {
  std::ofstream(path("not_hdf5.txt")) << "plain text, not HDF5\n";
  Hid cached = larder_fapl();
  Hid native = native_fapl();
  for (const char* name : {"zoo.h5", "not_hdf5.txt", "missing.h5"}) {
    htri_t a = 0, b = 0;
    H5E_BEGIN_TRY {
      a = H5Fis_accessible(path(name).c_str(), cached.get());
      b = H5Fis_accessible(path(name).c_str(), native.get());
    }
    H5E_END_TRY
    EXPECT_EQ(a, b) << name;
  }
  write_dlio_file(path("doomed.h5"), {.samples = 2, .d1 = 2, .d2 = 2}, DlioLayout::kContiguous);
  EXPECT_GE(H5Fdelete(path("doomed.h5").c_str(), cached.get()), 0);
  struct stat st {};
  EXPECT_NE(::stat(path("doomed.h5").c_str(), &st), 0);
}

TEST_F(VolApiTest, IterationVisitAndReferencesWork) {
  Hid native = open_native("zoo.h5");
  Hid cached = open_larder("zoo.h5");
  EXPECT_EQ(links_of(cached.get()), links_of(native.get()));
  EXPECT_EQ(dataset_paths(cached.get()), dataset_paths(native.get()));
  Hid refs = dataset_hid(H5Dopen2(cached.get(), "refs", H5P_DEFAULT));
  hobj_ref_t r[2];
  ASSERT_GE(H5Dread(refs.get(), H5T_STD_REF_OBJ, H5S_ALL, H5S_ALL, H5P_DEFAULT, r), 0);
  Hid deep = Hid(H5Rdereference2(refs.get(), H5P_DEFAULT, H5R_OBJECT, &r[0]), &H5Oclose);
  ASSERT_TRUE(deep.valid());
  Hid native_refs = dataset_hid(H5Dopen2(native.get(), "refs", H5P_DEFAULT));
  Hid native_deep =
      Hid(H5Rdereference2(native_refs.get(), H5P_DEFAULT, H5R_OBJECT, &r[0]), &H5Oclose);
  char name[64] = {}, native_name[64] = {};
  H5Iget_name(deep.get(), name, sizeof name);
  H5Iget_name(native_deep.get(), native_name, sizeof native_name);
  EXPECT_STREQ(name, native_name);
  EXPECT_EQ(H5Iget_type(deep.get()), H5I_DATASET);
  // Deprecated 1.8 calls are allowed only when the stack ends in native (get_conn_cls TERM).
  H5O_info1_t old_info{};
  EXPECT_GE(H5Oget_info_by_name1(cached.get(), "/g1", &old_info, H5P_DEFAULT), 0);
  hbool_t is_native = false;
  EXPECT_GE(H5VLobject_is_native(cached.get(), &is_native), 0);
  EXPECT_TRUE(is_native);
  H5O_info2_t a{}, b{};
  ASSERT_GE(H5Oget_info_by_name3(cached.get(), "/types/compound", &a, H5O_INFO_ALL, H5P_DEFAULT),
            0);
  ASSERT_GE(H5Oget_info_by_name3(native.get(), "/types/compound", &b, H5O_INFO_ALL, H5P_DEFAULT),
            0);
  int cmp = 1;
  EXPECT_GE(H5Otoken_cmp(cached.get(), &a.token, &b.token, &cmp), 0);
  EXPECT_EQ(cmp, 0);
  EXPECT_EQ(a.num_attrs, b.num_attrs);
}

TEST_F(VolApiTest, NativeOptionalOperationsWork) {
  Hid native = open_native("zoo.h5");
  Hid cached = open_larder("zoo.h5");
  void* handle = nullptr;
  ASSERT_GE(H5Fget_vfd_handle(cached.get(), H5P_DEFAULT, &handle), 0);
  struct stat by_handle {
  }, by_path{};
  ASSERT_EQ(::fstat(*static_cast<int*>(handle), &by_handle), 0);
  ASSERT_EQ(::stat(path("zoo.h5").c_str(), &by_path), 0);
  EXPECT_EQ(by_handle.st_ino, by_path.st_ino);
  hsize_t size_a = 0, size_b = 0;
  EXPECT_GE(H5Fget_filesize(cached.get(), &size_a), 0);
  EXPECT_GE(H5Fget_filesize(native.get(), &size_b), 0);
  EXPECT_EQ(size_a, size_b);
  auto raw_chunk = [](hid_t file) {
    Hid d = dataset_hid(H5Dopen2(file, "/numbers/uint64_gzip", H5P_DEFAULT));
    const hsize_t offset[1] = {512};
    hsize_t bytes = 0;
    EXPECT_GE(H5Dget_chunk_storage_size(d.get(), offset, &bytes), 0);
    std::vector<std::uint8_t> buf(bytes);
    uint32_t mask = 99;
    EXPECT_GE(H5Dread_chunk(d.get(), H5P_DEFAULT, offset, &mask, buf.data()), 0);
    return std::make_pair(buf, mask);
  };
  EXPECT_EQ(raw_chunk(cached.get()), raw_chunk(native.get()));
}

TEST_F(VolApiTest, AccessPlistOfACachedFileCanBeReused) {
  Hid cached = open_larder("zoo.h5");
  Hid fapl = plist_hid(H5Fget_access_plist(cached.get()));
  ASSERT_TRUE(fapl.valid());
  Hid again = file_hid(H5Fopen(path("dlio_gzip.h5").c_str(), H5F_ACC_RDONLY, fapl.get()));
  ASSERT_TRUE(again.valid());
  Hid native = open_native("dlio_gzip.h5");
  EXPECT_EQ(read_canonical(again.get(), "/labels"), read_canonical(native.get(), "/labels"));
  Hid created =
      file_hid(H5Fcreate(path("from_plist.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  EXPECT_TRUE(created.valid()) << "the read-only cache driver leaked into a create";
}

TEST_F(VolApiTest, OpeningAFileTwiceSharesIt) {
  Hid a = open_larder("zoo.h5");
  Hid b = open_larder("zoo.h5");
  unsigned long fa = 0, fb = 1;
  ASSERT_GE(H5Fget_fileno(a.get(), &fa), 0);
  ASSERT_GE(H5Fget_fileno(b.get(), &fb), 0);
  EXPECT_EQ(fa, fb);
}

TEST_F(VolApiTest, StacksOnHdf5sPassThroughConnector) {
  Hid native = open_native("zoo.h5");
  Hid stacked = open_larder("zoo.h5", "under_vol=1;under_info={under_vol=0;under_info={}}");
  ASSERT_TRUE(stacked.valid());
  for (const std::string& p : dataset_paths(native.get()))
    EXPECT_EQ(read_canonical(stacked.get(), p), read_canonical(native.get(), p)) << p;
  EXPECT_EQ(links_of(stacked.get()), links_of(native.get()));
}

TEST_F(VolApiTest, ErrorsAreThoseOfNative) {
  std::ofstream(path("not_hdf5.txt")) << "plain text, not HDF5\n";
  {
    const auto bytes = file_bytes(path("zoo.h5"));
    std::ofstream(path("truncated.h5"), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), 20000);
  }
  Hid cached = larder_fapl();
  Hid native = native_fapl();
  for (const char* name : {"missing.h5", "not_hdf5.txt", "truncated.h5"}) {
    hid_t a = 0, b = 0;
    std::string cached_errors;
    H5E_BEGIN_TRY {
      a = H5Fopen(path(name).c_str(), H5F_ACC_RDONLY, cached.get());
      cached_errors = error_text();
      b = H5Fopen(path(name).c_str(), H5F_ACC_RDONLY, native.get());
    }
    H5E_END_TRY
    EXPECT_LT(a, 0) << name;
    EXPECT_LT(b, 0) << name;
    EXPECT_NE(cached_errors.find("unable to open file"), std::string::npos) << cached_errors;
  }
}

TEST_F(VolApiTest, InfoStringsAreCheckedAndRoundTrip) {
  const hid_t id = larder_connector_id();
  for (const char* bad : {"under_vol=abc!", "under_info={", "colour=blue", "under_vol=4242"}) {
    void* info = nullptr;
    std::string errors;
    H5E_BEGIN_TRY {
      EXPECT_LT(H5VLconnector_str_to_info(bad, id, &info), 0) << bad;
      errors = error_text();
    }
    H5E_END_TRY
    EXPECT_NE(errors.find("bad larder connector info"), std::string::npos) << bad << ": " << errors;
  }
  void* info = nullptr;
  ASSERT_GE(H5VLconnector_str_to_info("start=never;under_vol=native", id, &info), 0);
  char* text = nullptr;
  ASSERT_GE(H5VLconnector_info_to_str(info, id, &text), 0);
  EXPECT_STREQ(text, "start=never;under_vol=0;under_info={}");
  H5free_memory(text);
  void* copy = nullptr;
  ASSERT_GE(H5VLcopy_connector_info(id, &copy, info), 0);
  int cmp = 1;
  EXPECT_GE(H5VLcmp_connector_info(&cmp, id, info, copy), 0);
  EXPECT_EQ(cmp, 0);
  H5VLfree_connector_info(id, copy);
  H5VLfree_connector_info(id, info);
}

}  // namespace
}  // namespace larder::testing
