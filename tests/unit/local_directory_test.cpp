#include "runtime/directory/local_directory.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace larder {
namespace {

const Key kA{11, 1};
const Key kB{22, 2};

TEST(LocalDirectoryTest, FirstAcquireClaimsLaterOnesSeeLoading) {
  LocalDirectory d(16);
  auto first = d.acquire(kA);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->outcome, Claim::Outcome::kClaimed);
  auto second = d.acquire(kA);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->outcome, Claim::Outcome::kLoading);
}

TEST(LocalDirectoryTest, PublishMakesTheEntryReadyWithItsPayload) {
  LocalDirectory d(16);
  ASSERT_TRUE(d.acquire(kA).ok());
  Payload p{};
  p[0] = std::byte{42};
  ASSERT_TRUE(d.publish(kA, p).ok());
  auto c = d.acquire(kA);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, Claim::Outcome::kReady);
  EXPECT_EQ(c->payload[0], std::byte{42});
  EXPECT_FALSE(d.publish(kA, p).ok());  // only a loading entry can be finished
}

TEST(LocalDirectoryTest, AbandonMakesTheEntryFailed) {
  LocalDirectory d(16);
  ASSERT_TRUE(d.acquire(kA).ok());
  ASSERT_TRUE(d.abandon(kA).ok());
  auto c = d.acquire(kA);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, Claim::Outcome::kFailed);
}

TEST(LocalDirectoryTest, FullDirectoryReportsNoSpace) {
  LocalDirectory d(1);
  ASSERT_TRUE(d.acquire(kA).ok());
  auto c = d.acquire(kB);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kNoSpace);
}

TEST(LocalDirectoryTest, WaitReturnsWhenAnotherThreadPublishes) {
  LocalDirectory d(16);
  ASSERT_TRUE(d.acquire(kA).ok());
  std::thread loader([&] { ASSERT_TRUE(d.publish(kA, Payload{}).ok()); });
  auto c = d.wait(kA, Claim{Claim::Outcome::kLoading}, std::chrono::hours(1));
  loader.join();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, Claim::Outcome::kReady);
}

TEST(LocalDirectoryTest, WaitTimesOutWhenNobodyPublishes) {
  LocalDirectory d(16);
  ASSERT_TRUE(d.acquire(kA).ok());
  auto c = d.wait(kA, Claim{Claim::Outcome::kLoading}, std::chrono::milliseconds(1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kTimeout);
}

TEST(LocalDirectoryTest, WatchWaitsForAnEntryNobodyHasClaimedYet) {
  LocalDirectory d(16);
  // The watcher starts first; the producer claims and publishes later (a produced file).
  std::thread producer([&] {
    auto claim = d.acquire(kA);
    ASSERT_TRUE(claim.ok());
    ASSERT_EQ(claim->outcome, Claim::Outcome::kClaimed);
    Payload p{};
    p[0] = std::byte{7};
    ASSERT_TRUE(d.publish_watched(kA, p).ok());
  });
  auto c = d.watch(kA, std::chrono::hours(1));
  producer.join();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->outcome, Claim::Outcome::kReady);
  EXPECT_EQ(c->payload[0], std::byte{7});
  // A watch of a final entry answers at once; of an abandoned one, FAILED.
  ASSERT_TRUE(d.acquire(kB).ok());
  ASSERT_TRUE(d.abandon_watched(kB).ok());
  auto failed = d.watch(kB, std::chrono::hours(1));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->outcome, Claim::Outcome::kFailed);
}

TEST(LocalDirectoryTest, WatchTimesOutWhenNobodyProduces) {
  LocalDirectory d(16);
  auto c = d.watch(kA, std::chrono::milliseconds(1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kTimeout);
}

}  // namespace
}  // namespace larder
