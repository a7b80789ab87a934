// How ranks wait for each other (docs/transports.md, "Waiting without an event to sleep on"),
// run with each transport: a lone reader whose peers are outside the cache (idle, away from MPI:
// only their progress threads can answer it), and every rank reading from the others at once
// (each waiting reader polls for its own answers). Bytes equal direct reads, the PFS reads each
// chunk once, nothing falls back (a stalled answer would, after LARDER_TIMEOUT).
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <larder/larder.hpp>
#include <string>
#include <vector>

#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

// Waits for every rank without spinning in MPI: a non-blocking barrier tested every millisecond,
// so that between tests this rank is outside MPI (as a rank computing is).
void idle_barrier() {
  MPI_Request done = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &done);
  for (int finished = 0;;) {
    MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
    if (finished != 0) return;
    const timespec ms{0, 1'000'000};
    ::nanosleep(&ms, nullptr);
  }
}

class WaitingTest : public MpiFixture {};

TEST_F(WaitingTest, ALoneReaderOfIdleRanksGetsEveryChunkFromThem) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks or more";
  set_env("LARDER_NODE_SIZE", "1");  // every rank its own node: every read crosses
  set_env("LARDER_TIMEOUT", "600");  // a stalled answer would show as a fallback, not a pass
  constexpr std::uint64_t kChunks = 24;
  // Each rank is the origin of its own file's chunks; then rank size-1 reads every file, in
  // pieces, while the others are outside MPI.
  for (int r = 0; r < size(); ++r)
    make_file("f" + std::to_string(r), kChunks * chunk_size + 17, 90 + r);
  init();
  const std::string mine = data("f" + std::to_string(rank()));
  EXPECT_EQ(read_in_pieces(mine, chunk_size), read_whole(mine));
  barrier();
  const int reader = size() - 1;
  if (rank() == reader) {
    for (int r = 0; r < size(); ++r) {
      const std::string path = data("f" + std::to_string(r));
      EXPECT_EQ(read_in_pieces(path, 10'000), read_whole(path)) << "file of rank " << r;
    }
  }
  idle_barrier();
  const auto stats = finalize();
  EXPECT_EQ(stats["pfs"]["read_ops"], static_cast<std::uint64_t>(size()) * (kChunks + 1));
  EXPECT_EQ(stats["fallbacks"], 0);
}

TEST_F(WaitingTest, EveryRankReadingFromTheOthersAtOnceGetsRightBytes) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks or more";
  set_env("LARDER_NODE_SIZE", "1");
  constexpr std::uint64_t kChunks = 12;
  for (int r = 0; r < size(); ++r) make_file("g" + std::to_string(r), kChunks * chunk_size, 95 + r);
  init();
  const std::string mine = data("g" + std::to_string(rank()));
  EXPECT_EQ(read_in_pieces(mine, chunk_size), read_whole(mine));
  barrier();
  // Every rank reads every other rank's file, starting at its neighbour's, all at once.
  for (int k = 1; k < size(); ++k) {
    const std::string path = data("g" + std::to_string((rank() + k) % size()));
    EXPECT_EQ(read_in_pieces(path, 7'777), read_whole(path)) << path;
  }
  barrier();
  const auto stats = finalize();
  EXPECT_EQ(stats["pfs"]["read_ops"], static_cast<std::uint64_t>(size()) * kChunks);
  EXPECT_EQ(stats["fallbacks"], 0);
}

}  // namespace
}  // namespace larder::testing
