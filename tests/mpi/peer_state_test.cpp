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

#include "mpi_transport/mpi_job.hpp"
#include "mpi_transport/spread_reduce.hpp"
#include "runtime/config/config.hpp"
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

// Which node each rank is on, without a table of the ranks: ranks placed in equal blocks (as
// here, and as launchers place them by default) give node = rank / ranks per node, found with
// three small allreduces instead of gathering every rank's node to every rank.
TEST(TopologyTest, RanksPlacedInBlocksHoldNothingPerRankOfTheJob) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // What MPI says: every rank's node leader (the test's own table).
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  int leader = rank;
  MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, host);
  MPI_Comm_free(&host);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int node_size : {0, 2, 3}) {
    Config config;
    config.node_size = node_size;
    auto job = MpiJob::create(MPI_COMM_WORLD, config);
    ASSERT_TRUE(job.ok()) << job.status().to_string();
    const Topology& t = (*job)->topology();
    EXPECT_EQ(t.bytes_per_job(), 0u) << "node_size " << node_size;
    for (int r = 0; r < size; ++r) {
      if (node_size > 0) {
        EXPECT_EQ(t.node_of(r), r / node_size);
      } else {
        EXPECT_EQ(t.same_node(r, rank), leaders[static_cast<std::size_t>(r)] == leader) << r;
        EXPECT_EQ(t.leader_of(t.node_of(r)), leaders[static_cast<std::size_t>(r)]) << r;
      }
    }
    int counted = 0;
    for (int n = 0; n < t.node_count(); ++n) counted += t.ranks_on_node(n);
    EXPECT_EQ(counted, size);
    EXPECT_TRUE((*job)->close().ok());  // its communicators freed (collective)
  }
}

// Placements made with node communicators of the test's own (MPI_Comm_split by a colour): blocks
// of 2 and 3, round robin over 2 and 3 nodes, consecutive ranks on nodes of different sizes (one
// rank alone and the rest together; one, then threes), and one rank alone amid the others. Blocks
// and round robin hold nothing per rank; consecutive nodes of different sizes a first rank per
// node; only the last keeps a table of every rank. Every rank's node and leader is what the split
// made.
TEST(TopologyTest, BlocksAndRoundRobinHoldNothingPerRankUnevenPlacementsATable) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  struct Placement {
    const char* name;
    int (*colour)(int rank);
    bool table;   // whether a table of every rank is expected
    bool starts;  // whether a first rank per node is expected
  };
  const Placement placements[] = {
      {"blocks of 2", [](int r) { return r / 2; }, false, false},
      {"blocks of 3", [](int r) { return r / 3; }, false, false},
      {"round robin over 2", [](int r) { return r % 2; }, false, false},
      {"round robin over 3", [](int r) { return r % 3; }, false, false},
      {"one alone, the rest together", [](int r) { return r == 0 ? 0 : 1; }, false, true},
      {"one, then threes", [](int r) { return r == 0 ? 0 : 1 + (r - 1) / 3; }, false, true},
      {"rank 1 alone amid the others", [](int r) { return r == 1 ? 0 : 1; }, true, false},
  };
  for (const Placement& p : placements) {
    MPI_Comm node = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, p.colour(rank), rank, &node), MPI_SUCCESS);
    auto placed = MpiJob::place_ranks(MPI_COMM_WORLD, node);
    MPI_Comm_free(&node);
    ASSERT_TRUE(placed.ok()) << placed.status().to_string();
    const Topology& t = *placed;
    EXPECT_EQ(t.bytes_per_job() > 0, p.table) << p.name;
    EXPECT_EQ(t.bytes_per_node() > 0, p.starts) << p.name;
    if (p.starts) {
      EXPECT_EQ(t.bytes_per_node(), sizeof(int) * static_cast<std::size_t>(t.node_count()))
          << p.name;
    }
    if (std::string(p.name).starts_with("round robin")) {
      EXPECT_GT(t.cyclic, 0) << p.name;
    }
    int counted = 0;
    for (int n = 0; n < t.node_count(); ++n) counted += t.ranks_on_node(n);
    EXPECT_EQ(counted, size) << p.name;
    for (int r = 0; r < size; ++r) {
      int lowest = r;  // the lowest rank of r's colour: its node's leader
      for (int q = 0; q < r; ++q) {
        if (p.colour(q) == p.colour(r)) {
          lowest = q;
          break;
        }
      }
      EXPECT_EQ(t.leader_of(t.node_of(r)), lowest) << p.name << ", rank " << r;
      EXPECT_EQ(t.same_node(r, rank), p.colour(r) == p.colour(rank)) << p.name << ", rank " << r;
      int before = 0;  // ranks of r's colour below r
      for (int q = 0; q < r; ++q) before += p.colour(q) == p.colour(r) ? 1 : 0;
      EXPECT_EQ(t.index_on_node(r), before) << p.name << ", rank " << r;
      EXPECT_LT(t.index_on_node(r), t.ranks_on_node(t.node_of(r))) << p.name << ", rank " << r;
    }
  }
}

TEST(TopologyTest, BlocksWithAShorterLastNode) {
  Topology t;
  t.size = 10;
  t.block = 4;
  EXPECT_EQ(t.node_count(), 3);
  EXPECT_EQ(t.node_of(9), 2);
  EXPECT_EQ(t.leader_of(2), 8);
  EXPECT_EQ(t.ranks_on_node(2), 2);
  EXPECT_EQ(t.ranks_on_node(0), 4);
  EXPECT_EQ(t.leader_of(3), -1);
  Topology table;  // ranks placed round robin on 2 nodes, as a table
  table.size = 4;
  table.block = 0;
  table.table = {0, 1, 0, 1};
  EXPECT_EQ(table.node_count(), 2);
  EXPECT_EQ(table.leader_of(1), 1);
  EXPECT_TRUE(table.same_node(0, 2));
  EXPECT_EQ(table.index_on_node(3), 1);
  EXPECT_EQ(table.bytes_per_job(), 4 * sizeof(int));
  Topology cyclic;  // the same, without the table
  cyclic.size = 5;
  cyclic.block = 0;
  cyclic.cyclic = 2;
  EXPECT_EQ(cyclic.node_count(), 2);
  EXPECT_EQ(cyclic.leader_of(1), 1);
  EXPECT_EQ(cyclic.leader_of(2), -1);
  EXPECT_EQ(cyclic.ranks_on_node(0), 3);
  EXPECT_EQ(cyclic.ranks_on_node(1), 2);
  EXPECT_EQ(cyclic.index_on_node(4), 2);
  EXPECT_TRUE(cyclic.same_node(0, 4));
  EXPECT_EQ(cyclic.bytes_per_job(), 0u);
  Topology starts;  // consecutive ranks on nodes of 3, 1 and 2
  starts.size = 6;
  starts.block = 0;
  starts.starts = {0, 3, 4};
  EXPECT_EQ(starts.node_count(), 3);
  EXPECT_EQ(starts.node_of(2), 0);
  EXPECT_EQ(starts.node_of(3), 1);
  EXPECT_EQ(starts.node_of(5), 2);
  EXPECT_EQ(starts.leader_of(2), 4);
  EXPECT_EQ(starts.leader_of(3), -1);
  EXPECT_EQ(starts.ranks_on_node(0), 3);
  EXPECT_EQ(starts.ranks_on_node(1), 1);
  EXPECT_EQ(starts.ranks_on_node(2), 2);
  EXPECT_EQ(starts.ranks_on_node(3), 0);
  EXPECT_EQ(starts.index_on_node(5), 1);
  EXPECT_FALSE(starts.same_node(2, 3));
  EXPECT_EQ(starts.bytes_per_job(), 0u);
  EXPECT_EQ(starts.bytes_per_node(), 3 * sizeof(int));
}

// This rank, the job's size and the ranks sharing this host's memory (freed at the end).
struct World {
  int rank = 0;
  int size = 1;
  MPI_Comm host = MPI_COMM_NULL;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World() { MPI_Comm_free(&host); }
};

// The spread of the load made by reductions (finalize: spread_reduce.hpp) is exactly spread_of()
// over the gathered values, for values with ties, zeros, one huge value and distinct ones, over
// emulated nodes of 1, 2 and 3 ranks and a round-robin placement (as a table and without).
TEST(SpreadReduceTest, EqualsTheSpreadOfTheGatheredValues) {
  const World world;
  const int rank = world.rank;
  const int size = world.size;
  MPI_Comm host = world.host;
  const auto r = static_cast<std::uint64_t>(rank);
  const std::vector<std::uint64_t> mine = {
      (r * 7919 + 13) % 101,          // distinct-ish, with ties
      r % 3 == 0 ? 0u : 5u,           // many ties and zeros
      0u,                             // all zero
      r == 1 ? (1ull << 62) + 3 : r,  // one huge value
  };
  std::vector<std::uint64_t> all(mine.size() * static_cast<std::size_t>(size));
  ASSERT_EQ(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                          static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD),
            MPI_SUCCESS);
  std::vector<Topology> placements;
  for (const int block : {1, 2, 3}) {
    Topology t;
    t.rank = rank;
    t.size = size;
    t.block = block;
    placements.push_back(t);
  }
  Topology cyclic;
  cyclic.rank = rank;
  cyclic.size = size;
  cyclic.block = 0;
  for (int q = 0; q < size; ++q) cyclic.table.push_back(q % 2);
  placements.push_back(cyclic);
  Topology round_robin;  // the same placement, without the table
  round_robin.rank = rank;
  round_robin.size = size;
  round_robin.block = 0;
  round_robin.cyclic = 2;
  placements.push_back(round_robin);
  for (const Topology& t : placements) {
    auto got = reduce_spreads(SpreadPlace{MPI_COMM_WORLD, host, &t}, mine);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    std::vector<int> node_of(static_cast<std::size_t>(size));
    for (int q = 0; q < size; ++q) node_of[static_cast<std::size_t>(q)] = t.node_of(q);
    for (std::size_t m = 0; m < mine.size(); ++m) {
      std::vector<std::uint64_t> values;
      for (int q = 0; q < size; ++q) values.push_back(all[static_cast<std::size_t>(q) * 4 + m]);
      const Spread want = spread_of(values, node_of);
      const Spread& s = (*got)[m];
      const std::string where = "metric " + std::to_string(m) + ", block " +
                                std::to_string(t.block) + ", rank " + std::to_string(rank);
      EXPECT_EQ(s.max, want.max) << where;
      EXPECT_EQ(s.max_rank, want.max_rank) << where;
      EXPECT_EQ(s.max_node, want.max_node) << where;
      EXPECT_EQ(s.median, want.median) << where;
      EXPECT_EQ(s.total, want.total) << where;
      EXPECT_EQ(s.ranks_log2, want.ranks_log2) << where;
      EXPECT_EQ(s.node_max, want.node_max) << where;
      EXPECT_EQ(s.node_median, want.node_median) << where;
      EXPECT_EQ(s.node_max_node, want.node_max_node) << where;
      EXPECT_EQ(s.nodes_log2, want.nodes_log2) << where;
      ASSERT_EQ(s.top_ranks.size(), want.top_ranks.size()) << where;
      for (std::size_t i = 0; i < s.top_ranks.size(); ++i) {
        EXPECT_EQ(s.top_ranks[i].rank, want.top_ranks[i].rank) << where << ", top " << i;
        EXPECT_EQ(s.top_ranks[i].node, want.top_ranks[i].node) << where << ", top " << i;
        EXPECT_EQ(s.top_ranks[i].value, want.top_ranks[i].value) << where << ", top " << i;
      }
    }
  }
}

}  // namespace
}  // namespace larder::testing
