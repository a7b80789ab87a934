// PrefetchStage: a rank's chunks past the budget, read ahead and handed to the reads of the
// schedule's entries that name them.
#include "runtime/cache/prefetch_stage.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace larder {
namespace {

Key key_of(std::uint64_t n) {
  return Key{n + 1, n * 7, n};
}

std::unique_ptr<std::byte[]> bytes_of(std::uint64_t length, std::uint8_t seed) {
  auto b = std::make_unique<std::byte[]>(length);
  for (std::uint64_t i = 0; i < length; ++i) b[i] = static_cast<std::byte>(seed + i);
  return b;
}

bool equals(const std::vector<std::byte>& got, std::uint64_t from, std::uint8_t seed) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != static_cast<std::byte>(seed + from + i)) return false;
  }
  return true;
}

using Reserved = PrefetchStage::Reserved;
using Took = PrefetchStage::Took;

TEST(PrefetchStageTest, AChunkIsTakenByItsReadsUntilTheyCoverItThenFreed) {
  PrefetchStage stage(1000);
  EXPECT_TRUE(stage.empty());
  ASSERT_EQ(stage.reserve(key_of(1), 5, 100, {0, 0}), Reserved::kYes);
  EXPECT_EQ(stage.reserve(key_of(1), 5, 100, {0, 0}), Reserved::kHeld);  // the same entry
  stage.fill(key_of(1), bytes_of(100, 3));
  EXPECT_EQ(stage.bytes(), 100U);
  std::vector<std::byte> part(60);
  EXPECT_EQ(stage.take(key_of(1), 5, 0, part), Took::kTaken);
  EXPECT_TRUE(equals(part, 0, 3));
  std::vector<std::byte> rest(40);
  EXPECT_EQ(stage.take(key_of(1), 5, 60, rest), Took::kTaken);
  EXPECT_TRUE(equals(rest, 60, 3));
  EXPECT_TRUE(stage.empty());
  EXPECT_EQ(stage.bytes(), 0U);
  // Gone: the next read of it goes to the PFS.
  EXPECT_EQ(stage.take(key_of(1), 5, 0, part), Took::kAbsent);
}

TEST(PrefetchStageTest, AChunkTwoEntriesNameIsKeptUntilTheReadsOfBothHaveTakenIt) {
  // A schedule of two epochs names a file in each: staged for the second epoch's entry while
  // the first epoch's read of it is still to come, it stays for the second.
  PrefetchStage stage(1000);
  ASSERT_EQ(stage.reserve(key_of(1), 5, 100, {3, 2}), Reserved::kYes);
  EXPECT_EQ(stage.reserve(key_of(1), 5, 100, {3, 18}), Reserved::kHeld);
  EXPECT_EQ(stage.bytes(), 100U);  // held once
  stage.fill(key_of(1), bytes_of(100, 3));
  std::vector<std::byte> got(100);
  EXPECT_EQ(stage.take(key_of(1), 5, 0, got), Took::kTaken);  // the first epoch's read
  EXPECT_TRUE(equals(got, 0, 3));
  EXPECT_FALSE(stage.empty());
  std::vector<std::byte> half(50);
  EXPECT_EQ(stage.take(key_of(1), 5, 0, half), Took::kTaken);  // the second's, in two reads
  EXPECT_EQ(stage.take(key_of(1), 5, 50, half), Took::kTaken);
  EXPECT_TRUE(equals(half, 50, 3));
  EXPECT_TRUE(stage.empty());
  // Not dropped as unused while its last entry is ahead of the reads.
  ASSERT_EQ(stage.reserve(key_of(2), 5, 100, {3, 2}), Reserved::kYes);
  ASSERT_EQ(stage.reserve(key_of(2), 5, 100, {3, 30}), Reserved::kHeld);
  stage.fill(key_of(2), bytes_of(100, 4));
  EXPECT_EQ(stage.take(key_of(2), 5, 0, got), Took::kTaken);
  EXPECT_EQ(stage.drop_passed(3, 20, 5).chunks, 0U);
  EXPECT_FALSE(stage.empty());
  EXPECT_EQ(stage.drop_passed(3, 40, 5).chunks, 0U);  // dropped, but it was used
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, ANewScheduleNamingAStagedChunkAgainIsTheSameUse) {
  // The next epoch's schedule replaces the one that staged its chunks ahead: its entry is the
  // one the old schedule staged the chunk for, so one read frees it.
  PrefetchStage stage(1000);
  ASSERT_EQ(stage.reserve(key_of(1), 5, 100, {3, 20}), Reserved::kYes);
  stage.fill(key_of(1), bytes_of(100, 3));
  EXPECT_EQ(stage.reserve(key_of(1), 5, 100, {4, 4}), Reserved::kHeld);
  std::vector<std::byte> got(100);
  EXPECT_EQ(stage.take(key_of(1), 5, 0, got), Took::kTaken);
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, AReadLearnsWhetherItsChunkWasCopiedFromAnotherNode) {
  PrefetchStage stage(1000);
  ASSERT_EQ(stage.reserve(key_of(4), 5, 100, {0, 0}), Reserved::kYes);
  ASSERT_EQ(stage.reserve(key_of(5), 5, 100, {0, 1}), Reserved::kYes);
  stage.fill(key_of(4), bytes_of(100, 1), true);
  stage.fill(key_of(5), bytes_of(100, 2));
  std::vector<std::byte> got(100);
  bool copied = false;
  EXPECT_EQ(stage.take(key_of(4), 5, 0, got, true, &copied), Took::kTaken);
  EXPECT_TRUE(copied);
  EXPECT_TRUE(equals(got, 0, 1));
  EXPECT_EQ(stage.take(key_of(5), 5, 0, got, true, &copied), Took::kTaken);
  EXPECT_FALSE(copied);
  EXPECT_TRUE(equals(got, 0, 2));
}

TEST(PrefetchStageTest, AnotherVersionOrARangeBeyondTheChunkIsNotServed) {
  PrefetchStage stage(1000);
  ASSERT_EQ(stage.reserve(key_of(2), 5, 100, {0, 0}), Reserved::kYes);
  stage.fill(key_of(2), bytes_of(100, 9));
  std::vector<std::byte> got(10);
  EXPECT_EQ(stage.take(key_of(2), 6, 0, got), Took::kAbsent);  // the file changed: dropped
  EXPECT_TRUE(stage.empty());
  ASSERT_EQ(stage.reserve(key_of(3), 5, 100, {0, 0}), Reserved::kYes);
  stage.fill(key_of(3), bytes_of(100, 9));
  EXPECT_EQ(stage.take(key_of(3), 5, 95, got), Took::kAbsent);
}

TEST(PrefetchStageTest, AReadThatWentToThePfsTurnsTheNextReservationDownOnce) {
  PrefetchStage stage(1000);
  std::vector<std::byte> got(10);
  EXPECT_EQ(stage.take(key_of(4), 5, 0, got), Took::kAbsent);  // read the PFS itself
  EXPECT_EQ(stage.reserve(key_of(4), 5, 100, {0, 0}), Reserved::kRead);
  EXPECT_EQ(stage.reserve(key_of(4), 5, 100, {0, 1}), Reserved::kYes);  // a later entry's
  stage.fill(key_of(4), nullptr);  // its load failed: readers go to the PFS
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, AReadsMarkTurnsDownItsOwnEntryNotALaterOneOfTheSameChunk) {
  PrefetchStage stage(1000);
  std::vector<std::byte> got(10);
  // The reads were at entry 20 of schedule 3 when this one went to the PFS itself.
  EXPECT_EQ(stage.take(key_of(4), 5, 0, got, true, nullptr, {3, 20}), Took::kAbsent);
  EXPECT_EQ(stage.reserve(key_of(4), 5, 100, {3, 20 + PrefetchStage::kMarkReach - 1}),
            Reserved::kRead);
  // The next epoch's entry of the same chunk is staged.
  EXPECT_EQ(stage.take(key_of(4), 5, 0, got, true, nullptr, {3, 20}), Took::kAbsent);
  EXPECT_EQ(stage.reserve(key_of(4), 5, 100, {3, 20 + PrefetchStage::kMarkReach}), Reserved::kYes);
  stage.fill(key_of(4), bytes_of(100, 1));
  EXPECT_EQ(stage.drop_all().chunks, 1U);
  // An older schedule's batch still running is turned down; a newer schedule's entry is not.
  EXPECT_EQ(stage.take(key_of(5), 5, 0, got, true, nullptr, {3, 0}), Took::kAbsent);
  EXPECT_EQ(stage.reserve(key_of(5), 5, 100, {2, 40}), Reserved::kRead);
  EXPECT_EQ(stage.take(key_of(5), 5, 0, got, true, nullptr, {3, 30}), Took::kAbsent);
  EXPECT_EQ(stage.reserve(key_of(5), 5, 100, {4, 0}), Reserved::kYes);
  stage.fill(key_of(5), nullptr);
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, TheCapacityBoundsWhatIsReserved) {
  PrefetchStage stage(250);
  EXPECT_EQ(stage.reserve(key_of(5), 1, 100, {0, 0}), Reserved::kYes);
  EXPECT_EQ(stage.reserve(key_of(6), 1, 100, {0, 1}), Reserved::kYes);
  EXPECT_FALSE(stage.full());
  EXPECT_EQ(stage.reserve(key_of(7), 1, 100, {0, 2}), Reserved::kFull);
  EXPECT_EQ(stage.reserve(key_of(7), 1, 50, {0, 2}), Reserved::kYes);
  EXPECT_TRUE(stage.full());
  stage.fill(key_of(5), bytes_of(100, 1));
  stage.fill(key_of(6), bytes_of(100, 1));
  stage.fill(key_of(7), bytes_of(50, 1));
  const PrefetchStage::Dropped all = stage.drop_all();
  EXPECT_EQ(all.chunks, 3U);
  EXPECT_EQ(all.bytes, 250U);
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, WhenFullTheChunkUsedFurthestMakesRoomForOneUsedSooner) {
  PrefetchStage stage(300);
  // A is staged for entries 2 and 40 (this epoch and the next), B and C for 3 and 4.
  ASSERT_EQ(stage.reserve(key_of(1), 1, 100, {1, 2}), Reserved::kYes);
  ASSERT_EQ(stage.reserve(key_of(1), 1, 100, {1, 40}), Reserved::kHeld);
  ASSERT_EQ(stage.reserve(key_of(2), 1, 100, {1, 3}), Reserved::kYes);
  ASSERT_EQ(stage.reserve(key_of(3), 1, 100, {1, 4}), Reserved::kYes);
  // Full, every chunk used before entry 5: nothing to drop for it.
  PrefetchStage::Dropped evicted;
  EXPECT_TRUE(stage.full_for({1, 5}));
  EXPECT_EQ(stage.reserve(key_of(4), 1, 100, {1, 5}, &evicted), Reserved::kFull);
  stage.fill(key_of(1), bytes_of(100, 1));
  stage.fill(key_of(2), bytes_of(100, 2));
  std::vector<std::byte> got(100);
  EXPECT_EQ(stage.take(key_of(1), 1, 0, got), Took::kTaken);  // entry 2's read: A waits for 40
  EXPECT_TRUE(equals(got, 0, 1));
  EXPECT_FALSE(stage.full_for({1, 5}));
  EXPECT_TRUE(stage.full_for({1, 40}));  // nothing is used after entry 40
  EXPECT_EQ(stage.reserve(key_of(4), 1, 100, {1, 41}, &evicted), Reserved::kFull);
  // Entry 5's chunk takes A's room: A is read again when entry 40 comes.
  EXPECT_EQ(stage.reserve(key_of(4), 1, 100, {1, 5}, &evicted), Reserved::kYes);
  EXPECT_EQ(evicted.chunks, 1U);
  EXPECT_EQ(evicted.bytes, 100U);
  EXPECT_EQ(stage.take(key_of(1), 1, 0, got), Took::kAbsent);
  // A newer schedule's entry: the older schedule's filled chunks (B, D) are used furthest; C
  // is still loading (a read may be waiting for it) and stays.
  stage.fill(key_of(4), bytes_of(100, 4));
  EXPECT_EQ(stage.reserve(key_of(5), 1, 100, {2, 0}, &evicted), Reserved::kYes);
  EXPECT_EQ(evicted.chunks, 2U);
  EXPECT_NE(stage.holds(key_of(2), 1), stage.holds(key_of(4), 1));  // one of them went
  EXPECT_TRUE(stage.holds(key_of(3), 1));
  stage.fill(key_of(3), bytes_of(100, 3));
  stage.fill(key_of(5), bytes_of(100, 5));
  EXPECT_EQ(stage.take(key_of(3), 1, 0, got), Took::kTaken);
  EXPECT_TRUE(equals(got, 0, 3));
}

TEST(PrefetchStageTest, ChunksTheReadsWentFarPastAreDroppedAsUnused) {
  PrefetchStage stage(10000);
  for (std::uint64_t e = 0; e < 4; ++e) {
    ASSERT_EQ(stage.reserve(key_of(10 + e), 1, 100, {1, e * 10}), Reserved::kYes);
    stage.fill(key_of(10 + e), bytes_of(100, 2));
  }
  std::vector<std::byte> some(10);
  EXPECT_EQ(stage.take(key_of(10), 1, 0, some), Took::kTaken);  // partly read: used
  // The reads are at entry 25 with a lag of 5: entries 0 and 10 are past, 20 and 30 are not.
  PrefetchStage::Dropped d = stage.drop_passed(1, 25, 5);
  EXPECT_EQ(d.chunks, 1U);
  EXPECT_EQ(d.bytes, 100U);
  EXPECT_EQ(stage.bytes(), 200U);
  // A new schedule: the old one's chunks go once its reads are `lag` entries in.
  d = stage.drop_passed(2, 3, 5);
  EXPECT_EQ(d.chunks, 0U);
  d = stage.drop_passed(2, 6, 5);
  EXPECT_EQ(d.chunks, 2U);
  EXPECT_TRUE(stage.empty());
}

TEST(PrefetchStageTest, AReadWaitsForTheLoadUnderWayAndGetsItsBytes) {
  PrefetchStage stage(1 << 20);
  constexpr int kChunks = 64;
  for (int i = 0; i < kChunks; ++i) {
    ASSERT_EQ(stage.reserve(key_of(100 + i), 1, 4096, {0, std::uint64_t(i)}), Reserved::kYes);
  }
  std::thread loader([&] {
    for (int i = 0; i < kChunks; ++i) {
      // Every third load fails: its reader is told to read the PFS.
      stage.fill(key_of(100 + i),
                 i % 3 == 2 ? nullptr : bytes_of(4096, static_cast<std::uint8_t>(i)));
    }
  });
  int taken = 0;
  int absent = 0;
  for (int i = 0; i < kChunks; ++i) {
    std::vector<std::byte> got(4096);
    const Took t = stage.take(key_of(100 + i), 1, 0, got);
    if (t == Took::kAbsent) {
      ++absent;
      EXPECT_EQ(i % 3, 2) << i;
    } else {
      ++taken;
      EXPECT_TRUE(equals(got, 0, static_cast<std::uint8_t>(i))) << i;
    }
  }
  loader.join();
  EXPECT_EQ(taken, kChunks - kChunks / 3);
  EXPECT_EQ(absent, kChunks / 3);
  EXPECT_TRUE(stage.empty());
}

}  // namespace
}  // namespace larder
