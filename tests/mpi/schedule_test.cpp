// Told the order (larder_schedule): 4 ranks on 2 emulated nodes hand Larder their coming reads
// (whole small files and byte ranges of large ones, in a shuffled order), wait until the
// prefetch has settled, then read. Every read equals a direct read; the chunks were loaded
// ahead (no read missed), each from the PFS once for the job; a second epoch that reads the
// other node's files finds them copied to its node ahead. Then the faults: entries naming
// nothing Larder can cache, a schedule larger than the budget, ranks that read what they did not
// schedule, and the job ending while prefetches are in flight. The chunks made ready that no
// read of their node used are counted at finalize (prefetch.unused_bytes).
#include <fcntl.h>
#include <unistd.h>

#include <larder/larder.h>
#include <algorithm>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

class ScheduleTest : public MpiFixture {
 protected:
  static constexpr std::uint64_t kChunk = 64 << 10;
  static constexpr std::size_t kSmall = 48;

  void SetUp() override {
    chunk_size = kChunk;
    MpiFixture::SetUp();
    set_env("LARDER_NODE_SIZE", "2");
    set_env("LARDER_LIST_AHEAD", "0");  // only the schedule loads ahead
  }

  // 48 small files of 1 B .. 60 KiB, and 2 large ones of 3 chunks and a bit.
  std::vector<std::uint64_t> sizes() const {
    std::vector<std::uint64_t> s;
    std::mt19937_64 random(49);
    for (std::size_t i = 0; i < kSmall; ++i) s.push_back(1 + random() % (60 << 10));
    s.push_back(3 * kChunk + 17);
    s.push_back(5 * kChunk + 1);
    return s;
  }
  std::string name(std::size_t i) const { return "set/f" + std::to_string(i); }
  std::uint64_t make_dataset() {
    if (rank() == 0) std::filesystem::create_directory(data("set"));
    barrier();
    std::uint64_t bytes = 0;
    const auto s = sizes();
    for (std::size_t i = 0; i < s.size(); ++i) {
      make_file(name(i), s[i], 300 + i);
      bytes += s[i];
    }
    return bytes;
  }

  // Epoch `epoch`'s reads of rank `r`: the small files i with (i + epoch) % 4 == r, shuffled, and
  // a byte range of a large file (rank r % 2's), as a sampler's share of a permutation.
  struct Read {
    std::size_t file;
    std::uint64_t offset;
    std::uint64_t length;
  };
  std::vector<Read> reads_of(int r, int epoch) const {
    std::vector<Read> out;
    for (std::size_t i = 0; i < kSmall; ++i) {
      if (static_cast<int>((i + static_cast<std::size_t>(epoch)) % 4) == r)
        out.push_back({i, 0, 0});
    }
    std::mt19937_64 random(static_cast<std::uint64_t>(epoch * 10 + r));
    std::shuffle(out.begin(), out.end(), random);
    const std::size_t large = kSmall + static_cast<std::size_t>((r + epoch) % 2);
    out.push_back({large, r < 2 ? 0 : kChunk + 5, r < 2 ? kChunk + 5 : 0});
    return out;
  }

  void schedule(const std::vector<Read>& reads, unsigned flags = 0) {
    std::vector<std::string> paths;
    paths.reserve(reads.size());
    for (const Read& r : reads) paths.push_back(data(name(r.file)));
    std::vector<larder_read_t> plan;
    for (std::size_t k = 0; k < reads.size(); ++k) {
      plan.push_back({paths[k].c_str(), reads[k].offset, reads[k].length});
    }
    ASSERT_EQ(larder_schedule(plan.data(), plan.size(), flags), LARDER_OK) << larder_last_error();
  }
  static void settle() {
    if (Lease s = Runtime::instance().session()) s->cache().settle_prefetch();
  }

  // Reads each entry through the C API and compares it with a direct read; reports the
  // position as it goes.
  void read(const std::vector<Read>& reads, const char* who) {
    const auto s = sizes();
    for (std::size_t k = 0; k < reads.size(); ++k) {
      const Read& r = reads[k];
      const std::string path = data(name(r.file));
      const std::uint64_t end = r.length == 0 ? s[r.file] : r.offset + r.length;
      std::vector<std::byte> got(end - r.offset);
      const int fd = larder_open(path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << path;
      EXPECT_EQ(larder_pread(fd, got.data(), got.size(), static_cast<off_t>(r.offset)),
                static_cast<ssize_t>(got.size()))
          << path;
      larder_close(fd);
      const auto whole = read_whole(path);
      EXPECT_TRUE(
          std::equal(got.begin(), got.end(), whole.begin() + static_cast<std::ptrdiff_t>(r.offset)))
          << who << " rank " << rank() << ": " << path;
      EXPECT_EQ(larder_schedule_position(k + 1), LARDER_OK);
    }
  }
};

TEST_F(ScheduleTest, ScheduledReadsFindTheirChunksReadyAndThePfsIsReadOnce) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  const std::uint64_t bytes = make_dataset();
  init();
  int job_rank = -1;
  int job_size = 0;
  ASSERT_EQ(larder_job(&job_rank, &job_size), LARDER_OK);
  EXPECT_EQ(job_rank, rank());
  EXPECT_EQ(job_size, size());
  // Epoch 0, with epoch 1's order appended as a sampler hands it.
  schedule(reads_of(rank(), 0));
  schedule(reads_of(rank(), 1), LARDER_SCHEDULE_APPEND);
  settle();
  barrier();
  read(reads_of(rank(), 0), "epoch 0");
  barrier();
  // Epoch 1 replaces the schedule: each rank reads files another rank (of either node) loaded.
  schedule(reads_of(rank(), 1));
  settle();
  barrier();
  read(reads_of(rank(), 1), "epoch 1");
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  // Every chunk was loaded ahead of its read, from the PFS once for the job.
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
  EXPECT_EQ(u64(stats["pfs"]["bytes_read"]), bytes) << stats["pfs"].dump();
  EXPECT_EQ(u64(stats["prefetch"]["loaded_bytes"]), bytes) << stats["prefetch"].dump();
  EXPECT_EQ(u64(stats["fallbacks"]), 0U) << stats["fallback_causes"].dump();
  // Epoch 1's chunks held on the other node were copied to the reading node ahead: no read went
  // over the network itself.
  EXPECT_EQ(u64(stats["hits"]["remote"]), 0U) << stats["hits"].dump();
  EXPECT_GT(u64(stats["node"]["copies"]), 0U) << stats["node"].dump();
  EXPECT_EQ(u64(stats["prefetch"]["skipped"]), 0U);
  // Each read came after its prefetch had settled: none waited for one.
  EXPECT_EQ(u64(stats["prefetch"]["waited"]), 0U) << stats["prefetch"].dump();
  EXPECT_EQ(u64(stats["prefetch"]["wait_ns"]), 0U);
  // ... and found its chunks made ready ahead on its node: each read counts once per chunk.
  std::uint64_t reads = 0;
  for (int r = 0; r < 4; ++r) reads += reads_of(r, 0).size() + reads_of(r, 1).size();
  EXPECT_GE(u64(stats["prefetch"]["ready"]), reads) << stats["prefetch"].dump();
  // Every chunk made ready was read on its node.
  EXPECT_EQ(u64(stats["prefetch"]["unused_bytes"]), 0U) << stats["prefetch"].dump();
}

// A job of one node: the rank that claims a scheduled chunk in the node table loads and
// publishes it there only (Cache::resolve_on_node, from the bulk path); the directory is never
// asked. Epoch 1's reads come straight after its schedule: they find epoch 0's chunks.
TEST_F(ScheduleTest, AJobOfOneNodeMakesItsScheduleReadyWithoutTheDirectory) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks";
  set_env("LARDER_NODE_SIZE", "4");
  const std::uint64_t bytes = make_dataset();
  init();
  schedule(reads_of(rank(), 0));
  settle();
  barrier();
  read(reads_of(rank(), 0), "one node, epoch 0");
  barrier();
  // Each rank reads files other ranks of the node scheduled.
  schedule(reads_of(rank(), 1));
  read(reads_of(rank(), 1), "one node, epoch 1");
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  const auto& p = stats["prefetch"];
  EXPECT_EQ(u64(stats["directory"]["ops"]), 0U) << stats["directory"].dump();
  // Every chunk was loaded ahead of its read, from the PFS once.
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
  EXPECT_EQ(u64(stats["pfs"]["bytes_read"]), bytes) << stats["pfs"].dump();
  EXPECT_EQ(u64(p["loaded_bytes"]), bytes) << p.dump();
  EXPECT_EQ(u64(stats["fallbacks"]), 0U) << stats["fallback_causes"].dump();
  EXPECT_EQ(u64(stats["hits"]["remote"]), 0U) << stats["hits"].dump();
  EXPECT_EQ(u64(p["skipped"]), 0U) << p.dump();
  EXPECT_EQ(u64(p["waited"]), 0U) << p.dump();
  // ... and found it made ready on the node, in both epochs.
  std::uint64_t reads = 0;
  for (int r = 0; r < 4; ++r) reads += reads_of(r, 0).size() + reads_of(r, 1).size();
  EXPECT_GE(u64(p["ready"]), reads) << p.dump();
  EXPECT_EQ(u64(p["unused_bytes"]), 0U) << p.dump();
}

// The same job past its budget, its reads racing a small stage: bytes right, each chunk from
// the PFS at most once per reading rank and pass, still without the directory.
TEST_F(ScheduleTest, AJobOfOneNodePastItsBudgetRacesItsStageWithoutTheDirectory) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks";
  set_env("LARDER_NODE_SIZE", "4");
  set_env("LARDER_MEM", "256K");
  set_env("LARDER_PREFETCH_STAGE", "96K");
  const std::uint64_t bytes = make_dataset();
  init();
  for (int pass = 0; pass < 2; ++pass) {
    schedule(reads_of(rank(), pass), pass == 0 ? 0 : LARDER_SCHEDULE_APPEND);
    read(reads_of(rank(), pass), "one node, racing the stage");
  }
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  EXPECT_EQ(u64(stats["directory"]["ops"]), 0U) << stats["directory"].dump();
  EXPECT_LE(u64(stats["pfs"]["bytes_read"]), 2 * (bytes + 2 * kChunk))
      << stats["pfs"].dump() << stats["prefetch"].dump();
  EXPECT_EQ(u64(stats["fallbacks"]), u64(stats["fallback_causes"]["no_room"]))
      << stats["fallback_causes"].dump();
}

TEST_F(ScheduleTest, ChunksMadeReadyThatNoReadOfTheNodeUsedAreCountedUnused) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  make_dataset();
  init();
  schedule(reads_of(rank(), 0));
  settle();
  barrier();
  // Each rank reads the first half of its small files and leaves the rest, and its large range.
  std::vector<Read> mine = reads_of(rank(), 0);
  mine.resize(mine.size() / 2);
  read(mine, "half the schedule");
  barrier();
  const auto stats = finalize();
  // The bytes a node's schedules named and none of its reads used, chunk by chunk, summed over
  // the nodes: what the node leaders count at finalize.
  const auto s = sizes();
  std::uint64_t chunks = 0;
  std::uint64_t bytes = 0;
  for (int node = 0; node < 2; ++node) {
    std::set<std::pair<std::size_t, std::uint64_t>> scheduled;
    std::set<std::pair<std::size_t, std::uint64_t>> used;
    for (int r = 2 * node; r < 2 * node + 2; ++r) {
      const std::vector<Read> all = reads_of(r, 0);
      for (std::size_t k = 0; k < all.size(); ++k) {
        const Read& e = all[k];
        const std::uint64_t end = e.length == 0 ? s[e.file] : e.offset + e.length;
        for (std::uint64_t i = e.offset / kChunk; i <= (end - 1) / kChunk; ++i) {
          scheduled.insert({e.file, i});
          if (k < all.size() / 2) used.insert({e.file, i});
        }
      }
    }
    for (const auto& [file, index] : scheduled) {
      if (used.contains({file, index})) continue;
      ++chunks;
      bytes += ChunkGeometry{s[file], kChunk}.chunk_length(index);
    }
  }
  ASSERT_GT(bytes, 0U);
  EXPECT_EQ(u64(stats["prefetch"]["unused_chunks"]), chunks) << stats["prefetch"].dump();
  EXPECT_EQ(u64(stats["prefetch"]["unused_bytes"]), bytes) << stats["prefetch"].dump();
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
}

TEST_F(ScheduleTest, ChunksPastTheBudgetAreReadAheadIntoTheStageAndFromThePfsOnce) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "256K");  // 128 KiB a rank: a few of each rank's 13 files fit
  const std::uint64_t bytes = make_dataset();
  init();
  schedule(reads_of(rank(), 0));
  settle();
  barrier();
  read(reads_of(rank(), 0), "past the budget");
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  const auto& p = stats["prefetch"];
  // The budget held part of the schedule; the rest went into the ranks' stages.
  EXPECT_GE(u64(p["no_room"]), 1U) << p.dump();
  EXPECT_GT(u64(p["loaded_bytes"]), 0U) << p.dump();
  EXPECT_GT(u64(p["staged_bytes"]), 0U) << p.dump();
  EXPECT_LT(u64(p["loaded_bytes"]), bytes) << p.dump();
  // Every read the cache could not serve (no room) took its bytes from the stage: none waited
  // for the PFS itself, none found its chunk still loading (the prefetch had settled).
  EXPECT_EQ(u64(p["staged_reads"]), u64(stats["fallbacks"])) << p.dump() << stats.dump();
  EXPECT_EQ(u64(stats["fallbacks"]), u64(stats["fallback_causes"]["no_room"]));
  EXPECT_EQ(u64(p["waited"]), 0U) << p.dump();
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
  // Each PFS byte was read ahead, into the cache or a stage; and every staged chunk was read.
  EXPECT_EQ(u64(stats["pfs"]["bytes_read"]), u64(p["loaded_bytes"]) + u64(p["staged_bytes"]))
      << stats["pfs"].dump() << p.dump();
  EXPECT_EQ(u64(p["unused_bytes"]), 0U) << p.dump();
  EXPECT_EQ(u64(p["stage_full"]), 0U) << p.dump();
}

// Past the budget, the chunks another node holds (it had room for them, this node has none) are
// copied into the stage ahead, like those nobody holds are read into it from the PFS.
TEST_F(ScheduleTest, ChunksPastTheBudgetThatAnotherNodeHoldsAreCopiedIntoTheStage) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "256K");
  make_dataset();
  init();
  for (int epoch = 0; epoch < 2; ++epoch) {
    // Epoch 1: each rank reads files of the other node's ranks' epoch 0.
    schedule(reads_of(rank(), epoch));
    settle();
    barrier();
    read(reads_of(rank(), epoch), epoch == 0 ? "epoch 0" : "epoch 1, the other node's files");
    barrier();
  }
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  const auto& p = stats["prefetch"];
  EXPECT_GT(u64(p["copied_bytes"]), 0U) << p.dump();
  EXPECT_GE(u64(stats["hits"]["remote"]), u64(p["copied_chunks"])) << stats["hits"].dump();
  // Every byte that crossed the network was moved ahead: copies to the node, copies to a stage.
  EXPECT_EQ(u64(stats["transport"]["bytes"]),
            u64(p["copied_bytes"]) + u64(stats["node"]["copy_bytes"]))
      << stats["transport"].dump() << stats["node"].dump() << p.dump();
  // Every PFS byte was read ahead (into the cache or a stage), and every staged chunk was read.
  EXPECT_EQ(u64(stats["pfs"]["bytes_read"]), u64(p["loaded_bytes"]) + u64(p["staged_bytes"]))
      << stats["pfs"].dump() << p.dump();
  EXPECT_EQ(u64(p["unused_bytes"]), 0U) << p.dump();
  EXPECT_EQ(u64(p["waited"]), 0U) << p.dump();
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
  EXPECT_EQ(u64(stats["integrity"]["mismatches"]), 0U);
}

// A schedule of two epochs over the same files (a loader that reads the same shard every
// epoch, as DLIO's does, hands the next epoch's order with this one's): a chunk staged past the
// budget is kept after the first epoch's read for the second's, which the next schedule then
// finds staged. Each rank reads it from the PFS once, not once per epoch.
TEST_F(ScheduleTest, AChunkStagedForTwoEpochsIsReadFromThePfsOnceForBoth) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "256K");
  const std::uint64_t bytes = make_dataset();
  init();
  const std::vector<Read> first = reads_of(rank(), 0);
  const std::vector<Read> second(first.rbegin(), first.rend());
  schedule(first);
  schedule(second, LARDER_SCHEDULE_APPEND);
  settle();
  barrier();
  read(first, "epoch 0");
  barrier();
  schedule(second);  // the next epoch's schedule replaces this one
  settle();
  barrier();
  read(second, "epoch 1, the same files");
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n%s\n", stats.dump().c_str(), stats["prefetch"].dump().c_str());
  }
  const auto& p = stats["prefetch"];
  EXPECT_GT(u64(p["staged_bytes"]), 0U) << p.dump();
  // Both epochs' reads past the budget were served from the stages.
  EXPECT_EQ(u64(p["staged_reads"]), u64(stats["fallbacks"])) << p.dump() << stats.dump();
  EXPECT_EQ(u64(p["waited"]), 0U) << p.dump();
  EXPECT_EQ(u64(stats["misses"]), 0U) << stats.dump();
  // Each PFS byte was read ahead, and once for both epochs: the dataset, and the large files'
  // chunk that ranks of both nodes read once more. (Freed after the first epoch's read, the
  // staged chunks were read again for the second: about twice the staged bytes.)
  EXPECT_EQ(u64(stats["pfs"]["bytes_read"]), u64(p["loaded_bytes"]) + u64(p["staged_bytes"]))
      << stats["pfs"].dump() << p.dump();
  EXPECT_LE(u64(stats["pfs"]["bytes_read"]), bytes + 2 * kChunk) << stats["pfs"].dump();
  EXPECT_EQ(u64(p["unused_bytes"]), 0U) << p.dump();
}

TEST_F(ScheduleTest, ReadsThatRaceASmallStageGetTheirBytesAndReadEachChunkOnce) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "256K");
  set_env("LARDER_PREFETCH_STAGE", "96K");  // one large chunk and a small file or two
  const std::uint64_t bytes = make_dataset();
  init();
  // No settling: the reads race the schedule's batches, twice over the same files.
  for (int pass = 0; pass < 2; ++pass) {
    schedule(reads_of(rank(), 0), pass == 0 ? 0 : LARDER_SCHEDULE_APPEND);
    read(reads_of(rank(), 0), "racing the stage");
  }
  barrier();
  const auto stats = finalize();
  const auto& p = stats["prefetch"];
  // (Which reads the stage served here depends on the race; the test above counts them.)
  // Per pass, a chunk is read from the PFS at most once by each rank that reads it (by its read
  // or by its stage, never both): the dataset, and the large files' shared chunk once more.
  EXPECT_LE(u64(stats["pfs"]["bytes_read"]), 2 * (bytes + 2 * kChunk))
      << stats["pfs"].dump() << p.dump();
  // A read whose own load found no room counts that cause (not "directory").
  EXPECT_EQ(u64(stats["fallbacks"]), u64(stats["fallback_causes"]["no_room"]))
      << stats["fallback_causes"].dump();
}

TEST_F(ScheduleTest, AWrongScheduleCostsAtMostWhatItFetchedAndTheJobEndsCleanly) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "1M");  // the schedule names more than the node's budget
  make_dataset();
  if (rank() == 0) {
    std::filesystem::create_directory(data("set/dir"));
  }
  barrier();
  init();
  // Entries that name nothing Larder can cache, among real ones.
  const std::string missing = data("set/missing");
  const std::string dir = data("set/dir");
  const std::string a = data(name(static_cast<std::size_t>(rank())));
  std::vector<larder_read_t> plan = {{missing.c_str(), 0, 0}, {"/proc/self/status", 0, 0},
                                     {dir.c_str(), 0, 0},     {nullptr, 0, 0},
                                     {a.c_str(), 1 << 30, 0}, {"", 0, 0}};
  ASSERT_EQ(larder_schedule(plan.data(), plan.size(), 0), LARDER_OK) << larder_last_error();
  EXPECT_EQ(larder_schedule(nullptr, 1, 0), LARDER_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(larder_schedule(plan.data(), plan.size(), 4), LARDER_ERR_INVALID_ARGUMENT);
  settle();
  // Every file, the large ones whole, several times over: more than LARDER_MEM holds.
  std::vector<Read> all;
  for (int e = 0; e < 4; ++e) {
    for (std::size_t i = 0; i < sizes().size(); ++i) all.push_back({i, 0, 0});
  }
  schedule(all, LARDER_SCHEDULE_APPEND);
  settle();
  barrier();
  // Ranks leave their schedule: they read another rank's share, in another order.
  std::vector<Read> other = reads_of((rank() + 1) % 4, 2);
  std::reverse(other.begin(), other.end());
  read(other, "off the schedule");
  // The job ends while a new schedule's prefetches are in flight.
  schedule(reads_of(rank(), 3));
  barrier();
  const auto stats = finalize();
  if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
    std::printf("%s\n", stats["prefetch"].dump().c_str());
  }
  EXPECT_GE(u64(stats["prefetch"]["skipped"]), 4U * 5) << stats["prefetch"].dump();
  EXPECT_GE(u64(stats["prefetch"]["no_room"]), 1U) << stats["prefetch"].dump();
  // A prefetch never turns a read into a fallback of its own.
  EXPECT_EQ(u64(stats["fallback_causes"]["integrity"]), 0U);
}

}  // namespace
}  // namespace larder::testing
