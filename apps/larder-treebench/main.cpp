// larder-treebench: every rank of a job walks a tree of files, stats, opens and reads every one of
// them, pass after pass, with plain POSIX calls: run it with the preload library for the cached
// figures and without for the plain ones (report.py does both, side by side).
//
//   larder-treebench generate DIR [--files 3000] [--seed 1]
//       a tree like a Python environment or a small-file dataset: files of 1-50 KiB, one in a
//       hundred of 1-4 MiB, in 30 directories
//   larder-treebench generate DIR --dataset --files 300000 [--per-dir 1000] [--seed 1]
//       a dataset in ImageFolder's shape: files of 1-2 KiB, --per-dir to a class directory
//       (c00000/, c00001/, ...), generated with progress on stderr
//   mpiexec ... larder-treebench read DIR [--passes 2] [--json FILE]
//       per pass: the slowest rank's time, the files and bytes read; every byte a rank reads is
//       hashed (XXH3, file by file in walk order), and every rank's hash must agree with rank
//       0's, pass after pass (else exit status 1); the JSON has the hash, to compare with a plain
//       run's
//   mpiexec ... larder-treebench read DIR --share [--passes 2] [--json FILE]
//       a training job's epochs: every rank lists every directory (as a dataset class does),
//       then reads its share of the files (every size-th of a shuffled order, reshuffled each
//       pass, with stat and open as a loader does); the listing and each epoch are timed apart.
//       The job's hash is the sum over files of the hash of (path, bytes), whatever rank read
//       which file: the same for every pass and for a plain run (with any number of ranks)
#include <dirent.h>
#include <fcntl.h>
#include <mpi.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
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

int generate_dataset(const std::string& root, int files, int per_dir, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<char> buf(2048);
  std::uint64_t total = 0;
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
    std::perror(root.c_str());
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < files; ++i) {
    const std::string dir = fmt::format("{}/c{:05d}", root, i / per_dir);
    if (i % per_dir == 0 && ::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      std::perror(dir.c_str());
      return 2;
    }
    const std::uint64_t size = 1024 + rng() % 1025;
    for (std::uint64_t j = 0; j < size; ++j) buf[j] = static_cast<char>(rng());
    const std::string path = fmt::format("{}/s{:07d}.bin", dir, i);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, buf.data(), size) != static_cast<ssize_t>(size) || ::close(fd) != 0) {
      std::perror(path.c_str());
      return 2;
    }
    total += size;
    if ((i + 1) % 50000 == 0 || i + 1 == files) {
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << fmt::format("generate: {} of {} files ({:.0f} s)\n", i + 1, files, t);
    }
  }
  std::cout << fmt::format("{} files in {} directories, {:.1f} MB in {}\n", files,
                           (files + per_dir - 1) / per_dir, static_cast<double>(total) / 1e6, root);
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

// Lists every directory under `dir` (sorted), appending the files' paths to `files`.
void list_all(const std::string& dir, std::vector<std::string>& files) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::pair<std::string, bool>> names;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name, e->d_type == DT_DIR);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& [n, is_dir] : names) {
    const std::string path = fmt::format("{}/{}", dir, n);
    if (is_dir) {
      list_all(path, files);
    } else {
      files.push_back(path);
    }
  }
}

// One epoch of this rank's share; `p.hash` is the sum of the files' (path, bytes) hashes.
void read_share(const std::vector<std::string>& files, const std::vector<std::size_t>& order,
                std::vector<char>& buf, Pass& p) {
  p.hash = 0;
  for (std::size_t i : order) {
    const std::string& path = files[i];
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) continue;
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, path.data(), path.size());
    ssize_t n_read;
    while ((n_read = ::read(fd, buf.data(), buf.size())) > 0) {
      XXH3_64bits_update(state, buf.data(), static_cast<std::size_t>(n_read));
      p.bytes += static_cast<std::uint64_t>(n_read);
    }
    p.hash += XXH3_64bits_digest(state);
    XXH3_freeState(state);
    ::close(fd);
    ++p.files;
  }
}

int read_shares(const std::string& root, int passes, const std::string& json) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> buf(1 << 20);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> files;
  list_all(root, files);
  double list_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  wait_for_all_ranks();
  double list_max = 0;
  MPI_Reduce(&list_s, &list_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  std::uint64_t count = files.size(), count0 = files.size();
  MPI_Bcast(&count0, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int bad = count != count0 ? 1 : 0;
  if (rank == 0) {
    std::cout << fmt::format("listing: {} ranks, slowest {:.3f} s, {} files\n", size, list_max,
                             count);
  }
  std::vector<double> slowest;
  std::uint64_t ref_hash = 0;
  std::vector<std::size_t> order(files.size());
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::mt19937_64 rng(1000 + static_cast<unsigned>(pass));  // the same on every rank
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::size_t> mine;
    for (std::size_t i = static_cast<std::size_t>(rank); i < order.size();
         i += static_cast<std::size_t>(size)) {
      mine.push_back(order[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    Pass p;
    const auto t1 = std::chrono::steady_clock::now();
    read_share(files, mine, buf, p);
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    wait_for_all_ranks();
    double max = 0;
    MPI_Reduce(&p.seconds, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    std::uint64_t job[2] = {p.hash, p.files};
    MPI_Allreduce(MPI_IN_PLACE, job, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (pass == 0) ref_hash = job[0];
    if (job[0] != ref_hash || job[1] != count0) bad = 1;
    slowest.push_back(max);
    if (rank == 0) {
      std::cout << fmt::format("epoch {}: {} ranks, slowest {:.3f} s, {} files in all\n", pass + 1,
                               size, max, job[1]);
    }
  }
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_bad != 0) std::cerr << "FAIL: the ranks listed or read other bytes\n";
  // The ranks' peak resident memory (shared pages they touched included, in each), summed; and
  // their proportional set size now (shared pages split between the processes mapping them).
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  std::uint64_t mem[2] = {static_cast<std::uint64_t>(ru.ru_maxrss) * 1024, 0};
  if (std::ifstream rollup("/proc/self/smaps_rollup"); rollup) {
    std::string line;
    while (std::getline(rollup, line)) {
      if (line.rfind("Pss:", 0) == 0) mem[1] = std::stoull(line.substr(4)) * 1024;
    }
  }
  std::uint64_t sums[2] = {0, 0};
  MPI_Reduce(mem, sums, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  const std::uint64_t rss_sum = sums[0];
  if (rank == 0 && !json.empty()) {
    std::ofstream out(json);
    out << fmt::format(R"({{"ranks": {}, "files": {}, "hash": "{:016x}", "listing_seconds": {}, )",
                       size, count0, ref_hash, list_max);
    out << fmt::format(R"("max_rss_bytes_sum": {}, "pss_bytes_sum": {}, )", rss_sum, sums[1]);
    out << R"("slowest_seconds": [)";
    for (std::size_t i = 0; i < slowest.size(); ++i) out << (i ? ", " : "") << slowest[i];
    out << "]}\n";
  }
  MPI_Finalize();
  return any_bad != 0 ? 1 : 0;
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
  int files = 3000, passes = 2, per_dir = 1000;
  unsigned seed = 1;
  bool dataset = false, share = false;
  po::options_description opts("larder-treebench generate|read DIR [options]");
  opts.add_options()("help,h", "this help")("files", po::value(&files)->default_value(3000),
                                            "generate: number of files")(
      "seed", po::value(&seed)->default_value(1), "generate: random seed")(
      "dataset", po::bool_switch(&dataset), "generate: ImageFolder's shape (files of 1-2 KiB)")(
      "per-dir", po::value(&per_dir)->default_value(1000), "generate --dataset: files per class")(
      "share", po::bool_switch(&share), "read: list all, then each rank reads its share")(
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
    if (files < 1 || passes < 1 || per_dir < 1) {
      throw std::invalid_argument("--files, --passes and --per-dir must be >= 1");
    }
  } catch (const std::exception& e) {
    std::cerr << "larder-treebench: " << e.what() << "\n";
    return 2;
  }
  if (mode == "generate") {
    return dataset ? generate_dataset(dir, files, per_dir, seed) : generate(dir, files, seed);
  }
  if (mode == "read") return share ? read_shares(dir, passes, json) : read_tree(dir, passes, json);
  std::cerr << "larder-treebench: the mode is generate or read (got '" << mode << "')\n";
  return 2;
}
