// What a rank holds of the other ranks, and what start-up moves to it, do not grow with the job
// (issue "start-up at 100,000 ranks"): counted by the UCX fabric itself (Fabric::peer_state).
// Run at 4, 8 and 16 ranks; every bound below is a constant, the same at every size:
//   - after start-up a rank has made no peer (peers are made from the host's address book on
//     first use) and received, through start-up's collectives, a fixed amount unless it is its
//     host's first rank (which receives every host's records once, for the host);
//   - after reading from a fixed set of ranks it holds state for those only.
// Rank 0 prints the figures (docs/benchmarks.md, "Start-up").
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tier/arena.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "ucx_transport/fabric.hpp"
#include "ucx_transport/ucx_factory.hpp"

namespace larder::testing {
namespace {

constexpr std::uint64_t kArena = 1ull << 20;
constexpr std::size_t kShardBytes = 64 << 10;
// A peer's private state: the Peer object, its worker address and packed keys (UCX's TCP and
// shared-memory addresses and keys are a few hundred bytes here; RDMA ones larger).
constexpr std::size_t kPerPeerBound = 4096;
// What a rank that is not its host's first receives at start-up: each book's file name (1 KiB)
// from its host's first rank. Nothing per rank of the job.
constexpr std::uint64_t kStartupBound = 4096;

class PeerStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm host = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &host_rank_);
    MPI_Comm_free(&host);
    dir_ = std::make_unique<TempDir>("larder-peer-state-" + std::to_string(rank_));
    auto arena = Arena::create(*dir_ / "mem", kArena);
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    auto at = (*arena)->allocate(4096);
    ASSERT_TRUE(at.ok());
    for (std::uint64_t i = 0; i < 4096; ++i) {
      (*arena)->data()[*at + i] =
          static_cast<std::byte>((i + static_cast<std::uint64_t>(rank_)) & 0xff);
    }
    tiers_.set(Tier::kMem, std::move(*arena));
    UcxOptions options;
    options.timeout = std::chrono::milliseconds(60'000);
    options.directory_ops = DirectoryOps::kRma;  // the shards' book too
    options.remote_reads = RemoteReads::kRma;
    options.book_dir = dir_->path();
    auto fabric = make_ucx_transport(MPI_COMM_WORLD, tiers_, options, kShardBytes);
    ASSERT_TRUE(fabric.ok()) << fabric.status().to_string();
    transport_ = std::move(*fabric);
    fabric_ = dynamic_cast<ucx::Fabric*>(transport_.get());
    ASSERT_NE(fabric_, nullptr);
    progress_ = std::make_unique<ProgressThread>(std::chrono::microseconds(50),
                                                 std::chrono::microseconds(1000));
    for (auto& source : transport_->progress_sources()) progress_->add(std::move(source));
    progress_->start();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (progress_) progress_->stop();
    if (transport_) {
      EXPECT_TRUE(transport_->close().ok());
    }
    transport_.reset();
  }

  // The largest of every rank's `value`.
  std::uint64_t job_max(std::uint64_t value) {
    std::uint64_t max = 0;
    MPI_Allreduce(&value, &max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return max;
  }

  int rank_ = 0;
  int size_ = 1;
  int host_rank_ = 0;
  std::unique_ptr<TempDir> dir_;
  LocalTiers tiers_;
  std::unique_ptr<ClosableTransport> transport_;
  ucx::Fabric* fabric_ = nullptr;
  std::unique_ptr<ProgressThread> progress_;
};

TEST_F(PeerStateTest, StartUpLeavesNoPerRankStateAndMovesAFixedAmountToMostRanks) {
  const auto state = fabric_->peer_state();
  EXPECT_LE(state.peers, 1u) << "peers are made on first use only";  // the messenger's own
  EXPECT_LE(state.peer_bytes, kPerPeerBound);
  EXPECT_GT(state.book_bytes, 0u);  // the host's books, mapped
  if (host_rank_ != 0) {
    EXPECT_LE(state.startup.received, kStartupBound)
        << "a rank that is not its host's first receives nothing per rank of the job";
  }
  EXPECT_LE(state.startup.collectives, 16);
  const std::uint64_t others = job_max(host_rank_ != 0 ? state.startup.received : 0);
  const std::uint64_t firsts = job_max(host_rank_ == 0 ? state.startup.received : 0);
  const std::uint64_t books = job_max(state.book_bytes);
  const std::uint64_t peer_bytes = job_max(state.peer_bytes);
  if (rank_ == 0) {
    std::printf(
        "start-up at %d ranks: received by a host's first rank %llu B, by the others %llu B; "
        "address books %llu B per host; private peer state %llu B; %d collective calls\n",
        size_, static_cast<unsigned long long>(firsts), static_cast<unsigned long long>(others),
        static_cast<unsigned long long>(books), static_cast<unsigned long long>(peer_bytes),
        state.startup.collectives);
  }
}

TEST_F(PeerStateTest, ReadingHoldsStateForThePeersReadFromOnly) {
  // Each rank reads from two ranks whatever the job's size: rank 0 and its right neighbour.
  std::vector<std::byte> buffer(4096);
  for (int owner : {0, (rank_ + 1) % size_}) {
    const Transport::GetOp op{owner, Tier::kMem, 0, 0, std::span(buffer)};
    ASSERT_TRUE(fabric_->get(op).ok());
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      ASSERT_EQ(buffer[i], static_cast<std::byte>((i + static_cast<std::uint64_t>(owner)) & 0xff));
    }
  }
  const auto state = fabric_->peer_state();
  EXPECT_LE(state.peers, 3u);  // the two read from, and this rank itself
  EXPECT_LE(state.peer_bytes, 3 * kPerPeerBound);
  const std::uint64_t peer_bytes = job_max(state.peer_bytes);
  const std::uint64_t peers = job_max(state.peers);
  if (rank_ == 0) {
    std::printf(
        "after reading from 2 ranks at %d ranks: at most %llu peers, %llu B of peer state\n", size_,
        static_cast<unsigned long long>(peers), static_cast<unsigned long long>(peer_bytes));
  }
}

}  // namespace
}  // namespace larder::testing
