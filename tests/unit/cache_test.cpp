#include "runtime/cache/cache.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <random>
#include <thread>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/directory/local_directory.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/path/path.hpp"
#include "tests/support/data_files.hpp"
#include "tests/support/faulty_file_system.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

constexpr std::uint64_t kChunk = 64 << 10;

// One process's cache over real files in a temporary directory.
class CacheHarness {
 public:
  // Read-ahead (LARDER_READAHEAD) is off unless a test asks for it: its loads run on threads of
  // their own, so the counts of misses of a test that reads in order would depend on timing.
  // `nodes`: how many nodes the job has (this rank is on the first); with one, the node table's
  // claims are the job's and the directory is not asked for them.
  explicit CacheHarness(std::uint64_t mem_budget = 64 << 20, std::size_t dir_capacity = 1 << 16,
                        bool with_node_table = false, std::uint32_t readahead = 0, int nodes = 1)
      : pfs(stats), directory(dir_capacity) {
    config.chunk_size = kChunk;
    config.readahead = readahead;
    config.prefixes = {path::real_path_or_empty(data.path())};
    auto arena = Arena::create(arenas / "arena-0.mem", mem_budget);
    if (!arena.ok()) throw std::runtime_error(arena.status().to_string());
    tiers.set(Tier::kMem, std::move(*arena));
    CacheParts parts;
    parts.config = &config;
    parts.stats = &stats;
    parts.pfs = &pfs;
    parts.directory = &directory;
    parts.tiers = &tiers;
    parts.clock = [this] { return now; };  // moved by the tests, never by time passing
    parts.node_files_dir = arenas.path();
    parts.topology.size = nodes;  // one rank a node
    // The node's table, shared with the node's other (imagined) ranks.
    if (with_node_table) {
      auto table = NodeTable::create(arenas / "node-table", 1024, 1024);
      if (!table.ok()) throw std::runtime_error(table.status().to_string());
      node = std::move(*table);
      parts.node = node.get();
    }
    cache = std::make_unique<Cache>(std::move(parts));
  }

  std::string make_file(const std::string& name, std::uint64_t size, std::uint64_t seed = 1) {
    const std::string p = path::real_path_or_empty(data.path()) + "/" + name;
    testing::write_data_file(p, size, seed);
    return p;
  }

  CachedFile open(const std::string& p) {
    auto record = cache->lookup(p);
    if (!record.ok() || record->error != 0) throw std::runtime_error("lookup failed for " + p);
    return CachedFile::of(p, *record);
  }

  std::vector<std::byte> read(const CachedFile& f, std::uint64_t offset, std::size_t length) {
    std::vector<std::byte> out(length);
    auto n = cache->read(f, out, offset);
    if (!n.ok()) throw std::runtime_error(n.status().to_string());
    out.resize(*n);
    return out;
  }

  std::uint64_t count(Counter c) const { return stats.snapshot().get(c); }

  // Rewrites `p` in place with other bytes of the same size, and moves its mtime (a rewrite
  // within one clock tick of the file system would otherwise look the same to stat).
  void rewrite(const std::string& p, std::uint64_t size, std::uint64_t seed) {
    testing::write_data_file(p, size, seed);
    const timespec times[2] = {{0, UTIME_OMIT}, {static_cast<time_t>(seed) * 1000, 0}};
    if (::utimensat(AT_FDCWD, p.c_str(), times, 0) != 0) throw std::runtime_error("utimensat");
  }

  std::int64_t now = 1'000'000;  // the cache's clock, seconds
  testing::TempDir data{"larder-data"};
  testing::TempDir arenas{"larder-arena"};
  Config config;
  Stats stats;
  testing::FaultyFileSystem pfs;
  LocalDirectory directory;
  LocalTiers tiers;
  std::unique_ptr<NodeTable> node;
  std::unique_ptr<Cache> cache;
};

// Another rank of a CacheHarness's node: its own stats, file system, directory (which knows
// nothing) and no memory of its own, over the harness's node table.
struct NodePeer {
  explicit NodePeer(CacheHarness& h) : pfs(stats), directory(1 << 16) {
    CacheParts parts;
    parts.config = &h.config;
    parts.stats = &stats;
    parts.pfs = &pfs;
    parts.directory = &directory;
    parts.tiers = &tiers;
    parts.clock = [&h] { return h.now; };
    parts.node_files_dir = h.arenas.path();
    parts.node = h.node.get();
    cache = std::make_unique<Cache>(std::move(parts));
  }
  std::uint64_t count(Counter c) const { return stats.snapshot().get(c); }

  Stats stats;
  testing::FaultyFileSystem pfs;
  LocalDirectory directory;
  LocalTiers tiers;
  std::unique_ptr<Cache> cache;
};

TEST(CacheTest, ReadsMatchDirectPreadAtRandomOffsetsAndLengths) {
  CacheHarness h;
  std::mt19937_64 rng(7);
  for (std::uint64_t size :
       std::vector<std::uint64_t>{0, 1, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 17, 1000003}) {
    const std::string p = h.make_file("f" + std::to_string(size), size, size + 3);
    const CachedFile f = h.open(p);
    ASSERT_EQ(f.size, size);
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t off = size == 0 ? 0 : rng() % (size + 10);
      const std::size_t len = static_cast<std::size_t>(rng() % (3 * kChunk));
      ASSERT_EQ(h.read(f, off, len), testing::direct_read(p, off, len))
          << "size " << size << " off " << off;
    }
  }
}

TEST(CacheTest, SecondReadOfAChunkDoesNotTouchTheFileSystem) {
  CacheHarness h;
  const std::string p = h.make_file("a", 5 * kChunk + 100);
  const CachedFile f = h.open(p);
  ASSERT_EQ(h.read(f, 0, 5 * kChunk + 100), testing::read_whole(p));
  const std::uint64_t reads = h.count(Counter::pfs_read_ops);
  const std::uint64_t bytes = h.count(Counter::pfs_bytes_read);
  EXPECT_EQ(reads, 6u);  // one per chunk
  EXPECT_EQ(bytes, 5 * kChunk + 100);
  EXPECT_EQ(h.count(Counter::misses), 6u);
  EXPECT_EQ(h.count(Counter::hits_self), 0u);
  ASSERT_EQ(h.read(f, 0, 5 * kChunk + 100), testing::read_whole(p));
  ASSERT_EQ(h.read(f, kChunk / 2, kChunk), testing::direct_read(p, kChunk / 2, kChunk));
  EXPECT_EQ(h.count(Counter::pfs_read_ops), reads);
  EXPECT_EQ(h.count(Counter::pfs_bytes_read), bytes);
  EXPECT_EQ(h.count(Counter::hits_self), 6u + 2u);
}

TEST(CacheTest, FullArenaFallsBackToCorrectBytes) {
  CacheHarness h(/*mem_budget=*/2 * kChunk);
  const std::string p = h.make_file("big", 10 * kChunk);
  const CachedFile f = h.open(p);
  ASSERT_EQ(h.read(f, 0, 10 * kChunk), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::misses), 2u);     // what fit
  EXPECT_EQ(h.count(Counter::fallbacks), 8u);  // the rest, read directly
  ASSERT_EQ(h.read(f, 0, 10 * kChunk), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::hits_self), 2u);
  EXPECT_EQ(h.count(Counter::fallbacks), 16u);
}

TEST(CacheTest, FullDirectoryFallsBackToCorrectBytes) {
  CacheHarness h(64 << 20, /*dir_capacity=*/3);  // one path entry and two chunks
  const std::string p = h.make_file("a", 6 * kChunk);
  const CachedFile f = h.open(p);
  ASSERT_EQ(h.read(f, 0, 6 * kChunk), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::misses), 2u);
  EXPECT_EQ(h.count(Counter::fallbacks), 4u);
}

TEST(CacheTest, SparseFileOverFourGiB) {
  CacheHarness h;
  const std::string p = h.make_file("sparse", 0);
  {
    const int fd = ::open(p.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, (5ll << 30) + 12345), 0);
    const char marks[] = "four-gib-boundary";
    ASSERT_EQ(::pwrite(fd, marks, sizeof marks, (4ll << 30) - 8),
              static_cast<ssize_t>(sizeof marks));
    ASSERT_EQ(::pwrite(fd, marks, 4, (5ll << 30) + 12345 - 4), 4);
    ::close(fd);
  }
  const CachedFile f = h.open(p);
  ASSERT_EQ(f.size, (5ull << 30) + 12345);
  for (std::uint64_t off : {(4ull << 30) - 16, (4ull << 30) - 8, (4ull << 30),
                            (5ull << 30) + 12345 - 10, (3ull << 30) + 7, (5ull << 30) + 12345}) {
    EXPECT_EQ(h.read(f, off, 64), testing::direct_read(p, off, 64)) << off;
  }
}

TEST(CacheTest, MetadataIsLookedUpOncePerPathIncludingMissingOnes) {
  CacheHarness h;
  const std::string p = h.make_file("a", 10);
  for (int i = 0; i < 5; ++i) {
    auto r = h.cache->lookup(p);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->error, 0);
    EXPECT_EQ(r->meta.size, 10u);
    EXPECT_TRUE(r->managed());
  }
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 1u);
  const std::string missing = path::real_path_or_empty(h.data.path()) + "/missing";
  for (int i = 0; i < 5; ++i) {
    auto r = h.cache->lookup(missing);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->error, ENOENT);
  }
  auto notdir = h.cache->lookup(p + "/below");
  ASSERT_TRUE(notdir.ok());
  EXPECT_EQ(notdir->error, ENOTDIR);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 3u);
}

TEST(CacheTest, AskingAgainAfterTheNodesResolverFailedIsCountedAsARetry) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true, 0, /*nodes=*/2);
  const std::string first = h.make_file("first", 10);
  const std::string second = h.make_file("second", 10);
  // Another rank of the node claimed the first path's entry and failed it.
  const NodeTable::Found other =
      h.node->acquire(path_key(KeyKind::kPath, first), std::chrono::milliseconds(0));
  ASSERT_EQ(other.outcome, NodeTable::Found::Outcome::kClaimed);
  h.node->fail(other.slot);

  auto r = h.cache->lookup(second);  // resolved for the node: one operation, no retry
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(h.count(Counter::directory_ops), 1u);
  EXPECT_EQ(h.count(Counter::directory_retries), 0u);
  r = h.cache->lookup(first);  // the node's answer failed: this rank asks again itself
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->meta.size, 10u);
  EXPECT_EQ(h.count(Counter::directory_ops), 2u);
  EXPECT_EQ(h.count(Counter::directory_retries), 1u);
}

TEST(CacheTest, AJobOfOneNodeResolvesWhatItsNodeTableClaimedWithoutTheDirectory) {
  // One node: every rank asks the node table first, so what this rank claimed there nobody else
  // loads; the directory would only echo the claim.
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true);
  const std::string p = h.make_file("data.bin", 3 * kChunk + 5, 4);
  const CachedFile f = h.open(p);
  EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::directory_ops), 0u);
  EXPECT_EQ(h.count(Counter::misses) + h.count(Counter::prefetches), 4u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 4u);
  // The node's other ranks find the answers in the table: a second cache over it (another rank
  // of the node) reads no byte from the PFS and asks the directory nothing.
  NodePeer other(h);
  auto record = other.cache->lookup(p);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(other.count(Counter::directory_ops), 0u);
  EXPECT_EQ(other.count(Counter::pfs_stat_ops), 0u);

  // The same job on two nodes asks the directory for each key its node table claimed.
  CacheHarness two(64 << 20, 1 << 16, /*with_node_table=*/true, 0, /*nodes=*/2);
  const std::string q = two.make_file("data.bin", 3 * kChunk + 5, 4);
  const CachedFile g = two.open(q);
  EXPECT_EQ(two.read(g, 0, g.size), testing::read_whole(q));
  EXPECT_GE(two.count(Counter::directory_ops), 4u);
}

TEST(CacheTest, AJobOfOneNodeTellsItsRanksToReadTheFileSystemForWhatItsClaimerCouldNotKeep) {
  // One chunk of memory: the claimer keeps chunk 0 and has no room for chunks 1 to 3. On
  // several nodes the directory's FAILED entry tells the other ranks to read the PFS; on one the
  // node table does, and nobody asks the directory.
  CacheHarness h(kChunk, 1 << 16, /*with_node_table=*/true);
  const std::string p = h.make_file("big.bin", 3 * kChunk + 5, 6);
  const CachedFile f = h.open(p);
  EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::fallback_no_room), 3u);
  EXPECT_EQ(h.count(Counter::directory_ops), 0u);
  NodePeer other(h);  // no memory at all: a load of its own would keep nothing either
  auto record = other.cache->lookup(p);
  ASSERT_TRUE(record.ok());
  const CachedFile g = CachedFile::of(p, *record);
  std::vector<std::byte> got(2 * kChunk + 5);
  auto n = other.cache->read(g, got, kChunk);
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, got.size());
  EXPECT_EQ(got, testing::direct_read(p, kChunk, 2 * kChunk + 5));
  EXPECT_EQ(other.count(Counter::directory_ops), 0u);
  EXPECT_EQ(other.count(Counter::fallback_no_room), 3u);
  EXPECT_EQ(other.count(Counter::pfs_read_ops), 3u);  // its reads, not loads of its own
}

TEST(CacheTest, AFileChangedInPlaceIsReadFromTheFileSystemOnceItsAnswerIsRevalidated) {
  CacheHarness h;
  h.config.revalidate = std::chrono::seconds(10);
  const std::uint64_t size = 3 * kChunk + 17;
  const std::string p = h.make_file("data.bin", size, 1);
  const auto before = testing::read_whole(p);
  EXPECT_EQ(h.read(h.open(p), 0, size), before);

  h.rewrite(p, size, 2);
  const auto after = testing::read_whole(p);
  ASSERT_NE(before, after);
  // Within the period the job's answer holds (documented): no stat, the cached bytes.
  h.now += 9;
  EXPECT_EQ(h.read(h.open(p), 0, size), before);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 1u);

  // After it, the answer is checked again: the file changed, so its cached chunks are not used.
  h.now += 1;
  const CachedFile changed = h.open(p);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 2u);
  EXPECT_EQ(h.count(Counter::meta_revalidations), 1u);
  EXPECT_EQ(h.count(Counter::meta_changed), 1u);
  EXPECT_EQ(h.read(changed, 0, size), after);
  EXPECT_EQ(h.read(changed, kChunk - 5, 2 * kChunk),
            testing::direct_read(p, kChunk - 5, 2 * kChunk));
  EXPECT_GE(h.count(Counter::stale_chunks), 4u);
  // The renewed answer is fresh for another period: no more stats.
  h.now += 5;
  EXPECT_EQ(h.read(h.open(p), 0, size), after);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 2u);
}

TEST(CacheTest, AnUnchangedFileKeepsItsCachedChunksAfterRevalidation) {
  CacheHarness h;
  h.config.revalidate = std::chrono::seconds(10);
  const std::string p = h.make_file("same.bin", 2 * kChunk, 3);
  EXPECT_EQ(h.read(h.open(p), 0, 2 * kChunk), testing::read_whole(p));
  const auto reads = h.count(Counter::pfs_read_ops);
  h.now += 100;
  EXPECT_EQ(h.read(h.open(p), 0, 2 * kChunk), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::meta_revalidations), 1u);
  EXPECT_EQ(h.count(Counter::meta_changed), 0u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), reads);  // every byte still from the cache
}

TEST(CacheTest, AMissingPathAppearsOnceItsAnswerIsRevalidated) {
  CacheHarness h;
  h.config.revalidate = std::chrono::seconds(10);
  const std::string dir = path::real_path_or_empty(h.data.path());
  const std::string p = dir + "/late";
  auto missing = h.cache->lookup(p);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->error, ENOENT);
  auto listing = h.cache->list(dir);
  ASSERT_TRUE(listing.ok());
  const std::uint64_t entries = (*listing)->count;  // "." and ".." too

  h.make_file("late", kChunk + 3, 4);
  h.now += 9;
  EXPECT_EQ(h.cache->lookup(p)->error, ENOENT);  // the rule: one period at most
  h.now += 1;
  auto found = h.cache->lookup(p);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->error, 0);
  EXPECT_EQ(h.count(Counter::meta_changed), 1u);
  const CachedFile f = h.open(p);
  EXPECT_EQ(h.read(f, 0, kChunk + 3), testing::read_whole(p));
  const auto reads = h.count(Counter::pfs_read_ops);
  EXPECT_EQ(h.read(f, 0, kChunk + 3), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::pfs_read_ops), reads);  // a file that appeared is cached as usual
  auto relisted = h.cache->list(dir);
  ASSERT_TRUE(relisted.ok());
  EXPECT_EQ((*relisted)->count, entries + 1);
}

// Each way a file can change between two reads of a job: after one period the reads give what
// the file system has now (bytes, or its errno), never the cached bytes of the old file.
enum class Change { kRewritten, kGrown, kShrunk, kReplacedByRename, kRemoved };

class ChangedFileTest : public ::testing::TestWithParam<Change> {};

TEST_P(ChangedFileTest, ReadsGiveWhatTheFileSystemHasAfterOnePeriod) {
  CacheHarness h;
  h.config.revalidate = std::chrono::seconds(10);
  const std::uint64_t size = 2 * kChunk + 100;
  const std::string p = h.make_file("f.bin", size, 7);
  EXPECT_EQ(h.read(h.open(p), 0, size), testing::read_whole(p));
  switch (GetParam()) {
    case Change::kRewritten:
      h.rewrite(p, size, 8);
      break;
    case Change::kGrown:
      h.rewrite(p, size + kChunk, 9);
      break;
    case Change::kShrunk:
      h.rewrite(p, kChunk / 2, 10);
      break;
    case Change::kReplacedByRename: {
      const std::string tmp = h.make_file("f.tmp", size, 11);
      ASSERT_EQ(::rename(tmp.c_str(), p.c_str()), 0);
      break;
    }
    case Change::kRemoved:
      ASSERT_EQ(::unlink(p.c_str()), 0);
      break;
  }
  h.now += 10;
  auto record = h.cache->lookup(p);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(h.count(Counter::meta_changed), 1u);
  if (GetParam() == Change::kRemoved) {
    EXPECT_EQ(record->error, ENOENT);
    return;
  }
  ASSERT_EQ(record->error, 0);
  const CachedFile f = CachedFile::of(p, *record);
  EXPECT_EQ(f.size, testing::read_whole(p).size());
  EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p));
  EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p));  // and again
}

INSTANTIATE_TEST_SUITE_P(EveryChange, ChangedFileTest,
                         ::testing::Values(Change::kRewritten, Change::kGrown, Change::kShrunk,
                                           Change::kReplacedByRename, Change::kRemoved));

TEST(CacheTest, ANodeFileIsOneWholeCopyMadeOnceAndCountedAgainstTheBudget) {
  CacheHarness h(8 * kChunk);
  const std::string p = h.make_file("mapped.bin", 3 * kChunk + 11, 12);
  const CachedFile f = h.open(p);
  auto name = h.cache->node_file(f);
  ASSERT_TRUE(name.ok()) << name.status().to_string();
  EXPECT_EQ(testing::read_whole(*name), testing::read_whole(p));
  struct stat st {};
  ASSERT_EQ(::stat(name->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0400u);  // whole, published, never written again
  const auto reads = h.count(Counter::pfs_read_ops);
  auto again = h.cache->node_file(f);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *name);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), reads);
  EXPECT_EQ(h.count(Counter::node_files), 1u);
  EXPECT_EQ(h.count(Counter::node_file_bytes), 3 * kChunk + 11);
  // The file's chunks and its node file use 8 chunks of budget: a second file finds no room.
  const std::string q = h.make_file("too-big.bin", 3 * kChunk, 13);
  EXPECT_FALSE(h.cache->node_file(h.open(q)).ok());
  EXPECT_EQ(h.count(Counter::node_files), 1u);
}

TEST(CacheTest, RevalidationOffKeepsTheJobsFirstAnswer) {
  CacheHarness h;
  h.config.revalidate = std::chrono::seconds(0);
  const std::string p = h.make_file("fixed.bin", kChunk, 5);
  const auto before = testing::read_whole(p);
  EXPECT_EQ(h.read(h.open(p), 0, kChunk), before);
  h.rewrite(p, kChunk, 6);
  h.now += 1'000'000;
  EXPECT_EQ(h.read(h.open(p), 0, kChunk), before);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 1u);
  EXPECT_EQ(h.count(Counter::meta_revalidations), 0u);
}

TEST(CacheTest, AListingResolvesItsEntriesAndLoadsItsSmallFilesAhead) {
  CacheHarness h;
  const std::string dir = path::real_path_or_empty(h.data.path()) + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0755), 0);
  const std::vector<std::pair<std::string, std::uint64_t>> files = {
      {"d/small", 1000}, {"d/chunk", kChunk}, {"d/empty", 0}, {"d/big", 3 * kChunk + 5}};
  for (std::size_t i = 0; i < files.size(); ++i) h.make_file(files[i].first, files[i].second, i);
  auto listing = h.cache->list(dir);
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ((*listing)->error, 0);
  h.cache->settle_background();  // list-ahead resolves the entries on a thread of its own
  EXPECT_EQ(h.count(Counter::list_ahead_background), 1u);
  // The listing, the stat of each of its 5 entries, and the data of the 2 small files.
  EXPECT_EQ(h.count(Counter::pfs_list_ops), 1u);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 5u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 2u);
  EXPECT_EQ(h.count(Counter::prefetches), 2u);
  const std::string root = path::real_path_or_empty(h.data.path());
  for (const auto& [name, size] : files) {
    const CachedFile f = h.open(root + "/" + name);  // a stat answered ahead
    ASSERT_EQ(f.size, size);
    EXPECT_EQ(h.read(f, 0, size), testing::read_whole(root + "/" + name)) << name;
  }
  auto sub = h.cache->lookup(dir + "/sub");
  ASSERT_TRUE(sub.ok());
  EXPECT_TRUE(sub->meta.is_directory());
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 5u);       // no stat after the listing
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 2u + 4u);  // only the big file's 4 chunks
  EXPECT_EQ(h.count(Counter::misses), 4u);
}

TEST(CacheTest, ListAheadIsOffAtZero) {
  CacheHarness h;
  h.config.list_ahead = 0;
  const std::string dir = path::real_path_or_empty(h.data.path()) + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  for (int i = 0; i < 3; ++i) h.make_file("d/f" + std::to_string(i), 100, i);
  auto listing = h.cache->list(dir);
  ASSERT_TRUE(listing.ok());
  EXPECT_EQ((*listing)->count, 5u);  // ".", ".." and 3 files
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 0u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 0u);
}

// A directory larger than LARDER_LIST_AHEAD is resolved ahead in batches of that many entries
// (issue 27: it used to fall to the per-file path, several times slower than plain).
TEST(CacheTest, ALargeDirectoryIsResolvedAheadInBatches) {
  CacheHarness h;
  h.config.list_ahead = 2;
  const std::string dir = path::real_path_or_empty(h.data.path()) + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  for (int i = 0; i < 7; ++i) h.make_file("d/f" + std::to_string(i), 100 + i, i);
  auto listing = h.cache->list(dir);
  ASSERT_TRUE(listing.ok());
  h.cache->settle_background();
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 7u);  // 4 batches: 2, 2, 2, 1
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 7u);
  const std::string root = path::real_path_or_empty(h.data.path());
  for (int i = 0; i < 7; ++i) {
    const std::string name = root + "/d/f" + std::to_string(i);
    const CachedFile f = h.open(name);
    EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(name));
  }
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 7u);  // every answer from the listing's batches
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 7u);
}

// The loads of a batch are made several at a time (LARDER_LOAD_PARALLEL), each a PFS round trip:
// four reads meet in flight (the fake file system holds each read until four are), and every
// file's bytes and the counters are what one load at a time gives.
TEST(CacheTest, ListAheadLoadsSeveralSmallFilesAtATime) {
  for (const std::uint32_t parallel : {8u, 1u}) {
    CacheHarness h;
    h.config.load_parallel = parallel;
    if (parallel > 1) h.pfs.meet = 4;
    const std::string dir = path::real_path_or_empty(h.data.path()) + "/d";
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    for (int i = 0; i < 64; ++i) h.make_file("d/f" + std::to_string(i), 100 + i, i);
    ASSERT_TRUE(h.cache->list(dir).ok());
    h.cache->settle_background();
    EXPECT_EQ(h.count(Counter::pfs_stat_ops), 64u) << parallel;
    EXPECT_EQ(h.count(Counter::pfs_read_ops), 64u) << parallel;
    EXPECT_EQ(h.count(Counter::prefetches), 64u) << parallel;
    if (parallel > 1) {
      EXPECT_GE(h.pfs.max_in_flight.load(), 4) << "the reads were made one at a time";
    }
    const std::string root = path::real_path_or_empty(h.data.path());
    for (int i = 0; i < 64; ++i) {
      const std::string name = root + "/d/f" + std::to_string(i);
      const CachedFile f = h.open(name);
      EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(name)) << name;
    }
    EXPECT_EQ(h.count(Counter::pfs_read_ops), 64u) << "every file from the batch";
  }
}

// Directories listed one after another are resolved ahead at the same time
// (LARDER_LIST_AHEAD_DIRS): with one load at a time per batch, the loads of four directories meet
// in flight, and every answer and byte is what resolving them in the listing call gives. With 0,
// each listing call resolves its own directory before it returns.
TEST(CacheTest, ListAheadResolvesSeveralDirectoriesAtOnce) {
  for (const std::uint32_t dirs : {4u, 0u}) {
    CacheHarness h;
    h.config.load_parallel = 1;
    h.config.list_ahead_dirs = dirs;
    if (dirs > 0) h.pfs.meet = 4;
    const std::string root = path::real_path_or_empty(h.data.path());
    for (int d = 0; d < 4; ++d) {
      const std::string dir = "c" + std::to_string(d);
      ASSERT_EQ(::mkdir((root + "/" + dir).c_str(), 0755), 0);
      for (int i = 0; i < 8; ++i) h.make_file(dir + "/f" + std::to_string(i), 100 + i, d * 8 + i);
    }
    for (int d = 0; d < 4; ++d) ASSERT_TRUE(h.cache->list(root + "/c" + std::to_string(d)).ok());
    if (dirs == 0) {  // resolved in the calls: nothing left to wait for
      EXPECT_EQ(h.count(Counter::pfs_read_ops), 32u);
      EXPECT_EQ(h.count(Counter::list_ahead_inline), 4u);
      EXPECT_EQ(h.count(Counter::list_ahead_background), 0u);
    }
    h.cache->settle_background();
    EXPECT_EQ(h.count(Counter::list_ahead_background), dirs > 0 ? 4u : 0u);
    EXPECT_EQ(h.count(Counter::pfs_stat_ops), 32u) << dirs;
    EXPECT_EQ(h.count(Counter::pfs_read_ops), 32u) << dirs;
    EXPECT_EQ(h.count(Counter::prefetches), 32u) << dirs;
    if (dirs > 0) {
      EXPECT_GE(h.pfs.max_in_flight.load(), 4) << "the directories were resolved one at a time";
    }
    for (int d = 0; d < 4; ++d) {
      for (int i = 0; i < 8; ++i) {
        const std::string p = root + "/c" + std::to_string(d) + "/f" + std::to_string(i);
        const CachedFile f = h.open(p);
        EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p)) << p;
      }
    }
    EXPECT_EQ(h.count(Counter::pfs_stat_ops), 32u) << "every stat answered ahead";
    EXPECT_EQ(h.count(Counter::pfs_read_ops), 32u) << "every file from a batch";
  }
}

// A read that comes while its directory is being resolved in the background waits for the
// batch's answer or resolves the file itself: either way the PFS serves each file once and the
// bytes are the file's.
TEST(CacheTest, ReadsDuringABackgroundListAheadGetTheRightBytesOnce) {
  CacheHarness h;
  const std::string root = path::real_path_or_empty(h.data.path());
  ASSERT_EQ(::mkdir((root + "/d").c_str(), 0755), 0);
  for (int i = 0; i < 200; ++i) h.make_file("d/f" + std::to_string(i), 300 + i, i);
  ASSERT_TRUE(h.cache->list(root + "/d").ok());
  for (int i = 199; i >= 0; --i) {  // from the end: some before their batch gets to them
    const std::string p = root + "/d/f" + std::to_string(i);
    const CachedFile f = h.open(p);
    EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p)) << p;
  }
  h.cache->settle_background();
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 200u);
  EXPECT_EQ(h.count(Counter::pfs_stat_ops), 200u);
  EXPECT_EQ(h.count(Counter::fallbacks), 0u);
}

TEST(CacheTest, ListAheadLoadsNoMoreThanTheArenaHolds) {
  CacheHarness h(2 * kChunk + 4096);  // room for the listing and two small files
  const std::string dir = path::real_path_or_empty(h.data.path()) + "/d";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  for (int i = 0; i < 4; ++i) h.make_file("d/f" + std::to_string(i), kChunk, i);
  ASSERT_TRUE(h.cache->list(dir).ok());
  h.cache->settle_background();
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 2u);
  const std::string root = path::real_path_or_empty(h.data.path());
  for (int i = 0; i < 4; ++i) {
    const std::string p = root + "/d/f" + std::to_string(i);
    const CachedFile f = h.open(p);
    EXPECT_EQ(h.read(f, 0, f.size), testing::read_whole(p)) << p;
  }
}

TEST(CacheTest, SymlinkOutOfThePrefixIsNotManaged) {
  CacheHarness h;
  testing::TempDir outside("larder-outside");
  testing::write_data_file(outside / "secret", 100, 9);
  const std::string link = path::real_path_or_empty(h.data.path()) + "/escape";
  ASSERT_EQ(::symlink(outside.path().c_str(), link.c_str()), 0);
  auto r = h.cache->lookup(link + "/secret");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->error, 0);
  EXPECT_FALSE(r->managed());
  auto inside = h.cache->lookup(h.make_file("b", 3));
  ASSERT_TRUE(inside.ok());
  EXPECT_TRUE(inside->managed());
}

TEST(CacheTest, FileSystemReadErrorsAreReturnedAsTheFileSystemGaveThem) {
  CacheHarness h;
  const std::string p = h.make_file("a", 3 * kChunk);
  const CachedFile f = h.open(p);
  h.pfs.fail_reads_with = EIO;
  std::vector<std::byte> buf(100);
  auto n = h.cache->read(f, buf, 0);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().native_code(), EIO);
  h.pfs.fail_reads_with = 0;
  // The failed chunk is read directly from now on; bytes stay right.
  EXPECT_EQ(h.read(f, 0, 3 * kChunk), testing::read_whole(p));
  EXPECT_EQ(h.count(Counter::misses), 2u);
}

TEST(CacheTest, AFileThatShrankReturnsWhatTheFileSystemHas) {
  CacheHarness h;
  const std::string p = h.make_file("a", 3 * kChunk);
  const CachedFile f = h.open(p);  // the cached size says 3 chunks
  ASSERT_EQ(::truncate(p.c_str(), kChunk + 10), 0);
  const auto got = h.read(f, 0, 3 * kChunk);
  EXPECT_EQ(got, testing::read_whole(p));
  EXPECT_EQ(got.size(), kChunk + 10);
}

TEST(CacheTest, ConcurrentReadersLoadEachChunkOnce) {
  CacheHarness h;
  const std::string p = h.make_file("a", 16 * kChunk + 5);
  const CachedFile f = h.open(p);
  const auto whole = testing::read_whole(p);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      for (int i = 0; i < 300; ++i) {
        const std::uint64_t off = rng() % whole.size();
        const std::size_t len = static_cast<std::size_t>(rng() % (2 * kChunk));
        std::vector<std::byte> buf(len);
        auto n = h.cache->read(f, buf, off);
        const std::size_t expect = std::min<std::size_t>(len, whole.size() - off);
        if (!n.ok() || *n != expect ||
            !std::equal(buf.begin(), buf.begin() + static_cast<long>(expect),
                        whole.begin() + static_cast<long>(off))) {
          ++bad;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 17u);
  EXPECT_EQ(h.count(Counter::misses), 17u);
}

// Told the order: a read that comes while its chunk's prefetch is under way waits for that load
// (the PFS is read once), gets the file's bytes and counts in prefetch.waited; a read of a chunk
// made ready ahead counts in prefetch.ready instead, and a read of a chunk loaded on demand in
// neither.
TEST(CacheTest, AReadThatOvertakesItsPrefetchWaitsForItAndIsCounted) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true);
  const std::string a = h.make_file("a", kChunk / 2, 3);
  const std::string b = h.make_file("b", kChunk + 5, 4);
  const CachedFile fa = h.open(a);
  const CachedFile fb = h.open(b);
  h.pfs.hold(true);
  h.cache->schedule({Cache::ScheduledRead{a, 0, 0}}, false);
  ASSERT_TRUE(h.pfs.wait_held(1));  // the prefetch's load of a is under way, and held
  std::vector<std::byte> got;
  std::thread reader([&] { got = h.read(fa, 0, kChunk); });
  // The read counts itself before it waits: only then may the load go on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (h.count(Counter::prefetch_waited) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  h.pfs.hold(false);
  reader.join();
  EXPECT_EQ(got, testing::direct_read(a, 0, kChunk));
  EXPECT_EQ(h.count(Counter::prefetch_waited), 1u);
  EXPECT_GT(h.count(Counter::prefetch_wait_ns), 0u);
  EXPECT_EQ(h.count(Counter::prefetch_ready), 0u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 1u);

  h.cache->schedule({Cache::ScheduledRead{b, 0, 0}}, true);
  h.cache->settle_prefetch();
  EXPECT_EQ(h.read(fb, 0, 2 * kChunk), testing::direct_read(b, 0, 2 * kChunk));
  EXPECT_EQ(h.read(fa, 0, kChunk), testing::direct_read(a, 0, kChunk));
  EXPECT_EQ(h.count(Counter::prefetch_waited), 1u);  // b's two chunks were ready
  EXPECT_EQ(h.count(Counter::prefetch_ready), 3u);   // and so was a, read a second time
  EXPECT_EQ(h.count(Counter::prefetch_chunks), 3u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 3u);
  EXPECT_EQ(h.count(Counter::misses), 0u);

  const std::string c = h.make_file("c", kChunk / 2, 7);  // never scheduled
  const CachedFile fc = h.open(c);
  EXPECT_EQ(h.read(fc, 0, kChunk), testing::direct_read(c, 0, kChunk));
  EXPECT_EQ(h.read(fc, 0, kChunk), testing::direct_read(c, 0, kChunk));
  EXPECT_EQ(h.count(Counter::misses), 1u);
  EXPECT_EQ(h.count(Counter::prefetch_ready), 3u);
}

// Told the order: a chunk is ready on the node as soon as its own load ends, not when the rest
// of its batch has loaded: b's read does not wait while a, later in the same batch, is held.
TEST(CacheTest, APrefetchedChunkIsReadyBeforeTheRestOfItsBatch) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true);
  h.config.load_parallel = 1;  // the batch loads b, then a
  const std::string a = h.make_file("a", kChunk / 2, 5);
  const std::string b = h.make_file("b", kChunk / 2, 6);
  const CachedFile fa = h.open(a);
  const CachedFile fb = h.open(b);
  h.pfs.hold(true, a);
  h.cache->schedule({Cache::ScheduledRead{b, 0, 0}, Cache::ScheduledRead{a, 0, 0}}, false);
  ASSERT_TRUE(h.pfs.wait_held(1));  // a's load is under way, so b's has ended
  EXPECT_EQ(h.read(fb, 0, kChunk), testing::direct_read(b, 0, kChunk));
  EXPECT_EQ(h.count(Counter::prefetch_waited), 0u);
  h.pfs.hold(false);
  h.cache->settle_prefetch();
  EXPECT_EQ(h.read(fa, 0, kChunk), testing::direct_read(a, 0, kChunk));
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 2u);
  EXPECT_EQ(h.count(Counter::prefetch_chunks), 2u);
  EXPECT_EQ(h.count(Counter::misses), 0u);
}

// Told the order: a loader reports the position of what it has handed out, ahead of its reads (a
// DataLoader's sampler). Entries behind the position are fetched all the same.
TEST(CacheTest, EntriesBehindTheReportedPositionAreStillFetched) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true);
  std::vector<std::string> paths;
  std::vector<Cache::ScheduledRead> reads;
  for (int i = 0; i < 12; ++i) {  // more than the first batch (Cache::kPrefetchFirstBatch)
    paths.push_back(h.make_file("p" + std::to_string(i), kChunk / 4, 10 + i));
    h.open(paths.back());
    reads.push_back(Cache::ScheduledRead{paths.back(), 0, 0});
  }
  h.pfs.hold(true);
  h.cache->schedule(reads, false);
  ASSERT_TRUE(h.pfs.wait_held(1));           // the first batch is loading
  h.cache->schedule_position(reads.size());  // every entry handed out, none read yet
  h.pfs.hold(false);
  h.cache->settle_prefetch();
  EXPECT_EQ(h.count(Counter::prefetch_chunks), reads.size());
  EXPECT_GT(h.count(Counter::prefetch_passed), 0u);
  for (const std::string& p : paths) {
    EXPECT_EQ(h.read(h.open(p), 0, kChunk), testing::direct_read(p, 0, kChunk));
  }
  EXPECT_EQ(h.count(Counter::misses), 0u);
  EXPECT_EQ(h.count(Counter::prefetch_ready), reads.size());
  EXPECT_EQ(h.count(Counter::pfs_read_ops), reads.size());
}

// Read-ahead: a file read in order has its next LARDER_READAHEAD chunks made ready while the
// reader copies the current one. Each read is followed by settle_prefetch() (read-ahead's
// threads idle), so every count is exact.
TEST(CacheTest, AFileReadInOrderHasItsNextChunksMadeReadyAhead) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true, /*readahead=*/3);
  const std::string p = h.make_file("seq", 10 * kChunk + 100, 31);
  const CachedFile f = h.open(p);
  const std::uint64_t step = kChunk / 2;  // two reads a chunk
  for (std::uint64_t off = 0; off < f.size; off += step) {
    ASSERT_EQ(h.read(f, off, step), testing::direct_read(p, off, step)) << off;
    h.cache->settle_prefetch();
    if (off == 0) {  // a miss starts a stream, but nothing is read ahead before it continues
      EXPECT_EQ(h.count(Counter::readahead_chunks), 0u);
    } else if (off == step) {  // the second read continues it: chunks 1 .. 3 ahead
      EXPECT_EQ(h.count(Counter::readahead_chunks), 3u);
    }
  }
  // Only chunk 0 was a miss; the other 10 chunks (the last one short) were made ready ahead, and
  // each chunk was read from the PFS once.
  EXPECT_EQ(h.count(Counter::misses), 1u);
  EXPECT_EQ(h.count(Counter::readahead_chunks), 10u);
  EXPECT_EQ(h.count(Counter::readahead_bytes), 10 * kChunk + 100 - kChunk);
  EXPECT_EQ(h.count(Counter::prefetches), 10u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 11u);
  EXPECT_EQ(h.count(Counter::hits_self), 20u);  // 21 reads, the first one a miss
  EXPECT_EQ(h.count(Counter::fallbacks), 0u);
}

// Reads out of order start no stream that continues: nothing is read ahead, and a stream that
// ends at the file's end is forgotten.
TEST(CacheTest, ReadsOutOfOrderReadNothingAhead) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true, /*readahead=*/4);
  const std::string p = h.make_file("rand", 12 * kChunk, 32);
  const CachedFile f = h.open(p);
  for (const std::uint64_t chunk : {5, 2, 9, 0, 11, 7, 3}) {
    ASSERT_EQ(h.read(f, chunk * kChunk, kChunk), testing::direct_read(p, chunk * kChunk, kChunk));
    h.cache->settle_prefetch();
  }
  EXPECT_EQ(h.count(Counter::readahead_chunks), 0u);
  EXPECT_EQ(h.count(Counter::misses), 7u);
  // A whole-file read covers every chunk itself: nothing is left to read ahead.
  const std::string q = h.make_file("whole", 4 * kChunk, 33);
  const CachedFile g = h.open(q);
  EXPECT_EQ(h.read(g, 0, 4 * kChunk), testing::read_whole(q));
  h.cache->settle_prefetch();
  EXPECT_EQ(h.count(Counter::readahead_chunks), 0u);
}

// A worker's reads: its rank sees only the misses (Cache::place), not the hits in between, so a
// miss just after the chunks asked for ahead continues the stream.
TEST(CacheTest, AWorkersMissesAfterTheChunksReadAheadContinueTheStream) {
  CacheHarness h(64 << 20, 1 << 16, /*with_node_table=*/true, /*readahead=*/3);
  const std::string p = h.make_file("worker", 12 * kChunk, 35);
  const CachedFile f = h.open(p);
  auto place = [&](std::uint64_t chunk) {
    ASSERT_TRUE(h.cache->place(f, chunk).ok());
    h.cache->settle_prefetch();
  };
  place(0);  // a miss: a stream starts
  place(1);  // continues it: chunks 2 .. 4 ahead
  EXPECT_EQ(h.count(Counter::readahead_chunks), 3u);
  place(5);  // the worker read 2 .. 4 from its node's table: 6 .. 8 ahead
  EXPECT_EQ(h.count(Counter::readahead_chunks), 6u);
  place(9);
  EXPECT_EQ(h.count(Counter::readahead_chunks), 8u);  // 10 and 11: the file ends there
  EXPECT_EQ(h.count(Counter::misses), 4u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 12u);
  for (std::uint64_t chunk = 0; chunk < 12; ++chunk) {
    EXPECT_EQ(h.read(f, chunk * kChunk, kChunk), testing::direct_read(p, chunk * kChunk, kChunk));
  }
  EXPECT_EQ(h.count(Counter::misses), 4u);
}

// A budget smaller than the window: read-ahead stops where the budget ends (nothing is evicted
// for it), and the reads past it take the PFS with the right bytes.
TEST(CacheTest, ReadAheadStopsAtTheBudget) {
  CacheHarness h(/*mem_budget=*/4 * kChunk, 1 << 16, /*with_node_table=*/true, /*readahead=*/8);
  const std::string p = h.make_file("big", 9 * kChunk, 34);
  const CachedFile f = h.open(p);
  for (std::uint64_t chunk = 0; chunk < 9; ++chunk) {
    ASSERT_EQ(h.read(f, chunk * kChunk, kChunk), testing::direct_read(p, chunk * kChunk, kChunk));
    h.cache->settle_prefetch();
  }
  EXPECT_EQ(h.count(Counter::misses) + h.count(Counter::readahead_chunks), 4u);
  EXPECT_EQ(h.count(Counter::fallbacks), 5u);
  EXPECT_EQ(h.count(Counter::pfs_read_ops), 9u);
}

// Model-based: a random mix of files, offsets and lengths against direct reads (the model).
TEST(CacheTest, RandomizedAgainstDirectReads) {
  // Small, so some reads take the fallback; read-ahead on, racing the reads for the budget.
  CacheHarness h(/*mem_budget=*/8 * kChunk, 1 << 16, /*with_node_table=*/false, /*readahead=*/4);
  std::mt19937_64 rng(2024);
  std::vector<std::string> files;
  std::map<std::string, std::vector<std::byte>> model;
  for (int i = 0; i < 6; ++i) {
    const std::uint64_t size = rng() % (5 * kChunk);
    files.push_back(h.make_file("m" + std::to_string(i), size, static_cast<std::uint64_t>(i)));
    model[files.back()] = testing::read_whole(files.back());
  }
  for (int step = 0; step < 2000; ++step) {
    const std::string& p = files[rng() % files.size()];
    const auto& expect = model[p];
    const CachedFile f = h.open(p);
    const std::uint64_t off = rng() % (expect.size() + 5);
    const std::size_t len = static_cast<std::size_t>(rng() % (2 * kChunk + 3));
    const auto got = h.read(f, off, len);
    const std::size_t n =
        off >= expect.size() ? 0 : std::min<std::size_t>(len, expect.size() - off);
    ASSERT_EQ(got.size(), n) << p << " @" << off;
    ASSERT_TRUE(std::equal(
        got.begin(), got.end(),
        expect.begin() + static_cast<long>(std::min<std::uint64_t>(off, expect.size()))));
  }
}

}  // namespace
}  // namespace larder
