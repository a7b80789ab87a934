#include "runtime/node/node_table.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

Payload filled(std::uint8_t value) {
  Payload p;
  p.fill(std::byte{value});
  return p;
}

Key key_of(std::uint64_t n) {
  return Key{n * 0x9e3779b97f4a7c15ull | 1u, n + 7, n};
}

class NodeTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = NodeTable::create(dir.path() + "/node.table", 256);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    table = std::move(*t);
  }
  testing::TempDir dir{"larder-node-table"};
  std::unique_ptr<NodeTable> table;
};

TEST_F(NodeTableTest, ARenewalIsClaimedOnceAndSeenByEveryoneAfter) {
  const Key k = key_of(1);
  NodeTable::Found first = table->acquire(k, std::chrono::milliseconds(0));
  ASSERT_EQ(first.outcome, NodeTable::Found::Outcome::kClaimed);
  table->publish(first.slot, filled(1));

  NodeTable::Found renewal = table->renew(k, filled(1), std::chrono::seconds(60));
  ASSERT_EQ(renewal.outcome, NodeTable::Found::Outcome::kClaimed);
  // Another rank of the node needs the answer meanwhile: it waits for the renewal.
  NodeTable::Found waited;
  std::thread reader([&] { waited = table->acquire(k, std::chrono::seconds(60)); });
  table->publish(renewal.slot, filled(2));
  reader.join();
  EXPECT_EQ(waited.outcome, NodeTable::Found::Outcome::kReady);
  EXPECT_EQ(waited.payload, filled(2));

  // A rank that still holds the old answer finds the renewed one instead of renewing again.
  NodeTable::Found late = table->renew(k, filled(1), std::chrono::seconds(60));
  EXPECT_EQ(late.outcome, NodeTable::Found::Outcome::kReady);
  EXPECT_EQ(late.payload, filled(2));
  EXPECT_EQ(table->find(k).payload, filled(2));
  EXPECT_EQ(table->renew(key_of(2), filled(1), std::chrono::seconds(1)).outcome,
            NodeTable::Found::Outcome::kFull);
}

TEST_F(NodeTableTest, ReadersNeverSeeHalfARenewedAnswer) {
  const Key k = key_of(3);
  NodeTable::Found first = table->acquire(k, std::chrono::milliseconds(0));
  ASSERT_EQ(first.outcome, NodeTable::Found::Outcome::kClaimed);
  table->publish(first.slot, filled(0));
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!done.load()) {
      const NodeTable::Found f = table->acquire(k, std::chrono::seconds(60));
      if (f.outcome != NodeTable::Found::Outcome::kReady) continue;
      for (std::byte b : f.payload) {
        if (b != f.payload[0]) ++torn;
      }
    }
  });
  Payload seen = filled(0);
  for (int i = 1; i <= 2000; ++i) {
    NodeTable::Found r = table->renew(k, seen, std::chrono::seconds(60));
    ASSERT_EQ(r.outcome, NodeTable::Found::Outcome::kClaimed);
    seen = filled(static_cast<std::uint8_t>(i));
    table->publish(r.slot, seen);
  }
  done.store(true);
  reader.join();
  EXPECT_EQ(torn.load(), 0);
}

// Waiters mark a RESOLVING entry before they sleep, and only a marked entry is woken: every
// order of waiter and resolver must still end with the waiter holding the answer (or the failure).
TEST_F(NodeTableTest, AWaiterGetsTheAnswerOrTheFailureWhicheverComesFirst) {
  for (std::uint64_t i = 0; i < 200; ++i) {
    const Key k = key_of(100 + i);
    NodeTable::Found claimed = table->acquire(k, std::chrono::milliseconds(0));
    ASSERT_EQ(claimed.outcome, NodeTable::Found::Outcome::kClaimed);
    NodeTable::Found waited;
    std::thread waiter([&] { waited = table->acquire(k, std::chrono::seconds(60)); });
    const bool fails = i % 2 == 1;
    if (fails) {
      table->fail(claimed.slot);
    } else {
      table->publish(claimed.slot, filled(static_cast<std::uint8_t>(i)));
    }
    waiter.join();
    if (fails) {
      EXPECT_EQ(waited.outcome, NodeTable::Found::Outcome::kFailed) << "round " << i;
    } else {
      ASSERT_EQ(waited.outcome, NodeTable::Found::Outcome::kReady) << "round " << i;
      EXPECT_EQ(waited.payload, filled(static_cast<std::uint8_t>(i)));
    }
  }
}

// A process that claimed an entry and died: the ranks waiting on it see FAILED (and resolve for
// themselves), they do not wait out their timeout.
TEST_F(NodeTableTest, AnEntryWhoseResolverDiedIsFailed) {
  const Key k = key_of(7);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // claims through the shared mapping, then dies without answering
    const bool claimed = table->acquire(k, std::chrono::milliseconds(0)).outcome ==
                         NodeTable::Found::Outcome::kClaimed;
    ::_exit(claimed ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const NodeTable::Found f = table->acquire(k, std::chrono::seconds(60));
  EXPECT_EQ(f.outcome, NodeTable::Found::Outcome::kFailed);
}

}  // namespace
}  // namespace larder
