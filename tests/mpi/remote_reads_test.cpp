// Remote reads on the UCX fabric itself, both ways (LARDER_REMOTE_READS=rma: UCX gets;
// messages: MessageReads), at sizes that UCX sends eagerly and by rendezvous, into this rank's
// own arena and into a buffer of the caller's; a read beyond the holder's memory fails cleanly;
// reads whose hash the caller wants arrive hashed and whole.
// Every rank fills its arena with a pattern of its own and reads every other rank's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/content_hash.hpp"
#include "runtime/tier/arena.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "tests/support/temp_dir.hpp"
#include "ucx_transport/fabric.hpp"
#include "ucx_transport/ucx_factory.hpp"

namespace larder::testing {
namespace {

constexpr std::uint64_t kArena = 16ull << 20;
// 1 B, under and over UCX's 8 KiB eager copy, a small file, over the rendezvous threshold.
constexpr std::array<std::uint64_t, 6> kSizes = {1,           4096,       8193,
                                                 50ull << 10, 1ull << 20, 4ull << 20};

std::byte pattern(int rank, std::uint64_t at) {
  return static_cast<std::byte>((at * 131 + static_cast<std::uint64_t>(rank) * 7 + at / 4093) &
                                0xff);
}

class RemoteReadsTest : public ::testing::TestWithParam<RemoteReads> {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    // One arena per rank, in a directory of its own (ranks of one host share /dev/shm).
    dir_ = std::make_unique<TempDir>("larder-remote-reads-" + std::to_string(rank_));
    auto arena = Arena::create(*dir_ / "mem", kArena);
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    auto half = (*arena)->allocate(kArena / 2);  // the half others read
    ASSERT_TRUE(half.ok());
    ASSERT_EQ(*half, 0u);
    for (std::uint64_t i = 0; i < kArena / 2; ++i) (*arena)->data()[*half + i] = pattern(rank_, i);
    tiers_.set(Tier::kMem, std::move(*arena));
    UcxOptions options;
    options.timeout = std::chrono::milliseconds(30'000);
    options.remote_reads = GetParam();
    auto fabric = make_ucx_transport(MPI_COMM_WORLD, tiers_, options);
    ASSERT_TRUE(fabric.ok()) << fabric.status().to_string();
    fabric_ = std::move(*fabric);
    progress_ = std::make_unique<ProgressThread>(std::chrono::microseconds(50),
                                                 std::chrono::microseconds(1000));
    for (auto& source : fabric_->progress_sources()) progress_->add(std::move(source));
    progress_->start();
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);       // nobody reads from a rank that has closed
    if (progress_) progress_->stop();  // before the worker goes
    if (fabric_) {
      EXPECT_TRUE(fabric_->close().ok());
    }
    fabric_.reset();
  }
  Arena& arena() { return *tiers_.get(Tier::kMem); }
  // `n` bytes to read into: in this rank's arena (a node copy's destination), or a new buffer of
  // `heap` (a reader's own; `heap` is reserved by the caller). Empty when the arena is full.
  std::span<std::byte> destination(std::uint64_t n, bool in_arena,
                                   std::vector<std::vector<std::byte>>& heap) {
    if (in_arena) {
      auto place = arena().allocate(n);
      return place.ok() ? std::span(arena().data() + *place, n) : std::span<std::byte>();
    }
    heap.emplace_back(n);
    return std::span(heap.back());
  }

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<TempDir> dir_;
  LocalTiers tiers_;
  std::unique_ptr<ClosableTransport> fabric_;
  std::unique_ptr<ProgressThread> progress_;
};

TEST_P(RemoteReadsTest, TheModeAskedForIsTheModeUsed) {
  auto* fabric = dynamic_cast<ucx::Fabric*>(fabric_.get());
  ASSERT_NE(fabric, nullptr);
  EXPECT_EQ(fabric->reads_as_messages(), GetParam() == RemoteReads::kMessages);
}

TEST_P(RemoteReadsTest, EverySizeFromEveryRankIntoTheArenaAndIntoAPlainBuffer) {
  // All reads of a round at once (one batch, many holders), half into this rank's arena (the
  // node copy's path) and half into heap buffers (a reader's own buffer).
  std::vector<Transport::GetOp> ops;
  std::vector<std::vector<std::byte>> heap;
  std::vector<std::pair<int, std::uint64_t>> what;  // owner, offset
  heap.reserve(kSizes.size() * static_cast<std::size_t>(size_));
  for (int owner = 0; owner < size_; ++owner) {
    if (owner == rank_) continue;
    std::uint64_t offset = 3;  // unaligned on purpose
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      const std::uint64_t n = kSizes[k];
      const std::span<std::byte> into = destination(n, k % 2 == 0, heap);
      ASSERT_EQ(into.size(), n);
      ops.push_back(Transport::GetOp{owner, Tier::kMem, 0, offset, into});
      what.emplace_back(owner, offset);
      offset += n + 1;
    }
  }
  std::vector<Status> out(ops.size());
  fabric_->get_many(ops, out);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].to_string();
    const auto [owner, offset] = what[i];
    for (std::uint64_t j = 0; j < ops[i].into.size(); ++j) {
      ASSERT_EQ(ops[i].into[j], pattern(owner, offset + j))
          << "rank " << owner << " offset " << offset << " byte " << j;
    }
  }
}

TEST_P(RemoteReadsTest, AReadBeyondTheHoldersMemoryFailsAndTheOthersOfItsBatchDoNot) {
  const int owner = (rank_ + 1) % size_;
  if (owner == rank_) GTEST_SKIP() << "needs 2 ranks";
  std::vector<std::byte> good(4096), beyond(4096), bad_tier(16);
  std::vector<Transport::GetOp> ops = {
      {owner, Tier::kMem, 0, 100, std::span(good)},
      {owner, Tier::kMem, 0, kArena - 100, std::span(beyond)},
      {owner, Tier::kDisk, 0, 0, std::span(bad_tier)},  // the holder has no disk tier
  };
  std::vector<Status> out(ops.size());
  fabric_->get_many(ops, out);
  ASSERT_TRUE(out[0].ok()) << out[0].to_string();
  for (std::uint64_t j = 0; j < good.size(); ++j) ASSERT_EQ(good[j], pattern(owner, 100 + j));
  EXPECT_FALSE(out[1].ok());
  EXPECT_FALSE(out[2].ok());
  // The peer is still usable afterwards.
  std::vector<std::byte> again(8193);
  EXPECT_TRUE(fabric_->get(Transport::GetOp{owner, Tier::kMem, 0, 7, std::span(again)}).ok());
  for (std::uint64_t j = 0; j < again.size(); ++j) ASSERT_EQ(again[j], pattern(owner, 7 + j));
}

TEST_P(RemoteReadsTest, ReadsWhoseHashIsWantedArriveHashedAndWhole) {
  // A read larger than 256 KiB is made in pieces (piece_of), each copied (messages) and hashed
  // while the next arrives: the hash is the whole read's, both ways. Reads that do not ask for
  // their hash are not hashed.
  const int owner = (rank_ + 1) % size_;
  if (owner == rank_) GTEST_SKIP() << "needs 2 ranks";
  constexpr std::array<std::uint64_t, 5> kHashed = {1, 50ull << 10, 1ull << 20, (1ull << 20) + 1,
                                                    (7ull << 19) + 5};  // 3.5 MiB + 5: a tail
  std::vector<Transport::GetOp> ops;
  std::vector<Transport::Hashed> hashed(kHashed.size() * 2);
  std::vector<std::vector<std::byte>> heap;
  heap.reserve(kHashed.size());
  std::uint64_t offset = 11;
  for (const std::uint64_t n : kHashed) {
    for (const bool into_arena : {true, false}) {
      const std::span<std::byte> into = destination(n, into_arena, heap);
      ASSERT_EQ(into.size(), n);
      ops.push_back(Transport::GetOp{owner, Tier::kMem, 0, offset, into, &hashed[ops.size()]});
    }
    offset += n + 1;
  }
  auto* fabric = dynamic_cast<ucx::Fabric*>(fabric_.get());
  ASSERT_NE(fabric, nullptr);
  // The same reads without `hashed` first: nothing is hashed for them.
  std::vector<Transport::GetOp> plain = ops;
  std::uint64_t total = 0;
  for (Transport::GetOp& op : plain) {
    op.hashed = nullptr;
    total += op.into.size();
  }
  const std::uint64_t before = fabric->bytes_hashed();
  std::vector<Status> out(ops.size());
  fabric_->get_many(plain, out);
  EXPECT_EQ(fabric->bytes_hashed(), before) << "reads that did not ask were hashed";
  fabric_->get_many(ops, out);
  EXPECT_EQ(fabric->bytes_hashed(), before + total);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].to_string();
    for (std::uint64_t j = 0; j < ops[i].into.size(); ++j) {
      ASSERT_EQ(ops[i].into[j], pattern(owner, ops[i].offset + j)) << "read " << i << " byte " << j;
    }
    EXPECT_EQ(hashed[i].hash, content_hash(ops[i].into.data(), ops[i].into.size())) << i;
  }
}

TEST_P(RemoteReadsTest, AHashedReadWhoseLastPieceIsBeyondTheHoldersMemoryFailsWithoutAHash) {
  const int owner = (rank_ + 1) % size_;
  if (owner == rank_) GTEST_SKIP() << "needs 2 ranks";
  std::vector<std::byte> into(3ull << 20);  // its first 1.5 MiB exist, the rest does not
  Transport::Hashed hashed;
  const Transport::GetOp op{owner, Tier::kMem, 0, kArena - (3ull << 19), std::span(into), &hashed};
  std::vector<Status> out(1);
  fabric_->get_many(std::span(&op, 1), out);
  EXPECT_FALSE(out[0].ok());
  EXPECT_EQ(hashed.hash, 0u);
  // The peer is still usable afterwards, hashed reads too.
  std::vector<std::byte> again(2ull << 20);
  Transport::Hashed ok;
  ASSERT_TRUE(fabric_->get(Transport::GetOp{owner, Tier::kMem, 0, 9, std::span(again), &ok}).ok());
  for (std::uint64_t j = 0; j < again.size(); ++j) ASSERT_EQ(again[j], pattern(owner, 9 + j));
  EXPECT_EQ(ok.hash, content_hash(again.data(), again.size()));
}

INSTANTIATE_TEST_SUITE_P(BothWays, RemoteReadsTest,
                         ::testing::Values(RemoteReads::kMessages, RemoteReads::kRma),
                         [](const auto& info) {
                           return info.param == RemoteReads::kMessages ? "messages" : "rma";
                         });

}  // namespace
}  // namespace larder::testing
