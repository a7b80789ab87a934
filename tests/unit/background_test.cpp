// Background (runtime/cache/background.hpp): tasks run on their own threads, a bounded queue,
// settle() waits for all, stop() drops what has not started. Synchronised with latches, never
// with sleeps.
#include "runtime/cache/background.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

namespace larder {
namespace {

TEST(BackgroundTest, RunsEveryTaskAndSettleWaitsForThem) {
  Background bg(3, 100);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(bg.submit([&] { ran.fetch_add(1); }));
  bg.settle();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(bg.completed(), 50u);
}

TEST(BackgroundTest, TasksRunAtTheSameTimeUpToTheWidth) {
  Background bg(3, 100);
  std::latch all_in(3);  // each of 3 tasks waits until all 3 run at once
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(bg.submit([&] {
      all_in.arrive_and_wait();
      ran.fetch_add(1);
    }));
  }
  bg.settle();
  EXPECT_EQ(ran.load(), 3);
}

TEST(BackgroundTest, AFullQueueRefusesAndStopDropsWhatHasNotStarted) {
  Background bg(1, 2);
  std::latch started(1);
  std::latch release(1);
  std::atomic<int> ran{0};
  ASSERT_TRUE(bg.submit([&] {
    started.count_down();
    release.wait();
    ran.fetch_add(1);
  }));
  started.wait();  // the one thread is busy: what follows waits in the queue
  EXPECT_TRUE(bg.submit([&] { ran.fetch_add(10); }));
  EXPECT_TRUE(bg.submit([&] { ran.fetch_add(10); }));
  EXPECT_FALSE(bg.submit([&] { ran.fetch_add(100); })) << "the queue holds 2";
  std::thread stopper([&] { bg.stop(); });
  while (!bg.stopped()) std::this_thread::yield();  // the queue is dropped under the same lock
  release.count_down();
  stopper.join();
  EXPECT_EQ(ran.load(), 1) << "the running task finished, the queued ones never ran";
  EXPECT_FALSE(bg.submit([&] { ran.fetch_add(1000); })) << "stopped";
  EXPECT_EQ(bg.completed(), 1u);
}

TEST(BackgroundTest, WidthZeroTakesNothing) {
  Background bg(0, 10);
  EXPECT_FALSE(bg.submit([] {}));
  bg.settle();  // returns: nothing queued
}

}  // namespace
}  // namespace larder
