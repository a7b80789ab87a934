// The files of the serial connector tests, written once per test binary with the native
// connector, and opening them natively or through the connector.
#ifndef LARDER_TESTS_HDF5_VOL_TEST_FILES_HPP_
#define LARDER_TESTS_HDF5_VOL_TEST_FILES_HPP_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/hdf5/h5_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder::testing {

inline constexpr DlioShape kDlioShape{.samples = 64, .d1 = 32, .d2 = 48};

class VolTestFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("larder-vol");
    write_zoo(dir_->path());
    write_dlio_file(path("dlio_contig.h5"), kDlioShape, DlioLayout::kContiguous);
    write_dlio_file(path("dlio_gzip.h5"), kDlioShape, DlioLayout::kChunkedGzip);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string path(const std::string& name) { return *dir_ / name; }

  static Hid open_native(const std::string& name) {
    Hid fapl = native_fapl();
    return file_hid(H5Fopen(path(name).c_str(), H5F_ACC_RDONLY, fapl.get()));
  }
  static Hid open_larder(const std::string& name,
                         const std::string& info = "under_vol=0;under_info={}") {
    Hid fapl = larder_fapl(info);
    return file_hid(H5Fopen(path(name).c_str(), H5F_ACC_RDONLY, fapl.get()));
  }

 private:
  static inline TempDir* dir_ = nullptr;
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_HDF5_VOL_TEST_FILES_HPP_
