// When the connector starts Larder itself (start=world here), it also stops it: at the start of
// MPI_Finalize, from an MPI_COMM_SELF attribute callback, collectively. The program never calls
// larder_finalize; after MPI_Finalize, rank 0 checks that the job's stats file was written and
// counts the reads of every rank. Not a GoogleTest: the check happens after MPI is gone.
//
// usage: hdf5_finalize_test DIR   (DIR: an empty scratch directory shared by the ranks)
#include <hdf5.h>
#include <larder/larder.h>
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/hdf5/h5_support.hpp"

namespace {

using larder::testing::Hid;

bool read_through_connector(const std::string& path) {
  Hid fapl = larder::testing::larder_fapl("start=world;under_vol=0;under_info={}");
  Hid file = larder::testing::file_hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (!file.valid()) return false;
  return !larder::testing::read_canonical(file.get(), "/records").empty();
}

int check_stats(const std::string& path, int ranks, std::uint64_t file_size) {
  std::ifstream in(path);
  if (!in.good()) {
    std::fprintf(stderr, "FAIL: no stats file at %s: Larder was not finalized\n", path.c_str());
    return 1;
  }
  const auto stats = nlohmann::json::parse(in);
  if (stats["ranks"] != ranks || stats["pfs"]["bytes_read"] != file_size) {
    std::fprintf(stderr, "FAIL: unexpected stats %s\n", stats.dump().c_str());
    return 1;
  }
  std::printf("ok: %d ranks, %llu bytes read from the file system once\n", ranks,
              static_cast<unsigned long long>(file_size));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 2) {
    if (rank == 0) std::fprintf(stderr, "usage: hdf5_finalize_test DIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string dir = argv[1], data = dir + "/train.h5", stats = dir + "/stats.json";
  if (rank == 0) {
    std::filesystem::create_directories(dir);
    std::filesystem::remove(stats);
    larder::testing::write_dlio_file(data, {.samples = 32, .d1 = 64, .d2 = 64},
                                     larder::testing::DlioLayout::kContiguous);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("LARDER_STATS", stats.c_str(), 1);
  const bool ok = read_through_connector(data);
  const bool running = larder_initialized() != 0;
  MPI_Finalize();  // the connector's MPI_COMM_SELF callback finalizes Larder here
  if (!ok || !running) {
    std::fprintf(stderr, "FAIL: rank %d: read %s, larder %s\n", rank, ok ? "ok" : "failed",
                 running ? "running" : "not running");
    return 1;
  }
  if (larder_initialized()) {
    std::fprintf(stderr, "FAIL: rank %d: Larder still runs after MPI_Finalize\n", rank);
    return 1;
  }
  if (rank != 0) return 0;
  const int rc = check_stats(stats, size, std::filesystem::file_size(data));
  std::filesystem::remove_all(dir);
  return rc;
}
