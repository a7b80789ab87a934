#include "runtime/node/node_table.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

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
    auto t = NodeTable::create(dir.path() + "/node.table", 256, 256);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    table = std::move(*t);
  }
  testing::TempDir dir{"larder-node-table"};
  std::unique_ptr<NodeTable> table;
};

TEST_F(NodeTableTest, AReadOnlyViewSeesTheNodeWordsAsTheyChange) {
  auto view = NodeTable::view(table->path(), 256);
  ASSERT_TRUE(view.ok()) << view.status().to_string();
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskChecking), 0U);
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskSuspect), 0U);
  table->node_word(NodeTable::kDiskChecking).fetch_add(1);
  table->node_word(NodeTable::kDiskSuspect).store(1);
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskChecking), 1U);
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskSuspect), 1U);
  table->node_word(NodeTable::kDiskChecking).fetch_sub(1);
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskChecking), 0U);
  // The words are not an entry: the table's answers do not touch them.
  for (std::uint64_t n = 0; n < 200; ++n) {
    const NodeTable::Found f = table->acquire(key_of(n), std::chrono::milliseconds(0));
    if (f.outcome == NodeTable::Found::Outcome::kClaimed) table->publish(f.slot, filled(0xff));
  }
  EXPECT_EQ((*view)->node_word_now(NodeTable::kDiskSuspect), 1U);
}

TEST_F(NodeTableTest, AReadOnlyViewFindsAnswersAndRenewalsAndNeverWrites) {
  auto view = NodeTable::view(table->path(), 256);
  ASSERT_TRUE(view.ok()) << view.status().to_string();
  EXPECT_TRUE((*view)->read_only());
  const Key k = key_of(3);
  EXPECT_EQ((*view)->find(k).outcome, NodeTable::Found::Outcome::kFull);  // nothing yet
  NodeTable::Found claim = table->acquire(k, std::chrono::milliseconds(0));
  ASSERT_EQ(claim.outcome, NodeTable::Found::Outcome::kClaimed);
  EXPECT_NE((*view)->find(k).outcome, NodeTable::Found::Outcome::kReady);  // being resolved
  table->publish(claim.slot, filled(1));
  NodeTable::Found seen = (*view)->find(k);
  ASSERT_EQ(seen.outcome, NodeTable::Found::Outcome::kReady);
  EXPECT_EQ(seen.payload, filled(1));
  // A renewal in place: the view sees no answer while it is under way, then the new one.
  NodeTable::Found renewal = table->renew(k, filled(1), std::chrono::seconds(60));
  ASSERT_EQ(renewal.outcome, NodeTable::Found::Outcome::kClaimed);
  EXPECT_NE((*view)->find(k).outcome, NodeTable::Found::Outcome::kReady);
  table->publish(renewal.slot, filled(2));
  EXPECT_EQ((*view)->find(k).payload, filled(2));
  // The view claims nothing: its mapping is read-only (a store would fault).
  EXPECT_EQ((*view)->acquire(key_of(4), std::chrono::milliseconds(0)).outcome,
            NodeTable::Found::Outcome::kFull);
  EXPECT_EQ((*view)->renew(k, filled(2), std::chrono::milliseconds(0)).outcome,
            NodeTable::Found::Outcome::kFull);
  (*view)->publish(seen.slot, filled(9));
  (*view)->fail(seen.slot);
  EXPECT_EQ(table->find(k).payload, filled(2));
}

TEST(NodeTableViewTest, AMissingOrShortFileIsAnError) {
  testing::TempDir dir("larder-node-view");
  EXPECT_FALSE(NodeTable::view(dir.path() + "/none.0", 256).ok());
  const std::string shortfile = dir.path() + "/short.0";
  std::FILE* f = std::fopen(shortfile.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("x", f);
  std::fclose(f);
  EXPECT_FALSE(NodeTable::view(shortfile, 256).ok());
}

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

// The table grows in levels (64, then 128, then 256 entries here): every key claimed once, found
// by every process of the node in the level it went to, and the levels are files beside the first.
TEST(NodeTableLevelsTest, TheTableGrowsAndEveryProcessFindsEachKeyInItsLevel) {
  testing::TempDir dir("larder-node-levels");
  const std::string path = dir.path() + "/node.table";
  auto made = NodeTable::create(path, 64, 64 + 128 + 256);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  auto leader = std::move(*made);
  auto other = NodeTable::attach(path, 64 + 128 + 256);  // another rank's mapping
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  auto worker = NodeTable::view(path, 64 + 128 + 256);  // a worker's, made before the growth
  ASSERT_TRUE(worker.ok()) << worker.status().to_string();
  EXPECT_EQ(leader->levels(), 1);
  constexpr int kKeys = 400;
  int claimed = 0;
  for (int n = 0; n < kKeys; ++n) {
    const NodeTable::Found f = leader->acquire(key_of(n), std::chrono::milliseconds(0));
    if (f.outcome != NodeTable::Found::Outcome::kClaimed) continue;
    ++claimed;
    leader->publish(f.slot, filled(static_cast<std::uint8_t>(n)));
  }
  EXPECT_GE(claimed, 360) << "the levels hold 448 entries";
  EXPECT_EQ(leader->levels(), 3);
  EXPECT_EQ(leader->entries(), 448u);
  int found = 0;
  for (int n = 0; n < kKeys; ++n) {
    const NodeTable::Found mine = leader->find(key_of(n));
    const NodeTable::Found theirs = (*other)->acquire(key_of(n), std::chrono::milliseconds(0));
    const NodeTable::Found viewed = (*worker)->find(key_of(n));
    if (mine.outcome == NodeTable::Found::Outcome::kReady) {
      ++found;
      EXPECT_EQ(mine.payload, filled(static_cast<std::uint8_t>(n)));
      ASSERT_EQ(theirs.outcome, NodeTable::Found::Outcome::kReady) << "key " << n;
      EXPECT_EQ(theirs.payload, mine.payload);
      ASSERT_EQ(viewed.outcome, NodeTable::Found::Outcome::kReady) << "key " << n;
      EXPECT_EQ(viewed.payload, mine.payload);
    } else {
      EXPECT_EQ(theirs.outcome, NodeTable::Found::Outcome::kFull) << "key " << n;
    }
  }
  EXPECT_EQ(found, claimed);
  EXPECT_EQ((*other)->levels(), 3);
  EXPECT_EQ((*worker)->levels(), 3) << "the view mapped the levels made after it";
  EXPECT_TRUE(std::filesystem::exists(path + ".1"));
  EXPECT_TRUE(std::filesystem::exists(path + ".2"));
  EXPECT_FALSE(std::filesystem::exists(path + ".3")) << "the cap stops the levels";
}

// Ranks of a node growing the table at the same time (each its own mapping): each key is claimed
// exactly once, whichever rank makes a level.
TEST(NodeTableLevelsTest, RanksGrowingTheTableTogetherClaimEachKeyOnce) {
  testing::TempDir dir("larder-node-levels");
  const std::string path = dir.path() + "/node.table";
  constexpr std::uint64_t kMax = 64ull * (1 + 2 + 4 + 8 + 16 + 32);
  auto made = NodeTable::create(path, 64, kMax);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  std::vector<std::unique_ptr<NodeTable>> ranks;
  ranks.push_back(std::move(*made));
  for (int r = 1; r < 4; ++r) {
    auto t = NodeTable::attach(path, kMax);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ranks.push_back(std::move(*t));
  }
  constexpr int kKeys = 3000;
  std::atomic<int> claims{0};
  std::atomic<int> full{0};
  std::vector<std::thread> threads;
  threads.reserve(ranks.size());
  for (auto& t : ranks) {
    threads.emplace_back([&, table = t.get()] {
      for (int n = 0; n < kKeys; ++n) {
        const NodeTable::Found f = table->acquire(key_of(n), std::chrono::seconds(60));
        if (f.outcome == NodeTable::Found::Outcome::kClaimed) {
          claims.fetch_add(1);
          table->publish(f.slot, filled(static_cast<std::uint8_t>(n)));
        } else if (f.outcome == NodeTable::Found::Outcome::kFull) {
          full.fetch_add(1);
        } else {
          ASSERT_EQ(f.outcome, NodeTable::Found::Outcome::kReady);
          EXPECT_EQ(f.payload, filled(static_cast<std::uint8_t>(n)));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(claims.load(), kKeys) << "4,032 entries hold 3,000 keys: each claimed exactly once";
  EXPECT_EQ(full.load(), 0);
  for (const auto& t : ranks) EXPECT_EQ(t->levels(), ranks[0]->levels());
}

// At the cap, or when a level cannot be made, acquire() answers kFull after one probe window per
// level, claims nothing, and the process does not try to make the level again.
TEST(NodeTableLevelsTest, AFullTableAnswersFullAndALevelThatFailedIsNotTriedAgain) {
  testing::TempDir dir("larder-node-levels");
  const std::string path = dir.path() + "/node.table";
  auto capped = NodeTable::create(path, 64, 64);
  ASSERT_TRUE(capped.ok());
  int claimed = 0;
  for (int n = 0; n < 200; ++n) {
    const NodeTable::Found f = (*capped)->acquire(key_of(n), std::chrono::milliseconds(0));
    if (f.outcome == NodeTable::Found::Outcome::kClaimed) {
      ++claimed;
      (*capped)->publish(f.slot, filled(1));
    } else {
      EXPECT_EQ(f.outcome, NodeTable::Found::Outcome::kFull);
    }
  }
  EXPECT_EQ(claimed, 64);
  EXPECT_FALSE(std::filesystem::exists(path + ".1"));

  // A level whose name is taken by something that is not a level (here a directory): made once,
  // failed, and not tried again (the directory, removed, is not replaced by a level).
  const std::string path2 = dir.path() + "/node2.table";
  auto grows = NodeTable::create(path2, 64, 1024);
  ASSERT_TRUE(grows.ok());
  std::filesystem::create_directory(path2 + ".1");
  int claimed2 = 0;
  for (int n = 0; n < 200; ++n) {
    const NodeTable::Found f = (*grows)->acquire(key_of(n), std::chrono::milliseconds(0));
    if (f.outcome == NodeTable::Found::Outcome::kClaimed) {
      ++claimed2;
      (*grows)->publish(f.slot, filled(1));
    }
    if (n == 100) std::filesystem::remove(path2 + ".1");
  }
  EXPECT_EQ(claimed2, 64);
  EXPECT_EQ((*grows)->levels(), 1);
  EXPECT_FALSE(std::filesystem::exists(path2 + ".1"));
}

}  // namespace
}  // namespace larder
