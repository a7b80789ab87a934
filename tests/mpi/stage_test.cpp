// larder_stage: a tree loaded into the job's cache before it is read, each chunk from the PFS once
// and by one rank (chunk g of the job-wide list by rank g % size), so that every later read is
// a hit; what cannot be staged is counted, never an error.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <larder/larder.hpp>

#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

class StageTest : public MpiFixture {
 protected:
  // Rank 0 makes directory `name` under the data directory; everyone waits for it.
  void make_dir(const std::string& name) {
    if (rank() == 0) {
      ASSERT_EQ(::mkdir(data(name).c_str(), 0755), 0) << name;
    }
    barrier();
  }
  std::uint64_t chunks_of(std::uint64_t bytes) const {
    return (bytes + chunk_size - 1) / chunk_size;
  }
};

// Reads the file whole through Larder (one read call).
std::vector<std::byte> read_cached(const std::string& path) {
  File f(path);
  std::vector<std::byte> out(f.size());
  EXPECT_EQ(f.read_at(out, 0), out.size());
  return out;
}

TEST_F(StageTest, ATreeIsLoadedOnceSpreadOverTheRanksAndThenEveryReadIsAHit) {
  set_env("LARDER_NODE_SIZE", "2");  // at 4 ranks: 2 nodes of 2, so some hits cross nodes
  // Stage's own spreading of chunks over the ranks (list-ahead would load the small files of a
  // listed directory first, on the rank that lists it: tested in list_ahead_test).
  set_env("LARDER_LIST_AHEAD", "0");
  // tree/a (3 chunks + 1 byte), tree/b (empty), tree/sub/c (1 chunk), tree/sub/deeper/d (2.5
  // chunks), tree/link_to_a (a symlink to a file: staged), tree/link_to_sub (a symlink to a
  // directory: not walked, counted skipped), and a missing root.
  make_dir("tree");
  make_dir("tree/sub");
  make_dir("tree/sub/deeper");
  const std::vector<std::pair<std::string, std::uint64_t>> files = {
      {"tree/a", 3 * chunk_size + 1},
      {"tree/b", 0},
      {"tree/sub/c", chunk_size},
      {"tree/sub/deeper/d", 2 * chunk_size + chunk_size / 2},
  };
  std::uint64_t bytes = 0;
  std::uint64_t chunks = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    make_file(files[i].first, files[i].second, 30 + i);
    bytes += files[i].second;
    chunks += chunks_of(files[i].second);
  }
  if (rank() == 0) {
    ASSERT_EQ(::symlink(data("tree/a").c_str(), data("tree/link_to_a").c_str()), 0);
    ASSERT_EQ(::symlink(data("tree/sub").c_str(), data("tree/link_to_sub").c_str()), 0);
  }
  barrier();
  init();

  const larder_stats_t before = Session::stats();
  const std::vector<std::string> roots = {data("tree"), data("missing")};
  const larder_stage_result_t staged = Session::stage(roots);
  // link_to_a names the same contents as tree/a: listed as a file of its own, its chunks are
  // already cached (same keys), so no further PFS reads.
  EXPECT_EQ(staged.files, files.size() + 1);
  EXPECT_EQ(staged.bytes, bytes + files[0].second);
  EXPECT_EQ(staged.chunks, chunks + chunks_of(files[0].second));
  EXPECT_EQ(staged.not_cached, 0u);
  EXPECT_EQ(staged.skipped, 2u);  // link_to_sub and the missing root

  // This rank loaded its share of the job-wide list of distinct chunks: tree/a's chunks come
  // first ("a" < "b" < "link_to_a" < ...), link_to_a's chunks are hits of the same keys.
  const larder_stats_t after = Session::stats();
  std::uint64_t mine = 0;
  std::uint64_t g = 0;
  std::vector<std::uint64_t> per_file = {chunks_of(files[0].second), 0, chunks_of(files[0].second),
                                         chunks_of(files[2].second), chunks_of(files[3].second)};
  for (std::size_t f = 0; f < per_file.size(); ++f) {
    for (std::uint64_t i = 0; i < per_file[f]; ++i, ++g) {
      if (f != 2 && g % static_cast<std::uint64_t>(size()) == static_cast<std::uint64_t>(rank()))
        ++mine;
    }
  }
  EXPECT_EQ(after.misses - before.misses, mine);

  // Every rank now reads every file: the right bytes, and no chunk read from the PFS again.
  for (const auto& [name, size] : files) {
    EXPECT_EQ(read_cached(data(name)), read_whole(data(name))) << name;
  }
  EXPECT_EQ(read_cached(data("tree/link_to_a")), read_whole(data("tree/a")));
  const auto stats = finalize();
  EXPECT_EQ(stats["pfs"]["read_ops"], chunks);
  EXPECT_EQ(stats["pfs"]["bytes_read"], bytes);
  EXPECT_EQ(stats["misses"].get<std::uint64_t>() + stats["prefetches"].get<std::uint64_t>(),
            chunks);
  EXPECT_EQ(stats["fallbacks"], 0);
}

TEST_F(StageTest, WhatDoesNotFitIsCountedAndStillReadsRight) {
  // A memory budget for 8 chunks per node and a tree of 40: the rest is counted not_cached, and
  // reads of it come from the PFS with the right bytes.
  set_env("LARDER_MEM", std::to_string(8 * chunk_size * static_cast<std::uint64_t>(size())));
  make_dir("big");
  make_file("big/f", 40 * chunk_size, 41);
  init();
  const larder_stage_result_t staged = Session::stage({data("big")});
  EXPECT_EQ(staged.files, 1u);
  EXPECT_EQ(staged.chunks, 40u);
  EXPECT_GT(staged.not_cached, 0u);
  EXPECT_LT(staged.not_cached, 40u);
  EXPECT_EQ(read_cached(data("big/f")), read_whole(data("big/f")));
  const auto stats = finalize();
  EXPECT_GT(stats["fallbacks"].get<std::uint64_t>(), 0u);
}

TEST_F(StageTest, PathsOutsideThePrefixAreSkippedNotErrors) {
  init();
  const char* paths[] = {"/etc/hostname", "", "relative/not/there"};
  larder_stage_result_t staged{};
  ASSERT_EQ(larder_stage(paths, 3, &staged), LARDER_OK) << larder_last_error();
  EXPECT_EQ(staged.files, 0u);
  EXPECT_EQ(staged.skipped, 3u);
  ASSERT_EQ(larder_stage(nullptr, 0, nullptr), LARDER_OK);
  EXPECT_EQ(larder_stage(nullptr, 1, nullptr), LARDER_ERR_INVALID_ARGUMENT);
  finalize();
}

}  // namespace
}  // namespace larder::testing
