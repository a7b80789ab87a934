// Several application threads per rank reading at once, across emulated nodes: the same chunks
// wanted by threads of one process, of one node and of other nodes at the same moment (node
// table, memo, directory claims and waits, transport gets from many threads on one worker), and
// finalize while threads are still reading (read leases, the drain, begin_close). Bytes are
// checked against direct reads. Run with 4 ranks over each transport; the tsan preset runs it
// under ThreadSanitizer, which is what these tests are mostly for.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

constexpr int kThreads = 4;

struct DataFile {
  std::string path;
  std::vector<std::byte> bytes;  // the reference, read directly
};

class ThreadsTest : public MpiFixture {
 protected:
  // Rank 0 writes `count` files of `chunks` chunks plus a tail; every rank reads them directly.
  std::vector<DataFile> make_files(const std::string& prefix, int count, std::uint64_t chunks) {
    std::vector<DataFile> files;
    for (int i = 0; i < count; ++i) {
      const std::string name = prefix + std::to_string(i);
      make_file(name, chunks * chunk_size + 1000 * static_cast<std::uint64_t>(i),
                40 + static_cast<std::uint64_t>(i));
      files.push_back({data(name), {}});
    }
    for (DataFile& d : files) d.bytes = read_whole(d.path);
    return files;
  }
};

// Waits until pred() holds; false after two minutes (a failure, not a hang).
template <class Pred>
bool eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

template <class Fn>
void run_threads(Fn fn) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(fn, t);
  for (std::thread& t : threads) t.join();
}

TEST_F(ThreadsTest, ThreadsOfEveryRankReadTheSameChunksAtOnceAndThePfsOnce) {
  if (size() % 2 != 0) GTEST_SKIP() << "needs an even number of ranks (2 emulated nodes)";
  set_env("LARDER_NODE_SIZE", std::to_string(size() / 2));
  constexpr std::uint64_t kChunks = 6;
  const std::vector<DataFile> files = make_files("f", 3, kChunks);
  init();
  std::atomic<int> wrong{0};
  barrier();  // every thread of every rank starts together
  run_threads([&](int t) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(rank() * kThreads + t) + 1);
    std::vector<std::size_t> order(files.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (int pass = 0; pass < 2; ++pass) {
      std::shuffle(order.begin(), order.end(), rng);
      for (std::size_t i : order) {
        const DataFile& d = files[i];
        const int fd = larder_open(d.path.c_str(), O_RDONLY);
        if (fd < 0) {
          ++wrong;
          continue;
        }
        // Pieces that straddle chunk boundaries, so threads meet in the middle of chunks.
        const std::size_t piece = chunk_size / 3 + 17 * static_cast<std::size_t>(t + 1);
        std::vector<std::byte> got(d.bytes.size());
        for (std::size_t off = 0; off < got.size(); off += piece) {
          const std::size_t n = std::min(piece, got.size() - off);
          if (larder_pread(fd, got.data() + off, n, static_cast<off_t>(off)) !=
              static_cast<ssize_t>(n)) {
            ++wrong;
          }
        }
        if (got != d.bytes) ++wrong;
        if (larder_close(fd) != 0) ++wrong;
      }
    }
  });
  EXPECT_EQ(wrong.load(), 0) << "on rank " << rank();
  const auto stats = finalize();
  std::uint64_t chunks = 0, bytes = 0;
  for (const DataFile& d : files) {
    chunks += (d.bytes.size() + chunk_size - 1) / chunk_size;
    bytes += d.bytes.size();
  }
  EXPECT_EQ(stats["pfs"]["read_ops"], chunks);
  EXPECT_EQ(stats["pfs"]["bytes_read"], bytes);
  EXPECT_EQ(stats["pfs"]["stat_ops"], files.size());
  EXPECT_EQ(stats["fallbacks"], 0);
}

// Reads through a lease as the preload library does (a lease per call); without one (finalize
// has begun) or when the cache cannot answer for the path, directly. -1: the read failed.
std::int64_t read_once(const std::string& path, int fd, std::span<std::byte> into,
                       std::uint64_t offset, bool* through_cache) {
  *through_cache = false;
  if (Lease s = Runtime::instance().session()) {
    auto record = s->lookup_for_open(path);
    if (record.ok() && record->error == 0 && record->managed()) {
      auto n = s->read(CachedFile::of(path, *record), into, offset);
      if (!n.ok()) return -1;
      *through_cache = true;
      return static_cast<std::int64_t>(*n);
    }
  }
  return ::pread(fd, into.data(), into.size(), static_cast<off_t>(offset));
}

TEST_F(ThreadsTest, FinalizeWhileThreadsReadWaitsForTheirReadsAndThenTheyReadThePfs) {
  set_env("LARDER_NODE_SIZE", "1");  // every rank its own node: reads in flight use the transport
  const std::vector<DataFile> files = make_files("g", 2, 8);
  init();
  std::atomic<int> wrong{0};
  std::atomic<int> cached_rounds{0};  // threads that read everything through the cache once
  std::atomic<bool> finalizing{false};
  std::atomic<int> direct_reads{0};  // threads that read without a lease after finalize began
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      std::vector<int> fds;
      for (const DataFile& d : files) fds.push_back(::open(d.path.c_str(), O_RDONLY | O_CLOEXEC));
      std::vector<std::byte> buf(chunk_size + 333);
      bool counted_round = false, counted_direct = false;
      while (!stop.load()) {
        bool all_cached = true;
        for (std::size_t i = 0; i < files.size(); ++i) {
          const DataFile& d = files[i];
          for (std::size_t off = static_cast<std::size_t>(t) * 101; off < d.bytes.size();
               off += buf.size()) {
            bool cached = false;
            const std::int64_t n = read_once(d.path, fds[i], buf, off, &cached);
            const std::size_t want = std::min(buf.size(), d.bytes.size() - off);
            if (n != static_cast<std::int64_t>(want) ||
                !std::equal(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(want),
                            d.bytes.begin() + static_cast<std::ptrdiff_t>(off))) {
              ++wrong;
            }
            all_cached = all_cached && cached;
            if (!cached && !counted_direct && finalizing.load()) {
              counted_direct = true;
              ++direct_reads;
            }
          }
        }
        if (all_cached && !counted_round) {
          counted_round = true;
          ++cached_rounds;
        }
      }
      for (int fd : fds) ::close(fd);
    });
  }
  EXPECT_TRUE(eventually([&] { return cached_rounds.load() == kThreads; }));
  finalizing.store(true);
  (void)finalize();  // collective; this rank's readers are still reading
  EXPECT_TRUE(eventually([&] { return direct_reads.load() == kThreads; }));
  stop.store(true);
  for (std::thread& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0) << "on rank " << rank();
  EXPECT_EQ(larder_initialized(), 0);
}

}  // namespace
}  // namespace larder::testing
