// MessageShards over an in-process network (FakeMessengers): operations really cross threads,
// and a rank can be made to drop or hold its messages.
#include "runtime/directory/message_shards.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/support/fake_messengers.hpp"

namespace larder {
namespace {

using testing::FakeMessenger;
using testing::FakeMessengers;

class FakeNetwork {
 public:
  explicit FakeNetwork(int ranks, std::size_t shard_bytes = 4096,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(60'000))
      : messengers_(ranks) {
    failed_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      shards_.push_back(std::make_unique<MessageShards>(
          r, ranks, shard_bytes, messengers_[r], timeout,
          [this](int rank) { return failed_[static_cast<std::size_t>(rank)].load(); },
          [this, r](int rank) {
            std::lock_guard lock(mu_);
            given_up_.emplace_back(r, rank);
          }));
    }
    messengers_.start();
  }
  FakeNetwork(const FakeNetwork&) = delete;
  FakeNetwork& operator=(const FakeNetwork&) = delete;
  FakeNetwork(FakeNetwork&&) = delete;
  FakeNetwork& operator=(FakeNetwork&&) = delete;
  ~FakeNetwork() { messengers_.stop(); }
  MessageShards& shards(int r) { return *shards_[static_cast<std::size_t>(r)]; }
  FakeMessenger& messenger(int r) { return messengers_[r]; }
  void mark_failed(int r) { failed_[static_cast<std::size_t>(r)] = true; }
  // (the rank that gave up, the rank it gave up on)
  std::vector<std::pair<int, int>> given_up() {
    std::lock_guard lock(mu_);
    return given_up_;
  }

 private:
  FakeMessengers messengers_;
  std::vector<std::unique_ptr<MessageShards>> shards_;
  std::unique_ptr<std::atomic<bool>[]> failed_;
  std::mutex mu_;
  std::vector<std::pair<int, int>> given_up_;
};

TEST(MessageShardsTest, OneOfManyConcurrentClaimsWinsAndEveryoneSeesTheWinner) {
  FakeNetwork net(3);
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kRanks = 3;
  std::vector<std::thread> threads;
  threads.reserve(kRanks * kThreads);
  std::vector<std::uint64_t> seen(kRanks * kThreads);
  for (std::size_t i = 0; i < kRanks * kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::uint64_t mine = i + 1;
      const std::uint64_t expected = 0;
      std::uint64_t old = 0;
      MessageShards& s = net.shards(static_cast<int>(i / kThreads));
      ASSERT_TRUE(s.compare_and_swap(0, 64, &mine, &expected, &old).ok());
      ASSERT_TRUE(s.flush_all().ok());
      seen[i] = old;
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t word = 0;
  ASSERT_TRUE(net.shards(1).get(0, 64, &word, 8).ok());
  ASSERT_TRUE(net.shards(1).flush(0).ok());
  int winners = 0;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] == 0) {
      ++winners;
      EXPECT_EQ(word, i + 1);  // the winner's value is what everyone else saw
    } else {
      EXPECT_EQ(seen[i], word);
    }
  }
  EXPECT_EQ(winners, 1);
}

TEST(MessageShardsTest, FetchAddFromManyThreadsCountsEveryOne) {
  FakeNetwork net(2);
  constexpr std::uint64_t kThreads = 4;
  constexpr std::uint64_t kEach = 50;
  std::mutex mu;
  std::set<std::uint64_t> olds;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < static_cast<int>(kThreads); ++t) {
    threads.emplace_back([&, t] {
      MessageShards& s = net.shards(t % 2);  // rank 0 adds to its own shard, rank 1 remotely
      for (std::uint64_t i = 0; i < kEach; ++i) {
        const std::uint64_t one = 1;
        std::uint64_t old = 0;
        ASSERT_TRUE(s.fetch_add(0, 8, &one, &old).ok());
        ASSERT_TRUE(s.flush_all().ok());
        std::lock_guard lock(mu);
        EXPECT_TRUE(olds.insert(old).second);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  ASSERT_TRUE(net.shards(1).get(0, 8, &total, 8).ok());
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  EXPECT_EQ(total, kThreads * kEach);
  EXPECT_EQ(*olds.rbegin(), kThreads * kEach - 1);
}

TEST(MessageShardsTest, ABatchLargerThanOneMessageIsSplitAndEveryValueArrives) {
  FakeNetwork net(2, std::size_t{64} << 10);
  constexpr std::size_t kSlots = 200;  // 200 puts and gets of 128 bytes: several messages each way
  constexpr std::uint64_t kSlot = 128;
  std::vector<std::array<std::uint64_t, 16>> out(kSlots);
  std::vector<std::array<std::uint64_t, 16>> back(kSlots);
  for (std::size_t i = 0; i < kSlots; ++i) {
    for (std::size_t w = 0; w < 16; ++w) out[i][w] = i * 100 + w;
    ASSERT_TRUE(net.shards(1).put(0, i * kSlot, out[i].data(), kSlot).ok());
  }
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  const std::uint64_t before = net.shards(1).requests_sent();
  EXPECT_GT(before, 1u);
  EXPECT_EQ(net.shards(1).operations_sent(), kSlots);
  for (std::size_t i = 0; i < kSlots; ++i) {
    ASSERT_TRUE(net.shards(1).get(0, i * kSlot, back[i].data(), kSlot).ok());
  }
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  EXPECT_EQ(out, back);
  // Rank 0 reads its own shard without any message.
  std::array<std::uint64_t, 16> local{};
  ASSERT_TRUE(net.shards(0).get(0, 5 * kSlot, local.data(), kSlot).ok());
  ASSERT_TRUE(net.shards(0).flush_all().ok());
  EXPECT_EQ(local, out[5]);
  EXPECT_EQ(net.shards(0).requests_sent(), 0u);
}

TEST(MessageShardsTest, FlushOfOneTargetLeavesTheOthersQueued) {
  FakeNetwork net(3);
  const std::uint64_t v = 7;
  ASSERT_TRUE(net.shards(0).store(1, 0, &v).ok());
  ASSERT_TRUE(net.shards(0).store(2, 0, &v).ok());
  ASSERT_TRUE(net.shards(0).flush(1).ok());
  EXPECT_EQ(net.shards(0).requests_sent(), 1u);  // rank 2's store is still queued
  std::uint64_t at2 = 1;
  ASSERT_TRUE(net.shards(1).get(2, 0, &at2, 8).ok());
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  EXPECT_EQ(at2, 0u);
  ASSERT_TRUE(net.shards(0).flush_all().ok());
  ASSERT_TRUE(net.shards(1).get(2, 0, &at2, 8).ok());
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  EXPECT_EQ(at2, 7u);
}

TEST(MessageShardsTest, AFailedHomeFailsTheFlushWithoutWaitingForTheTimeout) {
  FakeNetwork net(2);
  net.messenger(0).set_dead();
  std::thread failer([&] {
    // Once the request sits unanswered, the transport reports the peer gone.
    while (net.shards(1).requests_sent() == 0) std::this_thread::yield();
    net.mark_failed(0);
  });
  std::uint64_t word = 0;
  ASSERT_TRUE(net.shards(1).get(0, 0, &word, 8).ok());
  const Status s = net.shards(1).flush_all();
  failer.join();
  EXPECT_EQ(s.code(), Errc::kTransport);
  EXPECT_TRUE(net.given_up().empty());  // the transport knew already
}

TEST(MessageShardsTest, AHomeThatNeverAnswersTimesOutAndItsLateReplyIsDropped) {
  FakeNetwork net(2, 4096, std::chrono::milliseconds(50));
  net.messenger(1).hold();  // rank 1 receives the reply only after its flush gave up
  auto word = std::make_unique<std::uint64_t>(0);
  ASSERT_TRUE(net.shards(1).get(0, 0, word.get(), 8).ok());
  EXPECT_EQ(net.shards(1).flush_all().code(), Errc::kTimeout);
  EXPECT_EQ(net.given_up(), (std::vector<std::pair<int, int>>{{1, 0}}));
  word.reset();  // the late reply must not write here (ASan checks)
  net.messenger(0).drain();
  net.messenger(1).release();
  net.messenger(1).drain();
  EXPECT_EQ(net.messenger(1).queued(), 0u);
}

TEST(MessageShardsTest, OperationsOutsideTheShardAreRefusedWhole) {
  FakeNetwork net(2, 1024);
  const std::uint64_t v = 9;
  std::uint64_t old = 0;
  ASSERT_TRUE(net.shards(1).store(0, 8, &v).ok());
  ASSERT_TRUE(net.shards(1).fetch_add(0, 4096, &v, &old).ok());  // beyond 1024 bytes
  const Status s = net.shards(1).flush_all();
  EXPECT_EQ(s.code(), Errc::kInvalidArgument);
  std::uint64_t at8 = 1;
  ASSERT_TRUE(net.shards(1).get(0, 8, &at8, 8).ok());
  ASSERT_TRUE(net.shards(1).flush_all().ok());
  EXPECT_EQ(at8, 0u);  // the store of the refused request was not applied either
  EXPECT_FALSE(net.shards(1).get(0, 3, &at8, 8).ok());  // unaligned: refused at once
  EXPECT_FALSE(net.shards(1).get(5, 0, &at8, 8).ok());  // no such rank
}

}  // namespace
}  // namespace larder
