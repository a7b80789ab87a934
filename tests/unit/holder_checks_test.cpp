// HolderChecks over an in-process network (FakeMessengers): a reader asks the holders of its
// disk-tier chunks to check them before one-sided gets, and learns which failed.
#include "runtime/transport/holder_checks.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "tests/support/fake_messengers.hpp"

namespace larder {
namespace {

using testing::FakeMessengers;

// A chunk's hash says which holder rank finds it bad: hash % 1000 == 7.
constexpr std::uint64_t kBadHash = 1007;
constexpr std::uint64_t kGoodHash = 1001;

class Network {
 public:
  explicit Network(int ranks, std::chrono::milliseconds timeout = std::chrono::milliseconds(60'000))
      : messengers_(ranks) {
    failed_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      checks_.push_back(std::make_unique<HolderChecks>(
          r, messengers_[r], timeout,
          [this](int rank) { return failed_[static_cast<std::size_t>(rank)].load(); }));
      checks_.back()->set_check(
          [this, r](Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk) {
            std::lock_guard lock(mu_);
            seen_.push_back({r, tier, segment, chunk.offset});
            return chunk.hash % 1000 != 7;
          });
    }
    messengers_.start();
  }
  ~Network() { messengers_.stop(); }
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;
  HolderChecks& checks(int r) { return *checks_[static_cast<std::size_t>(r)]; }
  testing::FakeMessenger& messenger(int r) { return messengers_[r]; }
  void mark_failed(int r) { failed_[static_cast<std::size_t>(r)] = true; }
  struct Seen {
    int holder;
    Tier tier;
    std::uint32_t segment;
    std::uint64_t offset;
  };
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  FakeMessengers messengers_;
  std::vector<std::unique_ptr<HolderChecks>> checks_;
  std::unique_ptr<std::atomic<bool>[]> failed_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

Transport::GetOp op(int owner, Tier tier, std::uint32_t segment, std::uint64_t offset,
                    std::uint64_t hash) {
  Transport::GetOp o;
  o.owner = owner;
  o.tier = tier;
  o.segment = segment;
  o.offset = offset;
  o.chunk = Transport::ChunkOf{offset, 4096, hash};
  return o;
}

TEST(HolderChecksTest, OnlyDiskTierChunksAreAskedAboutAndABadOneIsRefused) {
  Network net(3);
  const std::uint32_t kept_disk = Segments::kKeptSegment | Segments::kDiskSegment | 2;
  std::vector<Transport::GetOp> ops = {
      op(1, Tier::kMem, 0, 0, kBadHash),           // memory: trusted, not asked
      op(1, Tier::kDisk, 0, 4096, kGoodHash),      // passes
      op(1, Tier::kDisk, 0, 8192, kBadHash),       // fails on its holder
      op(2, Tier::kFile, kept_disk, 0, kBadHash),  // a kept disk-tier file: asked, fails
      op(2, Tier::kFile, 5, 0, kBadHash),          // a node file (memory): not asked
      op(2, Tier::kDisk, 0, 0, 0),                 // no hash: nothing to check against
  };
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  EXPECT_TRUE(out[0].ok());
  EXPECT_TRUE(out[1].ok());
  EXPECT_EQ(out[2].native_code(), EBADMSG);
  EXPECT_EQ(out[3].native_code(), EBADMSG);
  EXPECT_TRUE(out[4].ok());
  EXPECT_TRUE(out[5].ok());
  EXPECT_EQ(net.checks(0).asked(), 3U);
  EXPECT_EQ(net.checks(1).answered(), 2U);
  EXPECT_EQ(net.checks(2).answered(), 1U);
  std::set<std::pair<int, std::uint64_t>> where;
  for (const auto& s : net.seen()) where.insert({s.holder, s.offset});
  EXPECT_EQ(where, (std::set<std::pair<int, std::uint64_t>>{{1, 4096}, {1, 8192}, {2, 0}}));
}

TEST(HolderChecksTest, AnOpAlreadyFailedIsNotAskedAbout) {
  Network net(2);
  std::vector<Transport::GetOp> ops = {op(1, Tier::kDisk, 0, 0, kBadHash)};
  std::vector<Status> out = {Status(Errc::kTransport, 0, "failed before")};
  net.checks(0).check(ops, out);
  EXPECT_EQ(out[0].code(), Errc::kTransport);
  EXPECT_EQ(net.checks(0).asked(), 0U);
}

TEST(HolderChecksTest, ManyChunksOfOneHolderTravelInSeveralAsksAndKeepTheirOrder) {
  Network net(2);
  std::vector<Transport::GetOp> ops;
  for (std::uint64_t i = 0; i < 300; ++i) {
    ops.push_back(op(1, Tier::kDisk, 0, i * 4096, i % 3 == 0 ? kBadHash : kGoodHash));
  }
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(out[i].ok(), i % 3 != 0) << i;
  }
  EXPECT_EQ(net.checks(1).answered(), 300U);
}

TEST(HolderChecksTest, ARanksOwnChunksAreCheckedWithoutAMessage) {
  Network net(2);
  std::vector<Transport::GetOp> ops = {op(0, Tier::kDisk, 0, 0, kBadHash),
                                       op(0, Tier::kDisk, 0, 4096, kGoodHash)};
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  EXPECT_EQ(out[0].native_code(), EBADMSG);
  EXPECT_TRUE(out[1].ok());
  EXPECT_EQ(net.checks(0).asked(), 0U);
  EXPECT_EQ(net.seen().size(), 2U);
}

TEST(HolderChecksTest, AHolderThatDoesNotAnswerFailsItsChunksAfterTheTimeout) {
  Network net(3, std::chrono::milliseconds(200));
  net.messenger(1).set_dead();
  std::vector<Transport::GetOp> ops = {op(1, Tier::kDisk, 0, 0, kGoodHash),
                                       op(2, Tier::kDisk, 0, 0, kGoodHash)};
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  EXPECT_EQ(out[0].code(), Errc::kTimeout);
  EXPECT_TRUE(out[1].ok());  // the other holder's answer stands
}

TEST(HolderChecksTest, AHolderTheTransportKnowsFailedFailsItsChunksAtOnce) {
  // A timeout no test waits for: the failed holder must end the wait.
  Network net(2, std::chrono::hours(1));
  net.messenger(1).set_dead();
  net.mark_failed(1);
  std::vector<Transport::GetOp> ops = {op(1, Tier::kDisk, 0, 0, kGoodHash)};
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  EXPECT_EQ(out[0].code(), Errc::kTransport);
}

TEST(HolderChecksTest, WithoutACheckEveryChunkPasses) {
  Network net(2);
  net.checks(1).set_check(nullptr);
  std::vector<Transport::GetOp> ops = {op(1, Tier::kDisk, 0, 0, kBadHash)};
  std::vector<Status> out(ops.size());
  net.checks(0).check(ops, out);
  EXPECT_TRUE(out[0].ok());
  EXPECT_EQ(net.checks(1).answered(), 1U);
}

}  // namespace
}  // namespace larder
