#include "runtime/agent/worker_stats.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace larder::agent {
namespace {

constexpr std::uint64_t kPerWorker = 1000;

// The rank's counters and its workers' slots, read at any time, count every worker once: while it
// is alive (its slot) and after its connection ended (folded into the rank's Stats).
TEST(WorkerStatsTest, WithLiveCountsEachWorkerOnceWhileTheyLeave) {
  testing::TempDir dir("larder-worker-stats");
  auto file = WorkerStatsFile::create(dir / "workers.stats");
  ASSERT_TRUE(file.ok()) << file.status().message();
  Stats rank;
  rank.add(Counter::hits_node, 7);
  constexpr int kWorkers = 64;
  std::vector<int> slots;
  for (int i = 0; i < kWorkers; ++i) {
    const int slot = (*file)->claim();
    ASSERT_GE(slot, 0);
    (*file)->slot(slot)->add(Counter::hits_node, kPerWorker);
    (*file)->slot(slot)->add(Counter::worker_answers_found, 1);
    slots.push_back(slot);
  }
  const std::uint64_t total = 7 + kWorkers * kPerWorker;
  EXPECT_EQ((*file)->with_live(rank).get(Counter::hits_node), total);

  // The agent's threads release the workers one by one while a reader keeps reading.
  std::atomic<bool> done{false};
  std::thread leaving([&] {
    for (int slot : slots) (*file)->release(slot, rank);
    done.store(true);
  });
  int reads = 0;
  int wrong = 0;
  while (!done.load() || reads == 0) {
    const StatsSnapshot now = (*file)->with_live(rank);
    if (now.get(Counter::hits_node) != total ||
        now.get(Counter::worker_answers_found) != kWorkers) {
      ++wrong;
    }
    ++reads;
  }
  leaving.join();
  EXPECT_EQ(wrong, 0) << "of " << reads << " reads";
  // Every slot released: the rank's own counters hold everything, and nothing is counted twice.
  EXPECT_EQ(rank.snapshot().get(Counter::hits_node), total);
  EXPECT_EQ((*file)->with_live(rank).get(Counter::hits_node), total);
  EXPECT_EQ((*file)->with_live(rank).get(Counter::worker_answers_found), kWorkers);
}

TEST(WorkerStatsTest, WithLiveLeavesOutFreeSlots) {
  testing::TempDir dir("larder-worker-stats");
  auto file = WorkerStatsFile::create(dir / "workers.stats");
  ASSERT_TRUE(file.ok()) << file.status().message();
  Stats rank;
  const int slot = (*file)->claim();
  ASSERT_GE(slot, 0);
  (*file)->slot(slot)->add(Counter::misses, 3);
  // A worker that never said hello to the rank has no slot: what another slot holds past its
  // release (a stale write) is not counted.
  (*file)->release(slot, rank);
  (*file)->slot(slot)->add(Counter::misses, 5);
  EXPECT_EQ((*file)->with_live(rank).get(Counter::misses), 3U);
}

}  // namespace
}  // namespace larder::agent
