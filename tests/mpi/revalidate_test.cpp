// Files that change during a job (docs/user-guide.md, "Files that change during the job"), at
// 4 ranks in 2 emulated nodes: a file rewritten in place is read as it was within one
// LARDER_REVALIDATE period and as it is now after it, by every rank; the check costs one PFS
// stat per node. The cache's clock is a seam the test moves: no waiting.
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <larder/larder.hpp>

#include "tests/mpi/mpi_fixture.hpp"
#include "tests/mpi/scoped_seams.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

using RevalidateTest = MpiFixture;

std::atomic<std::int64_t> g_now{1'000'000};  // this rank's cache clock, seconds

std::vector<std::byte> read_through_larder(const std::string& path) {
  File f(path);
  std::vector<std::byte> out(f.size());
  EXPECT_EQ(f.read_at(out, 0), out.size());
  return out;
}

TEST_F(RevalidateTest, ARewrittenFileIsReadAsItIsNowAfterOnePeriodWithOneStatPerNode) {
  constexpr int kNodeSize = 2;
  set_env("LARDER_NODE_SIZE", std::to_string(kNodeSize));
  set_env("LARDER_REVALIDATE", "10");
  Seams seams;
  seams.clock = [] { return g_now.load(); };
  ScopedSeams scoped(std::move(seams));
  const std::uint64_t bytes = 3 * chunk_size + 5;
  make_file("f", bytes, 1);
  init();
  const auto before = read_whole(data("f"));
  EXPECT_EQ(read_through_larder(data("f")), before);
  barrier();
  if (rank() == 0) {
    write_data_file(data("f"), bytes, 2);
    const timespec times[2] = {{0, UTIME_OMIT}, {2000, 0}};  // a distinct mtime, whatever the tick
    ASSERT_EQ(::utimensat(AT_FDCWD, data("f").c_str(), times, 0), 0);
  }
  barrier();
  const auto after = read_whole(data("f"));
  ASSERT_NE(before, after);
  g_now += 9;  // within the period: the job's answer holds
  EXPECT_EQ(read_through_larder(data("f")), before);
  barrier();
  g_now += 1;  // after it: checked again, by one rank per node
  EXPECT_EQ(read_through_larder(data("f")), after);
  EXPECT_EQ(read_through_larder(data("f")), after);
  barrier();
  const auto stats = finalize();
  if (rank() != 0) return;
  const std::uint64_t nodes = static_cast<std::uint64_t>(size() / kNodeSize);
  EXPECT_EQ(stats["meta"]["revalidations"].get<std::uint64_t>(), nodes);
  EXPECT_EQ(stats["meta"]["changed"].get<std::uint64_t>(), nodes);
  EXPECT_EQ(stats["pfs"]["stat_ops"].get<std::uint64_t>(), 1 + nodes);
  EXPECT_GT(stats["stale_chunks"].get<std::uint64_t>(), 0u);
}

}  // namespace
}  // namespace larder::testing
