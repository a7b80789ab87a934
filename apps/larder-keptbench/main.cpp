// larder-keptbench: what preparing a kept store costs a node at a dataset's size.
//
// Builds a synthetic store under --dir (a tmpfs, as the job's shared-memory directory is): S
// finished steps, each of --files sparse files holding --records / S chunk records, as the ranks
// of a node keep them at a step's end (KeptStore::keep_rank + complete_step). Then times, as the
// next step does: the node leader's KeptStore::prepare (read the indexes, pick the newest record
// of every key, write the table), a rank's KeptStore::open, and a lookup of every key. Prints one
// line per phase and removes the store.
//
//   larder-keptbench [--records 1280000] [--steps 1] [--files 64] [--dir /dev/shm] [--repeat 3]
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/tier/kept_store.hpp"

namespace {

namespace po = boost::program_options;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A well-mixed 64-bit word per record (keys' words are XXH3 hashes).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;
}

int run(std::uint64_t records, int steps, int files, const std::string& dir, int repeat) {
  namespace fs = std::filesystem;
  const fs::path scratch = fs::path(dir) / fmt::format("larder-keptbench-{}", ::getpid());
  fs::create_directories(scratch);
  fs::permissions(scratch, fs::perms::owner_all);
  larder::KeptPlace place;
  place.shm_base = (scratch / "base").string();
  fs::create_directory(place.shm_base);
  fs::permissions(place.shm_base, fs::perms::owner_all);
  place.name = "bench";
  place.node = "host";
  constexpr std::uint64_t kChunk = 1 << 20;
  const std::uint64_t per_step = records / static_cast<std::uint64_t>(steps);
  std::uint64_t key = 0;
  int status = 0;
  for (int s = 0; s < steps && status == 0; ++s) {
    const std::string job = fmt::format("step-{}", s);
    const fs::path arenas = scratch / job;
    fs::create_directory(arenas);
    std::vector<std::string> paths;
    for (int f = 0; f < files; ++f) {
      const std::string p = (arenas / fmt::format("seg-0-{}", f)).string();
      const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
      const auto size =
          static_cast<off_t>((per_step / static_cast<std::uint64_t>(files) + 1) * kChunk);
      if (fd < 0 || ::ftruncate(fd, size) != 0) {  // sparse: the bytes are not what is timed
        fmt::print(stderr, "larder-keptbench: cannot make {}\n", p);
        return 1;
      }
      ::close(fd);
      paths.push_back(p);
    }
    std::vector<larder::KeptRecord> kept(per_step);
    for (std::uint64_t i = 0; i < per_step; ++i, ++key) {
      larder::KeptRecord& r = kept[i];
      r.word = mix(key);
      r.check = mix(key ^ 0x5555);
      r.version = 42;
      r.hash = mix(key ^ 0xAAAA);
      r.file = static_cast<std::uint32_t>(i % static_cast<std::uint64_t>(files));
      r.offset = (i / static_cast<std::uint64_t>(files)) * kChunk;
      r.length = kChunk;
      r.flags = larder::KeptRecord::kOrigin;
    }
    std::unique_ptr<bool[]> disk(new bool[static_cast<std::size_t>(files)]());
    const auto start = Clock::now();
    auto n = larder::KeptStore::keep_rank(
        place, job, 0, paths, std::span<const bool>(disk.get(), static_cast<std::size_t>(files)),
        kept);
    if (!n.ok() || !larder::KeptStore::complete_step(place, job).ok()) {
      fmt::print(stderr, "larder-keptbench: keeping step {} failed: {}\n", s,
                 n.ok() ? "complete" : n.status().to_string());
      status = 1;
      break;
    }
    fmt::print("kept step {}: {} records in {} files, {:.3f} s\n", s, per_step, files,
               seconds_since(start));
  }
  for (int i = 0; i < repeat && status == 0; ++i) {
    const std::string job = fmt::format("next-{}", i);
    auto start = Clock::now();
    auto prepared = larder::KeptStore::prepare(place, job, ~0ULL, ~0ULL, std::chrono::hours(24));
    const double prepare_s = seconds_since(start);
    if (!prepared.ok()) {
      fmt::print(stderr, "larder-keptbench: prepare failed: {}\n", prepared.status().to_string());
      status = 1;
      break;
    }
    start = Clock::now();
    auto store = larder::KeptStore::open(place, job);
    const double open_s = seconds_since(start);
    if (!store.ok()) {
      fmt::print(stderr, "larder-keptbench: open failed: {}\n", store.status().to_string());
      status = 1;
      break;
    }
    start = Clock::now();
    std::uint64_t found = 0;
    for (std::uint64_t k = 0; k < key; ++k) {
      found += (*store)->find(larder::Key{mix(k), mix(k ^ 0x5555), 0}) != nullptr ? 1 : 0;
    }
    const double find_s = seconds_since(start);
    struct stat st {};
    const std::string table = place.shm_root() + "/table-" + job;
    const auto table_bytes = ::stat(table.c_str(), &st) == 0 ? st.st_size : 0;
    fmt::print(
        "prepare {:.3f} s, table {:.1f} MB, open {:.4f} s, {} lookups {:.3f} s ({:.0f} ns each), "
        "{} found\n",
        prepare_s, static_cast<double>(table_bytes) / 1e6, open_s, key, find_s,
        find_s * 1e9 / static_cast<double>(std::max<std::uint64_t>(key, 1)), found);
    if (found != prepared->chunks || found != key) {
      fmt::print(stderr, "larder-keptbench: {} of {} keys found, the table holds {}\n", found, key,
                 prepared->chunks);
      status = 1;
    }
    store->reset();
    larder::KeptStore::remove_table(place, job);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description opts("larder-keptbench options");
  opts.add_options()("help,h", "this help")(
      "records", po::value<std::uint64_t>()->default_value(1280000), "kept chunk records")(
      "steps", po::value<int>()->default_value(1), "finished steps they are spread over")(
      "files", po::value<int>()->default_value(64), "kept files per step")(
      "dir", po::value<std::string>()->default_value("/dev/shm"), "where the store is made")(
      "repeat", po::value<int>()->default_value(3), "preparations timed");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    fmt::print(stderr, "larder-keptbench: {}\n", e.what());
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << opts << "\n";
    return 0;
  }
  const auto records = vm["records"].as<std::uint64_t>();
  const int steps = vm["steps"].as<int>();
  const int files = vm["files"].as<int>();
  if (records == 0 || steps < 1 || files < 1) {
    fmt::print(stderr, "larder-keptbench: --records, --steps and --files must be at least 1\n");
    return 2;
  }
  try {
    return run(records, steps, files, vm["dir"].as<std::string>(), vm["repeat"].as<int>());
  } catch (const std::exception& e) {
    fmt::print(stderr, "larder-keptbench: {}\n", e.what());
    return 1;
  }
}
