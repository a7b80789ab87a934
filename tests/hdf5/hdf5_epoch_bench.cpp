// hdf5_epoch_bench: DLIO-style random-sample reads of an HDF5 file by every rank, epoch by
// epoch, timed, with the bytes each epoch read from the file system. Run it with and without
// the connector (HDF5_VOL_CONNECTOR) to compare; docs/hdf5-vol.md shows the commands.
//
// Each epoch: a permutation of all samples (the same on every rank, seeded by the epoch) split
// into equal shares, one per rank (DLIO's sharding); each rank opens the file, reads its share
// one sample at a time as h5py's dset[i] does (H5Oopen, a hyperslab per sample) and closes it.
// "read syscall bytes" is the job's growth of /proc/self/io rchar over the epoch: what HDF5
// (natively) or Larder (on a miss) read from files; Larder's copies from memory do not count.
#include <hdf5.h>
#include <larder/larder.h>
#include <mpi.h>

#include <sys/stat.h>
#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/hdf5/h5_support.hpp"

namespace po = boost::program_options;
using larder::testing::DlioShape;
using larder::testing::Hid;

namespace {

struct Options {
  std::string file;
  DlioShape shape;
  bool gzip = false;
  int epochs = 3;
};

std::uint64_t read_syscall_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value)
    if (key == "rchar:") return value;
  return 0;
}

std::uint64_t larder_pfs_bytes() {
  larder_stats_t s{};
  return larder_initialized() && larder_stats_get(&s) == LARDER_OK ? s.pfs_bytes_read : 0;
}

// This rank's share of the epoch's permutation.
std::vector<hsize_t> my_samples(hsize_t n, int epoch, int rank, int size) {
  std::vector<hsize_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(static_cast<std::uint64_t>(epoch) + 1);
  std::shuffle(order.begin(), order.end(), rng);
  const hsize_t per_rank = n / static_cast<hsize_t>(size);
  return {order.begin() + static_cast<std::ptrdiff_t>(per_rank * rank),
          order.begin() + static_cast<std::ptrdiff_t>(per_rank * (rank + 1))};
}

// The shape of `records` in the file.
DlioShape shape_of(const std::string& path) {
  Hid fapl = larder::testing::native_fapl();
  Hid file = larder::testing::file_hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()));
  Hid dset = Hid(H5Oopen(file.get(), "records", H5P_DEFAULT), &H5Oclose);
  Hid space = larder::testing::space_hid(H5Dget_space(dset.get()));
  hsize_t dims[3] = {};
  if (H5Sget_simple_extent_ndims(space.get()) != 3 ||
      H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 3)
    throw std::runtime_error(path + ": no 3-D dataset 'records'");
  return DlioShape{.samples = dims[0], .d1 = dims[1], .d2 = dims[2]};
}

bool read_epoch(const Options& o, const std::vector<hsize_t>& samples) {
  Hid file = larder::testing::file_hid(H5Fopen(o.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) return false;
  Hid dset = Hid(H5Oopen(file.get(), "records", H5P_DEFAULT), &H5Oclose);
  const hsize_t dims[2] = {o.shape.d1, o.shape.d2};
  Hid mem = larder::testing::space_hid(H5Screate_simple(2, dims, nullptr));
  std::vector<std::uint8_t> buf(o.shape.d1 * o.shape.d2);
  bool ok = dset.valid();
  for (hsize_t i : samples) {
    Hid fs = larder::testing::space_hid(H5Dget_space(dset.get()));
    const hsize_t start[3] = {i, 0, 0}, count[3] = {1, o.shape.d1, o.shape.d2};
    ok = ok && H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
         H5Dread(dset.get(), H5T_NATIVE_UINT8, mem.get(), fs.get(), H5P_DEFAULT, buf.data()) >= 0;
  }
  return ok;
}

int run(const Options& opts, int rank, int size) {
  struct stat st {};
  if (rank == 0 && ::stat(opts.file.c_str(), &st) != 0) {
    std::printf("writing %s: %llu samples of %llux%llu bytes%s\n", opts.file.c_str(),
                static_cast<unsigned long long>(opts.shape.samples),
                static_cast<unsigned long long>(opts.shape.d1),
                static_cast<unsigned long long>(opts.shape.d2), opts.gzip ? ", gzip" : "");
    larder::testing::write_dlio_file(opts.file, opts.shape,
                                     opts.gzip ? larder::testing::DlioLayout::kChunkedGzip
                                               : larder::testing::DlioLayout::kContiguous);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Options o = opts;
  o.shape = shape_of(o.file);  // what is in the file, whatever the command line said
  const char* vol = std::getenv("HDF5_VOL_CONNECTOR");
  if (rank == 0)
    std::printf("%d ranks, HDF5_VOL_CONNECTOR=%s\n%5s %9s %11s %10s %18s %16s\n", size,
                vol ? vol : "(unset: native)", "epoch", "seconds", "samples/s", "MiB/s",
                "read syscall MiB", "larder PFS MiB");
  int failed = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto samples = my_samples(o.shape.samples, epoch, rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    const std::uint64_t rchar0 = read_syscall_bytes(), pfs0 = larder_pfs_bytes();
    const double t0 = MPI_Wtime();
    failed |= read_epoch(o, samples) ? 0 : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - t0;
    std::uint64_t local[2] = {read_syscall_bytes() - rchar0, larder_pfs_bytes() - pfs0}, job[2];
    MPI_Reduce(local, job, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    const double mib =
        static_cast<double>(samples.size() * size * o.shape.d1 * o.shape.d2) / 1048576.0;
    if (rank == 0)
      std::printf("%5d %9.3f %11.0f %10.1f %18.1f %16.1f\n", epoch + 1, seconds,
                  static_cast<double>(samples.size() * size) / seconds, mib / seconds,
                  static_cast<double>(job[0]) / 1048576.0, static_cast<double>(job[1]) / 1048576.0);
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed) std::printf("some reads failed\n");
  return any_failed;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  po::options_description desc("hdf5_epoch_bench: random-sample HDF5 reads, per epoch");
  desc.add_options()("help", "this text")("file", po::value(&o.file)->required(),
                                          "the HDF5 file (written first if missing)")(
      "samples", po::value(&o.shape.samples)->default_value(4096), "samples when writing")(
      "d1", po::value(&o.shape.d1)->default_value(256), "sample rows when writing")(
      "d2", po::value(&o.shape.d2)->default_value(256), "sample columns when writing")(
      "gzip", po::bool_switch(&o.gzip), "write chunked (1, d1, d2) with gzip")(
      "epochs", po::value(&o.epochs)->default_value(3), "epochs to read");
  int rc = 0;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      if (rank == 0) std::printf("%s\n", (std::ostringstream() << desc).str().c_str());
    } else {
      po::notify(vm);
      rc = run(o, rank, size);
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "hdf5_epoch_bench: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
