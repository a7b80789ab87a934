// The MPI transport's data path itself (RmaTransport): reads from every other rank's arena in one
// batch match the holder's bytes; reads whose hash the caller wants (GetOp::hashed) arrive in
// pieces, each hashed once it and those before it have arrived, and the hash is the whole
// read's; reads that do not ask are not hashed. Every rank fills its arena with a pattern of its
// own and reads the others'.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "mpi_transport/rma_transport.hpp"
#include "runtime/common/content_hash.hpp"
#include "runtime/tier/arena.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder::testing {
namespace {

constexpr std::uint64_t kArena = 16ull << 20;

std::byte pattern(int rank, std::uint64_t at) {
  return static_cast<std::byte>((at * 131 + static_cast<std::uint64_t>(rank) * 7 + at / 4093) &
                                0xff);
}

class RmaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    dir_ = std::make_unique<TempDir>("larder-rma-" + std::to_string(rank_));
    auto arena = Arena::create(*dir_ / "mem", kArena);
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    auto half = (*arena)->allocate(kArena / 2);  // the half others read
    ASSERT_TRUE(half.ok());
    for (std::uint64_t i = 0; i < kArena / 2; ++i) (*arena)->data()[*half + i] = pattern(rank_, i);
    tiers_.set(Tier::kMem, std::move(*arena));
    auto t = mpi::RmaTransport::create(MPI_COMM_WORLD, tiers_);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    transport_ = std::move(*t);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);  // nobody reads from a rank that has closed (its MPI progresses)
    if (transport_) {
      EXPECT_TRUE(transport_->close().ok());
    }
  }

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<TempDir> dir_;
  LocalTiers tiers_;
  std::unique_ptr<mpi::RmaTransport> transport_;
};

TEST_F(RmaTransportTest, HashedReadsFromEveryRankArriveWholeWithTheirHash) {
  if (size_ < 2) GTEST_SKIP() << "needs 2 ranks";
  // One piece (at most 256 KiB), pieces of 256 KiB, of 1 MiB and a short tail.
  constexpr std::array<std::uint64_t, 5> kSizes = {1, 50ull << 10, 1ull << 20, (1ull << 20) + 1,
                                                   (7ull << 19) + 5};
  std::vector<Transport::GetOp> ops;
  std::vector<Transport::Hashed> hashed(kSizes.size() * static_cast<std::size_t>(size_));
  std::vector<std::vector<std::byte>> into;
  into.reserve(hashed.size());
  for (int owner = 0; owner < size_; ++owner) {
    if (owner == rank_) continue;
    std::uint64_t offset = 13;
    for (const std::uint64_t n : kSizes) {
      into.emplace_back(n);
      ops.push_back(Transport::GetOp{owner, Tier::kMem, 0, offset, std::span(into.back()),
                                     &hashed[ops.size()]});
      offset += n + 3;
    }
  }
  std::uint64_t total = 0;
  std::vector<Transport::GetOp> plain = ops;
  for (Transport::GetOp& op : plain) {
    op.hashed = nullptr;
    total += op.into.size();
  }
  std::vector<Status> out(ops.size());
  transport_->get_many(plain, out);
  for (const Status& s : out) ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(transport_->bytes_hashed(), 0u) << "reads that did not ask were hashed";
  for (auto& buffer : into) std::fill(buffer.begin(), buffer.end(), std::byte{0});
  transport_->get_many(ops, out);
  EXPECT_EQ(transport_->bytes_hashed(), total);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].to_string();
    for (std::uint64_t j = 0; j < ops[i].into.size(); ++j) {
      ASSERT_EQ(ops[i].into[j], pattern(ops[i].owner, ops[i].offset + j))
          << "read " << i << " byte " << j;
    }
    EXPECT_EQ(hashed[i].hash, content_hash(ops[i].into.data(), ops[i].into.size())) << i;
  }
}

}  // namespace
}  // namespace larder::testing
