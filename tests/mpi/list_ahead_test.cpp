// List-ahead's copies between nodes (Cache::list_ahead_copies), 4 ranks on 2 emulated nodes.
// Rank 0 (node 0) lists directory `a` and loads its small files. On node 1, rank 2 lists `big`,
// then rank 3 lists `a`: its list-ahead finds `a`'s files loaded on node 0. When the small files
// node 1 has listed fit in its budget, it copies them to itself (an import's tree: every rank
// of every node reads it); when they are more than its budget, it leaves them on node 0 and reads
// them from there, so that its memory holds files no node holds yet (a dataset larger than the
// memory). Every rank then reads `a`, node 1's ranks `big` too: bytes equal direct reads.
#include <fcntl.h>
#include <unistd.h>

#include <larder/larder.h>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/api/runtime.hpp"
#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

class ListAheadTest : public MpiFixture {
 protected:
  static constexpr std::size_t kFilesA = 16;
  static constexpr std::size_t kFilesBig = 32;
  static constexpr std::uint64_t kSize = 12 << 10;  // whole pages: 21 fit in 256 KiB with a listing

  void SetUp() override {
    MpiFixture::SetUp();
    set_env("LARDER_NODE_SIZE", "2");
    set_env("LARDER_LIST_AHEAD_DIRS", "0");  // in the listing call: nothing in flight after it
    set_env("LARDER_DISK", "0");
    set_env("LARDER_READAHEAD", "0");
  }

  std::string name(const char* dir, std::size_t i) const {
    return std::string(dir) + "/f" + std::to_string(i);
  }
  void make_dirs() {
    if (rank() == 0) {
      std::filesystem::create_directory(data("a"));
      std::filesystem::create_directory(data("big"));
    }
    barrier();
    for (std::size_t i = 0; i < kFilesA; ++i) make_file(name("a", i), kSize, 900 + i);
    for (std::size_t i = 0; i < kFilesBig; ++i) make_file(name("big", i), kSize, 950 + i);
  }
  // Rank `who` lists `dir` (its node's list-ahead runs in the call); the others wait for it.
  void list_on(int who, const char* dir) {
    if (rank() == who) {
      Lease s = Runtime::instance().session();
      ASSERT_TRUE(s);
      auto listing = s->cache().list(data(dir));
      ASSERT_TRUE(listing.ok()) << listing.status().to_string();
      EXPECT_EQ((*listing)->names().size(), std::string(dir) == "a" ? kFilesA : kFilesBig);
    }
    barrier();
  }
  void read_dir(const char* dir, std::size_t files) {
    for (std::size_t i = 0; i < files; ++i) {
      const std::string path = data(name(dir, i));
      std::vector<std::byte> got(kSize);
      const int fd = larder_open(path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << path;
      EXPECT_EQ(larder_pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(kSize)) << path;
      larder_close(fd);
      EXPECT_EQ(got, read_whole(path)) << "rank " << rank() << ": " << path;
    }
  }
  // The sequence of the file's comment; the job's stats.
  nlohmann::json run() {
    make_dirs();
    init();
    list_on(0, "a");
    list_on(2, "big");
    list_on(3, "a");
    read_dir("a", kFilesA);
    if (rank() >= 2) read_dir("big", kFilesBig);
    return finalize();
  }
};

TEST_F(ListAheadTest, ANodeCopiesTheSmallFilesItListedWhenTheyFitItsBudget) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  set_env("LARDER_MEM", "4M");
  const auto stats = run();
  EXPECT_EQ(u64(stats["list_ahead"]["not_copied"]), 0U) << stats["list_ahead"].dump();
  // Rank 3 copied `a`'s files to node 1; node 1's reads of them were on its node.
  EXPECT_EQ(u64(stats["node"]["copies"]), kFilesA) << stats["node"].dump();
  EXPECT_EQ(u64(stats["hits"]["remote"]), 0U) << stats["hits"].dump();
  EXPECT_EQ(u64(stats["pfs"]["read_ops"]), kFilesA + kFilesBig) << stats["pfs"].dump();
  EXPECT_EQ(u64(stats["fallbacks"]), 0U) << stats["fallback_causes"].dump();
}

TEST_F(ListAheadTest, ANodeLeavesOnTheirNodeTheSmallFilesItListedBeyondItsBudget) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  // 256 KiB a rank: `a` fits rank 0's, `big` fills rank 2's, and rank 3 has room for `a`. But
  // node 1 listed 48 files of 12 KiB (576 KiB) for a budget of 512 KiB.
  set_env("LARDER_MEM", "512K");
  const auto stats = run();
  EXPECT_EQ(u64(stats["list_ahead"]["not_copied"]), kFilesA) << stats["list_ahead"].dump();
  EXPECT_EQ(u64(stats["node"]["copies"]), 0U) << stats["node"].dump();
  // Node 1's ranks read `a` from node 0's memory, each file from the PFS once for the job.
  EXPECT_GE(u64(stats["hits"]["remote"]), 2 * kFilesA) << stats["hits"].dump();
  EXPECT_EQ(u64(stats["fallback_causes"]["integrity"]), 0U);
}

}  // namespace
}  // namespace larder::testing
