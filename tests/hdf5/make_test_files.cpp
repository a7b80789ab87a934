// make_test_files DIR: writes the file zoo (zoo.h5, zoo_ext.h5) and a DLIO-style file
// (dlio.h5) into DIR with the native connector; used by the h5dump/h5ls comparison.
#include <cstdio>
#include <exception>
#include <string>

#include "tests/hdf5/h5_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_files DIR\n");
    return 2;
  }
  try {
    const std::string dir = argv[1];
    larder::testing::write_zoo(dir);
    larder::testing::write_dlio_file(dir + "/dlio.h5", {.samples = 40, .d1 = 16, .d2 = 24},
                                     larder::testing::DlioLayout::kChunkedGzip);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_test_files: %s\n", e.what());
    return 1;
  }
  return 0;
}
