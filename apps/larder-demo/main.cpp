// larder-demo: the smallest real job. Every rank reads every file of a generated dataset, twice,
// first with plain POSIX reads and then through Larder, and rank 0 prints for each pass the
// bytes and read operations that reached the file system and the time it took.
//
//   mpiexec.mpich -n 2 larder-demo --dir /tmp/larder-demo --files 64 --size 4M
#include <fcntl.h>
#include <larder/larder.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace {

struct Options {
  std::string dir;
  int files = 64;
  std::uint64_t size = 4 << 20;
  int passes = 2;
};

std::uint64_t parse_bytes(const std::string& s) {
  std::size_t end = 0;
  const std::uint64_t v = std::stoull(s, &end);
  const std::string unit = s.substr(end);
  if (unit.empty()) return v;
  if (unit == "K" || unit == "k") return v << 10;
  if (unit == "M" || unit == "m") return v << 20;
  if (unit == "G" || unit == "g") return v << 30;
  throw po::validation_error(po::validation_error::invalid_option_value, "size", s);
}

std::string file_name(const Options& o, int i) {
  return fmt::format("{}/sample_{:05d}.bin", o.dir, i);
}

// Rank 0 writes the dataset (once; kept for the next run).
void generate(const Options& o) {
  ::mkdir(o.dir.c_str(), 0755);
  std::vector<unsigned char> buf(o.size);
  for (int i = 0; i < o.files; ++i) {
    const std::string p = file_name(o, i);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) == o.size) continue;
    for (std::size_t b = 0; b < buf.size(); ++b)
      buf[b] = static_cast<unsigned char>((b * 31 + static_cast<std::size_t>(i)) & 0xff);
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) {
      fmt::print(stderr, "larder-demo: cannot write {}: {}\n", p, std::strerror(errno));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ::close(fd);
  }
}

// Reads every file; returns {bytes, read calls}.
template <class Open, class Pread, class Close>
std::pair<std::uint64_t, std::uint64_t> read_all(const Options& o, Open open_fn, Pread pread_fn,
                                                 Close close_fn) {
  std::vector<char> buf(1 << 20);
  std::uint64_t bytes = 0, ops = 0;
  for (int i = 0; i < o.files; ++i) {
    const int fd = open_fn(file_name(o, i).c_str());
    if (fd < 0) {
      fmt::print(stderr, "larder-demo: cannot open {}: {}\n", file_name(o, i),
                 std::strerror(errno));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (off_t off = 0;; off += static_cast<off_t>(buf.size())) {
      const ssize_t n = pread_fn(fd, buf.data(), buf.size(), off);
      ++ops;
      if (n <= 0) break;
      bytes += static_cast<std::uint64_t>(n);
    }
    close_fn(fd);
  }
  return {bytes, ops};
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  std::string size_text = "4M";
  po::options_description desc(
      "larder-demo: a dataset read by every rank, without and with Larder");
  desc.add_options()("help,h", "show this help")(
      "dir", po::value(&o.dir)->default_value("/tmp/larder-demo"), "dataset directory (created)")(
      "files", po::value(&o.files)->default_value(64), "number of files")(
      "size", po::value(&size_text)->default_value("4M"), "bytes per file (K, M, G suffixes)")(
      "passes", po::value(&o.passes)->default_value(2), "passes over the dataset per mode");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      if (rank == 0) std::cout << desc << "\n";
      MPI_Finalize();
      return 0;
    }
    o.size = parse_bytes(size_text);
    if (o.files <= 0 || o.passes <= 0) throw po::error("--files and --passes must be positive");
  } catch (const std::exception& e) {
    if (rank == 0) fmt::print(stderr, "larder-demo: {}\n", e.what());
    MPI_Finalize();
    return 2;
  }
  if (rank == 0) generate(o);
  MPI_Barrier(MPI_COMM_WORLD);
  const double dataset_mib = static_cast<double>(o.size) * o.files / (1 << 20);
  if (rank == 0) {
    fmt::print("larder-demo: {} ranks each read {} files of {} ({:.0f} MiB) per pass\n", size,
               o.files, size_text, dataset_mib);
    fmt::print("{:<8} {:>5} {:>10} {:>16} {:>12} {:>10}\n", "mode", "pass", "time (s)",
               "PFS bytes (MiB)", "PFS reads", "MiB/s");
  }
  for (int cached = 0; cached < 2; ++cached) {
    if (cached) {
      ::setenv("LARDER_PREFIX", o.dir.c_str(), 0);
      ::setenv("LARDER_LOCAL_FS", "cache", 0);  // a local directory stands in for the PFS
      if (larder_init(MPI_COMM_WORLD) != LARDER_OK) {
        fmt::print(stderr, "larder-demo: larder_init failed: {}\n", larder_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    std::uint64_t prev_bytes = 0, prev_ops = 0;
    for (int pass = 1; pass <= o.passes; ++pass) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      std::pair<std::uint64_t, std::uint64_t> done;
      if (cached) {
        done = read_all(
            o, [](const char* p) { return larder_open(p, O_RDONLY); }, larder_pread, larder_close);
      } else {
        done = read_all(
            o, [](const char* p) { return ::open(p, O_RDONLY); }, ::pread, ::close);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // What reached the file system: everything, without Larder; Larder's pfs counters, with it.
      std::uint64_t local[2] = {done.first, done.second};
      if (cached) {
        larder_stats_t st{};
        larder_stats_get(&st);
        local[0] = st.pfs_bytes_read - prev_bytes;
        local[1] = st.pfs_read_ops - prev_ops;
        prev_bytes = st.pfs_bytes_read;
        prev_ops = st.pfs_read_ops;
      }
      std::uint64_t total[2] = {0, 0};
      MPI_Reduce(local, total, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        fmt::print("{:<8} {:>5} {:>10.3f} {:>16.1f} {:>12} {:>10.0f}\n",
                   cached ? "larder" : "posix", pass, secs,
                   static_cast<double>(total[0]) / (1 << 20), total[1], dataset_mib * size / secs);
      }
    }
    std::fflush(stdout);
    if (cached) larder_finalize();
  }
  MPI_Finalize();
  return 0;
}
