// ShardedDirectory over two fake ranks in one process whose shards are plain memory and whose
// messages are delivered at once: its reading of a slot (a get can be made to return the slot as
// a read that overlapped the claimer's publication sees it, deterministically), its windows, its
// overflow and its bound, with the operations and messages each costs counted.
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
  int rounds = 0;  // flushes: one-sided round trips
  int gets = 0;
  Shards() {
    for (auto& w : words) w.assign(ShardedDirectory::shard_bytes(kSlots) / 8, 0);
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
    EXPECT_LE(disp + bytes, shards_.words[target].size() * 8) << "a get past the shard";
    std::memcpy(into, &word(target, disp), bytes);
    ++shards_.gets;
    if (shards_.tear_next_get) {  // the first slot's words 3..17
      shards_.tear_next_get = false;
      std::memset(static_cast<std::byte*>(into) + 24, 0, ShardedDirectory::kSlotBytes - 24);
    }
    return {};
  }
  Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) override {
    std::memcpy(&word(target, disp), from, bytes);
    return {};
  }
  Status flush(int /*target*/) override {
    ++shards_.rounds;
    return {};
  }
  Status flush_all() override {
    ++shards_.rounds;
    return {};
  }

 private:
  std::uint64_t& word(int target, std::uint64_t disp) { return shards_.words[target][disp / 8]; }
  Shards& shards_;
  int rank_;
};

// Messages between the two fake ranks, delivered at once on the sender's thread (as a progress
// thread would, later); counted.
struct Wire {
  std::array<std::array<Messenger::Handler, kChannelCount>, kRanks> handlers;
  int sent[kChannelCount] = {};
};

class FakeMessenger final : public Messenger {
 public:
  FakeMessenger(Wire& wire, int rank) : wire_(wire), rank_(rank) {}
  void on(Channel channel, Handler handler) override {
    wire_.handlers[static_cast<std::size_t>(rank_)][static_cast<std::size_t>(channel)] =
        std::move(handler);
  }
  Status send(int to, Channel channel, std::span<const std::byte> body) override {
    EXPECT_LE(body.size(), kMaxMessage);
    ++wire_.sent[static_cast<int>(channel)];
    const auto& h = wire_.handlers[static_cast<std::size_t>(to)][static_cast<std::size_t>(channel)];
    if (h) h(rank_, body);
    return {};
  }

 private:
  Wire& wire_;
  int rank_;
};

class ShardedDirectoryTest : public ::testing::Test {
 protected:
  static ShardedDirectory::Options options() {
    ShardedDirectory::Options o;
    o.overflow_entries = kOverflowBound;
    return o;
  }
  static constexpr std::uint64_t kOverflowBound = 100;
  Shards shards;
  Wire wire;
  FakeOps ops0{shards, 0};
  FakeOps ops1{shards, 1};
  FakeMessenger messenger0{wire, 0}, messenger1{wire, 1};
  ShardedDirectory dir0{ops0, kSlots, messenger0, nullptr, options()};
  ShardedDirectory dir1{ops1, kSlots, messenger1, nullptr, options()};
};

// A key homed at rank 1 whose window starts at slot `start` (word / ranks % slots), told apart
// by `n`.
Key key_at(std::uint32_t start, std::uint64_t n) {
  return Key{(n * kSlots + start) * kRanks + 1, 0xabc000 + n, 1};
}

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

// Keys displaced within their window are found, claimed and read back with one round trip more
// than a key in its first slot when in the second (the first get reads two slots), two more
// further on (a read of the window's rest, then the slot).
TEST_F(ShardedDirectoryTest, AKeyDisplacedInItsWindowCostsAtMostTwoMoreRoundTrips) {
  for (std::uint64_t n = 0; n < 10; ++n) {  // ten keys of one window: slots 5..14
    const int before = shards.rounds;
    auto c = dir0.acquire(key_at(5, n), kClaimIt | kTicket);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->outcome, Claim::Outcome::kClaimed);
    EXPECT_EQ(shards.rounds - before, n < 2 ? static_cast<int>(n) + 1 : 3) << "key " << n;
    ASSERT_TRUE(dir0.publish(key_at(5, n), payload_of(n)).ok());
  }
  for (std::uint64_t n = 0; n < 10; ++n) {
    const int before = shards.rounds;
    auto c = dir1.acquire(key_at(5, n), kClaimIt | kTicket);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->outcome, Claim::Outcome::kReady);
    EXPECT_EQ(unpack<std::uint64_t>(c->payload), n);
    // The claimer's ticket, then this one. The first slot's key also counts the tickets the
    // other keys' first round took there before they knew their slot (docs/protocol.md,
    // "Windows": phantom tickets).
    if (n == 0) {
      EXPECT_EQ(c->ticket, 10u);
    } else {
      EXPECT_EQ(c->ticket, 1u);
    }
    EXPECT_EQ(shards.rounds - before, n < 2 ? static_cast<int>(n) + 1 : 3) << "key " << n;
  }
  auto absent = dir1.acquire(key_at(5, 99), kLookOnly);
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->outcome, Claim::Outcome::kAbsent);
  EXPECT_EQ(wire.sent[static_cast<int>(Channel::kOverflowAsk)], 0);
}

// The last window's slots never wrap to the shard's start: a key starting at the last slot has
// its whole window (the shard's spare slots).
TEST_F(ShardedDirectoryTest, TheLastWindowStaysInTheShard) {
  for (std::uint64_t n = 0; n < ShardedDirectory::kWindow; ++n) {
    auto c = dir0.acquire(key_at(kSlots - 1, n), kClaimIt);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->outcome, Claim::Outcome::kClaimed);
    ASSERT_TRUE(dir0.publish(key_at(kSlots - 1, n), payload_of(n)).ok());
  }
  EXPECT_EQ(dir1.overflow_entries(), 0u);
  EXPECT_EQ(unpack<std::uint64_t>(dir1.acquire(key_at(kSlots - 1, 3), kLookOnly)->payload), 3u);
}

// A window full of other keys sends its keys to their home's overflow table: claimed there once,
// found there by every other rank (also in batches), the tickets counted, waiters told; each key
// costs its window's round trips and one message each way, never a probe per slot.
TEST_F(ShardedDirectoryTest, AFullWindowGrowsIntoTheHomesOverflow) {
  const std::uint64_t in_window = ShardedDirectory::kWindow;
  const std::uint64_t keys = in_window + 40;
  for (std::uint64_t n = 0; n < keys; ++n) {
    const int rounds = shards.rounds;
    const int asks = wire.sent[static_cast<int>(Channel::kOverflowAsk)];
    auto c = dir0.acquire(key_at(7, n), kClaimIt | kTicket);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_EQ(c->outcome, Claim::Outcome::kClaimed) << "key " << n;
    EXPECT_LE(shards.rounds - rounds, 3);
    EXPECT_EQ(wire.sent[static_cast<int>(Channel::kOverflowAsk)] - asks, n < in_window ? 0 : 1);
    ASSERT_TRUE(dir0.publish(key_at(7, n), payload_of(1000 + n)).ok());
  }
  EXPECT_EQ(dir1.overflow_entries(), keys - in_window);  // rank 1 is the keys' home
  EXPECT_EQ(dir0.overflow_entries(), 0u);
  EXPECT_EQ(dir0.overflow_requests(), keys - in_window);

  // Rank 1 (the home) and rank 0 find every key in one batch: one request for all of rank 0's.
  std::vector<Lookup> lookups;
  for (std::uint64_t n = 0; n < keys; ++n) lookups.push_back({key_at(7, n), kClaimIt | kTicket});
  for (ShardedDirectory* d : {&dir0, &dir1}) {
    std::vector<Result<Claim>> out(lookups.size(), Status());
    const std::uint64_t requests = d->overflow_requests();
    d->acquire_many(lookups, out);
    for (std::uint64_t n = 0; n < keys; ++n) {
      ASSERT_TRUE(out[n].ok());
      ASSERT_EQ(out[n]->outcome, Claim::Outcome::kReady) << "key " << n;
      EXPECT_EQ(unpack<std::uint64_t>(out[n]->payload), 1000 + n);
      EXPECT_EQ(out[n]->claimer, 0);
    }
    EXPECT_EQ(d->overflow_requests() - requests, d == &dir0 ? 1u : 0u);
  }
  // Tickets: the claimer's, rank 0's batch, rank 1's batch.
  auto t = dir0.acquire(key_at(7, keys - 1), kLookOnly | kTicket);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ticket, 3u);

  // A waiter for an overflow entry another rank is loading is told when it is final.
  const Key late = key_at(7, keys);
  ASSERT_EQ(dir1.acquire(late, kClaimIt)->outcome, Claim::Outcome::kClaimed);
  auto loading = dir0.acquire(late, kClaimIt);
  ASSERT_TRUE(loading.ok());
  ASSERT_EQ(loading->outcome, Claim::Outcome::kLoading);
  EXPECT_EQ(loading->claimer, 1);
  ASSERT_TRUE(dir1.publish(late, payload_of(77)).ok());
  auto woken = dir0.wait(late, *loading, std::chrono::seconds(5));
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(woken->outcome, Claim::Outcome::kReady);
  EXPECT_EQ(unpack<std::uint64_t>(woken->payload), 77u);
}

// At its bound the overflow refuses new keys (the caller reads the PFS) at a constant cost:
// the window's two round trips and one message each way, whatever the number of keys refused; the
// keys it holds stay found.
TEST_F(ShardedDirectoryTest, AFullOverflowRefusesAtAConstantCost) {
  const std::uint64_t held = ShardedDirectory::kWindow + kOverflowBound;
  for (std::uint64_t n = 0; n < held; ++n) {
    auto c = dir0.acquire(key_at(20, n), kClaimIt);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->outcome, Claim::Outcome::kClaimed);
    ASSERT_TRUE(dir0.publish(key_at(20, n), payload_of(n)).ok());
  }
  ASSERT_EQ(dir1.overflow_entries(), kOverflowBound);
  for (std::uint64_t n = held; n < held + 500; ++n) {
    const int rounds = shards.rounds;
    const int gets = shards.gets;
    const int asks = wire.sent[static_cast<int>(Channel::kOverflowAsk)];
    const int answers = wire.sent[static_cast<int>(Channel::kOverflowAnswer)];
    auto c = dir0.acquire(key_at(20, n), kClaimIt | kTicket);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), Errc::kNoSpace);
    EXPECT_NE(c.status().message().find("LARDER_DIR_ENTRIES"), std::string::npos);
    EXPECT_EQ(shards.rounds - rounds, 2);  // the first two slots, then the window's rest
    EXPECT_EQ(shards.gets - gets, 2);
    EXPECT_EQ(wire.sent[static_cast<int>(Channel::kOverflowAsk)] - asks, 1);
    EXPECT_EQ(wire.sent[static_cast<int>(Channel::kOverflowAnswer)] - answers, 1);
  }
  EXPECT_EQ(dir0.refused(), 500u);
  EXPECT_EQ(dir1.overflow_entries(), kOverflowBound);
  // A key refused can be claimed again later (and is refused again), never half-claimed.
  auto again = dir1.acquire(key_at(20, held), kClaimIt);
  EXPECT_FALSE(again.ok());
  for (std::uint64_t n = 0; n < held; n += 13) {
    auto c = dir1.acquire(key_at(20, n), kLookOnly);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->outcome, Claim::Outcome::kReady);
    EXPECT_EQ(unpack<std::uint64_t>(c->payload), n);
  }
}

}  // namespace
}  // namespace larder
