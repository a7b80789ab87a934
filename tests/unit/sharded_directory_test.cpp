// ShardedDirectory's reading of a slot (decide), over two fake ranks in one process whose shards
// are plain memory: a get can be made to return the slot as a read that overlapped the claimer's
// publication sees it, deterministically.
#include "runtime/directory/sharded_directory.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <vector>

namespace larder {
namespace {

constexpr std::uint32_t kSlots = 64;
constexpr int kRanks = 2;

// Both ranks' shards, and a switch that tears the next get of a whole slot: it returns the
// claim word, the tickets and the state word as they are, and the rest (check, payload) as they
// were before the publication (zero), as a get overlapping the publisher's put may.
struct Shards {
  std::vector<std::uint64_t> words[kRanks];
  bool tear_next_get = false;
  Shards() {
    for (auto& w : words) w.assign(kSlots * ShardedDirectory::kSlotWords, 0);
  }
};

class FakeOps final : public ShardOps {
 public:
  FakeOps(Shards& shards, int rank) : shards_(shards), rank_(rank) {}
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return kRanks; }
  Status compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                          const std::uint64_t* expected, std::uint64_t* old) override {
    std::uint64_t value = *expected;
    std::atomic_ref(word(target, disp)).compare_exchange_strong(value, *desired);
    *old = value;
    return {};
  }
  Status fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                   std::uint64_t* old) override {
    *old = std::atomic_ref(word(target, disp)).fetch_add(*add);
    return {};
  }
  Status store(int target, std::uint64_t disp, const std::uint64_t* value) override {
    std::atomic_ref(word(target, disp)).store(*value);
    return {};
  }
  Status get(int target, std::uint64_t disp, void* into, std::size_t bytes) override {
    std::memcpy(into, &word(target, disp), bytes);
    if (shards_.tear_next_get && bytes == ShardedDirectory::kSlotBytes) {
      shards_.tear_next_get = false;
      std::memset(static_cast<std::byte*>(into) + 24, 0, bytes - 24);  // words 3..17
    }
    return {};
  }
  Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) override {
    std::memcpy(&word(target, disp), from, bytes);
    return {};
  }
  Status flush(int /*target*/) override { return {}; }
  Status flush_all() override { return {}; }

 private:
  std::uint64_t& word(int target, std::uint64_t disp) { return shards_.words[target][disp / 8]; }
  Shards& shards_;
  int rank_;
};

// No waits in these tests: messages (notices to waiters) go nowhere.
class NoMessenger final : public Messenger {
 public:
  void on(Channel /*channel*/, Handler /*handler*/) override {}
  Status send(int /*to*/, Channel /*channel*/, std::span<const std::byte> /*body*/) override {
    return {};
  }
};

class ShardedDirectoryTest : public ::testing::Test {
 protected:
  Shards shards;
  FakeOps ops0{shards, 0};
  FakeOps ops1{shards, 1};
  NoMessenger messenger0, messenger1;
  ShardedDirectory dir0{ops0, kSlots, messenger0, nullptr};
  ShardedDirectory dir1{ops1, kSlots, messenger1, nullptr};
};

Payload payload_of(std::uint64_t v) {
  return pack(v);
}

// Issue 27: a read that overlapped the publication saw a final state with the old check word;
// it was taken for another key with the same 40 low bits, and the reader claimed the next slot.
TEST_F(ShardedDirectoryTest, AReadOverlappingThePublicationIsAskedAgainNeverClaimed) {
  const Key key{0x1234567890abcdefULL, 0x0fedcba987654321ULL, 1};  // homed at rank 1
  auto first = dir0.acquire(key, kClaimIt | kTicket);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->outcome, Claim::Outcome::kClaimed);
  ASSERT_TRUE(dir0.publish(key, payload_of(42)).ok());

  shards.tear_next_get = true;
  auto torn = dir1.acquire(key, kClaimIt | kTicket);
  ASSERT_TRUE(torn.ok());
  EXPECT_EQ(torn->outcome, Claim::Outcome::kLoading);  // "ask again": no claimer named
  EXPECT_EQ(torn->claimer, -1);

  auto again = dir1.acquire(key, kClaimIt | kTicket);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, Claim::Outcome::kReady);
  EXPECT_EQ(again->claimer, 0);
  EXPECT_EQ(unpack<std::uint64_t>(again->payload), 42u);
}

// A whole, final slot of another key whose word shares the 40 low bits is still probed past.
TEST_F(ShardedDirectoryTest, AnotherKeysFinalSlotWithTheSameLowBitsIsProbedPast) {
  const Key key{0x1234567890abcdefULL, 0x0fedcba987654321ULL, 1};
  const Key twin{0x9999997890abcdefULL, 0x1111111111111111ULL, 1};  // same low 40 bits: same
                                                                    // first slot
  ASSERT_EQ(dir0.acquire(key, kClaimIt)->outcome, Claim::Outcome::kClaimed);
  ASSERT_TRUE(dir0.publish(key, payload_of(1)).ok());
  auto twin_claim = dir1.acquire(twin, kClaimIt);
  ASSERT_TRUE(twin_claim.ok());
  EXPECT_EQ(twin_claim->outcome, Claim::Outcome::kClaimed);
  ASSERT_TRUE(dir1.publish(twin, payload_of(2)).ok());
  EXPECT_EQ(unpack<std::uint64_t>(dir0.acquire(key, kLookOnly)->payload), 1u);
  EXPECT_EQ(unpack<std::uint64_t>(dir0.acquire(twin, kLookOnly)->payload), 2u);
}

}  // namespace
}  // namespace larder
