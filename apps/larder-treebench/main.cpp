// larder-treebench: every rank of a job walks a tree of files, stats, opens and reads every one of
// them, pass after pass, with plain POSIX calls: run it with the preload library for the cached
// figures and without for the plain ones (report.py does both, side by side).
//
//   larder-treebench generate DIR [--files 3000] [--seed 1]
//       a tree like a Python environment or a small-file dataset: files of 1-50 KiB, one in a
//       hundred of 1-4 MiB, in 30 directories
//   mpiexec ... larder-treebench read DIR [--passes 2] [--json FILE]
//       per pass: the slowest rank's time, the files and bytes read; every byte a rank reads is
//       hashed (XXH3, file by file in walk order), and every rank's hash must agree with rank
//       0's, pass after pass (else exit status 1); the JSON has the hash, to compare with a plain
//       run's
#include <dirent.h>
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace {

int generate(const std::string& root, int files, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> buf(4 << 20);
  std::uint64_t total = 0;
  for (int i = 0; i < files; ++i) {
    const std::string dir = fmt::format("{}/pkg{:02d}", root, i % 30);
    ::mkdir(root.c_str(), 0755);
    ::mkdir(dir.c_str(), 0755);
    const std::uint64_t size =
        (i % 100 == 99) ? (1u << 20) + rng() % (3u << 20) : 1024 + rng() % (49ull * 1024);
    for (std::uint64_t j = 0; j < size; ++j) buf[j] = static_cast<char>(rng());
    const std::string path = fmt::format("{}/f{:05d}.bin", dir, i);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(buf.data(), 1, size, f) != size || std::fclose(f) != 0) {
      std::perror(path.c_str());
      return 2;
    }
    total += size;
  }
  std::cout << fmt::format("{} files, {:.1f} MB in {}\n", files, static_cast<double>(total) / 1e6,
                           root);
  return 0;
}

struct Pass {
  double seconds = 0;
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t hash = 1469598103934665603ull;
};

void walk(const std::string& dir, std::vector<char>& buf, Pass& p) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string path = fmt::format("{}/{}", dir, n);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      walk(path, buf, p);
      continue;
    }
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    ssize_t n_read;
    while ((n_read = ::read(fd, buf.data(), buf.size())) > 0) {
      XXH3_64bits_update(state, buf.data(), static_cast<std::size_t>(n_read));
      p.bytes += static_cast<std::uint64_t>(n_read);
    }
    const std::uint64_t file_hash = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    p.hash = XXH3_64bits_withSeed(&file_hash, sizeof file_hash, p.hash);  // in walk order
    ::close(fd);
    ++p.files;
  }
}

// Waits for every rank to finish its pass without spinning: MPI libraries busy-poll in blocking
// collectives, and on a node with more ranks than cores the ranks that finished first would take
// the CPU from the ones still reading (on a real machine each rank has its own core). The pass
// time is taken before this wait, so its 200 us steps are not in the figures.
void wait_for_all_ranks() {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  while (done == 0) {
    ::usleep(200);
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  }
}

int read_tree(const std::string& root, int passes, const std::string& json) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> buf(1 << 20);
  int bad = 0;
  std::vector<double> slowest;
  std::uint64_t ref_hash = 0;
  for (int pass = 0; pass < passes; ++pass) {
    MPI_Barrier(MPI_COMM_WORLD);
    Pass p;
    const auto t0 = std::chrono::steady_clock::now();
    walk(root, buf, p);
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    wait_for_all_ranks();
    double max = 0;
    MPI_Reduce(&p.seconds, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    std::uint64_t h = p.hash;
    MPI_Bcast(&h, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (pass == 0) ref_hash = h;
    if (p.hash != h || h != ref_hash) bad = 1;
    slowest.push_back(max);
    if (rank == 0) {
      std::cout << fmt::format(
          "pass {}: {} ranks, slowest {:.3f} s, {} files, {:.1f} MB per rank\n", pass + 1, size,
          max, p.files, static_cast<double>(p.bytes) / 1e6);
    }
  }
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_bad != 0) std::cerr << "FAIL: a rank read other bytes\n";
  if (rank == 0 && !json.empty()) {
    std::ofstream out(json);
    out << fmt::format(R"({{"ranks": {}, "hash": "{:016x}", "slowest_seconds": [)", size, ref_hash);
    for (std::size_t i = 0; i < slowest.size(); ++i) out << (i ? ", " : "") << slowest[i];
    out << "]}\n";
  }
  MPI_Finalize();
  return any_bad != 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, dir, json;
  int files = 3000, passes = 2;
  unsigned seed = 1;
  po::options_description opts("larder-treebench generate|read DIR [options]");
  opts.add_options()("help,h", "this help")("files", po::value(&files)->default_value(3000),
                                            "generate: number of files")(
      "seed", po::value(&seed)->default_value(1), "generate: random seed")(
      "passes", po::value(&passes)->default_value(2), "read: passes over the tree")(
      "json", po::value(&json), "read: write the slowest rank's time per pass here");
  po::options_description hidden;
  hidden.add_options()("mode", po::value(&mode))("dir", po::value(&dir));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("mode", 1).add("dir", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || mode.empty() || dir.empty()) {
      std::cout << opts << "\n";
      return vm.count("help") ? 0 : 2;
    }
    if (files < 1 || passes < 1) throw std::invalid_argument("--files and --passes must be >= 1");
  } catch (const std::exception& e) {
    std::cerr << "larder-treebench: " << e.what() << "\n";
    return 2;
  }
  if (mode == "generate") return generate(dir, files, seed);
  if (mode == "read") return read_tree(dir, passes, json);
  std::cerr << "larder-treebench: the mode is generate or read (got '" << mode << "')\n";
  return 2;
}
