// Every copy a node holds changed: 4 ranks on 2 emulated nodes read a dataset of every size
// class (empty, one byte, small files loaded whole, a chunk less a byte, a chunk, a chunk and a
// byte, many chunks). Node 0's ranks read it first; then one byte of every copy of every chunk
// and small file in node 0's arenas is changed (as bad memory or a tampered /dev/shm would);
// then node 1's ranks (and a DataLoader worker of one of them) read it while node 0 is still in
// the job. Node 1 must find every change, never return it, count it, and take a good copy once
// for the node: the PFS serves at most the dataset once per node.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <larder/larder.h>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/agent/agent_client.hpp"
#include "runtime/agent/agent_server.hpp"
#include "runtime/agent/channel.hpp"
#include "runtime/api/runtime.hpp"
#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

struct Reading {
  bool list_ahead = false;  // the directory is listed first (list-ahead loads its small files)
  bool worker = false;      // node 1 reads through a DataLoader worker of rank 2 as well
};

class ChangedCopiesTest : public MpiFixture, public ::testing::WithParamInterface<Reading> {
 protected:
  static constexpr std::uint64_t kChunk = 1 << 20;
  void SetUp() override {
    chunk_size = kChunk;
    MpiFixture::SetUp();
    set_env("LARDER_NODE_SIZE", "2");
    set_env("LARDER_MEM", "256M");
    if (!GetParam().list_ahead) set_env("LARDER_LIST_AHEAD", "0");
  }

  // The dataset: every size class, and small files of random sizes.
  std::vector<std::uint64_t> sizes() const {
    std::vector<std::uint64_t> s = {0,      1,          46'142,          109'178, kChunk - 1,
                                    kChunk, kChunk + 1, 3 * kChunk + 17, 200'000, 4096};
    std::mt19937_64 random(47);
    for (int i = 0; i < 12; ++i) s.push_back(1 + random() % (256 << 10));
    return s;
  }
  std::string name(std::size_t i) const { return "set/f" + std::to_string(i); }
  void make_dataset() {
    if (rank() == 0) std::filesystem::create_directory(data("set"));
    barrier();
    const auto s = sizes();
    for (std::size_t i = 0; i < s.size(); ++i) make_file(name(i), s[i], 100 + i);
  }
  std::uint64_t dataset_bytes() const {
    std::uint64_t n = 0;
    for (std::uint64_t b : sizes()) n += b;
    return n;
  }
  std::uint64_t dataset_chunks() const {
    std::uint64_t n = 0;
    for (std::uint64_t b : sizes()) n += (b + kChunk - 1) / kChunk;
    return n;
  }

  // Reads every file through the cache (after listing the directory, with list-ahead) and
  // compares it with a direct read.
  void read_all(const char* who) {
    if (GetParam().list_ahead) {
      if (Lease s = Runtime::instance().session()) {
        ASSERT_TRUE(s->list(data("set")).ok());
      }
    }
    const auto s = sizes();
    for (std::size_t i = 0; i < s.size(); ++i) {
      const int fd = larder_open(data(name(i)).c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << name(i);
      std::vector<std::byte> got(s[i]);
      if (!got.empty()) {
        EXPECT_EQ(larder_pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()))
            << name(i);
      }
      larder_close(fd);
      EXPECT_EQ(got, read_whole(data(name(i)))) << who << " rank " << rank() << ": " << name(i);
    }
  }

  // What a DataLoader worker of this rank reads: the agent's channel, in this process.
  void read_all_as_worker() {
    auto server = agent::AgentServer::listen(agent::new_agent_name());
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    (*server)->start(data("worker-stats-" + std::to_string(rank())));
    auto config = Config::from_environment();
    ASSERT_TRUE(config.ok());
    auto client = agent::AgentClient::connect((*server)->name(), *config);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    if (GetParam().list_ahead) {
      ASSERT_TRUE((*client)->list(data("set")).ok());
    }
    const auto s = sizes();
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto record = (*client)->lookup(data(name(i)));
      ASSERT_TRUE(record.ok());
      std::vector<std::byte> got(s[i]);
      if (!got.empty()) {
        auto n = (*client)->read(CachedFile::of(data(name(i)), *record), got, 0);
        ASSERT_TRUE(n.ok()) << n.status().to_string();
        EXPECT_EQ(*n, got.size());
      }
      EXPECT_EQ(got, read_whole(data(name(i)))) << "a worker of rank " << rank() << ": " << name(i);
    }
    client->reset();
    (*server)->stop();
  }

  // Changes a byte of every copy, in node 0's arenas, of every chunk of every file (found by its
  // bytes); chunks shorter than 16 bytes by the place the node's answer names. Rank 0 does it
  // for node 0 (ranks 0 and 1). Returns the copies changed.
  std::uint64_t change_node0_copies() {
    Lease s = Runtime::instance().session();
    if (!s) {
      ADD_FAILURE() << "no session";
      return 0;
    }
    std::vector<std::string> arenas;
    for (int r = 0; r < 2; ++r) {
      for (Tier t : {Tier::kMem, Tier::kDisk}) {
        const std::string p = s->storage_path(r, t, 0);
        if (!p.empty() && std::filesystem::exists(p)) arenas.push_back(p);
      }
    }
    std::uint64_t changed = 0;
    const auto all = sizes();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto bytes = read_whole(data(name(i)));
      for (std::uint64_t off = 0; off < bytes.size(); off += kChunk) {
        const std::uint64_t len = std::min<std::uint64_t>(kChunk, bytes.size() - off);
        if (len >= 16) {
          for (const std::string& a : arenas) changed += flip_copies(a, {bytes.data() + off, len});
          continue;
        }
        auto record = s->lookup(data(name(i)));
        EXPECT_TRUE(record.ok());
        if (!record.ok()) continue;
        auto place = s->cache().known_place(CachedFile::of(data(name(i)), *record), off / kChunk);
        EXPECT_TRUE(place.has_value()) << "node 0 holds " << name(i);
        if (!place) continue;
        changed += flip_at(s->storage_path(place->owner, place->tier, place->segment),
                           place->offset + place->length / 2);
      }
    }
    return changed;
  }

  // The case: node 0's ranks read the dataset, every copy on node 0 is changed, node 1's ranks
  // (and a worker of rank 2) read it. The job's stats.
  nlohmann::json read_change_read() {
    make_dataset();
    init();
    const bool node0 = rank() < 2;
    if (node0) read_all("node 0");
    barrier();
    if (rank() == 0) {
      if (Lease s = Runtime::instance().session()) s->cache().settle_background();
    }
    barrier();
    if (rank() == 0) {
      EXPECT_GE(change_node0_copies(), dataset_chunks()) << "a copy of every chunk was changed";
    }
    barrier();
    if (!node0) {
      if (GetParam().worker && rank() == 2) read_all_as_worker();
      read_all("node 1");
    }
    barrier();
    auto stats = finalize();
    if (rank() == 0 && std::getenv("LARDER_TEST_SHOW") != nullptr) {
      std::printf("%s\n%s\n%s\n", stats["pfs"].dump().c_str(), stats["integrity"].dump().c_str(),
                  stats["fallback_causes"].dump().c_str());
    }
    return stats;
  }

  static std::uint64_t flip_at(const std::string& file, std::uint64_t at) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0) << file;
    if (fd < 0) return 0;
    unsigned char b = 0;
    EXPECT_EQ(::pread(fd, &b, 1, static_cast<off_t>(at)), 1);
    b ^= 0x5A;
    EXPECT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
    return 1;
  }

  // Every place in `file`'s data (holes skipped) that holds `chunk`: one byte changed in each.
  static std::uint64_t flip_copies(const std::string& file, std::span<const std::byte> chunk) {
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0) << file;
    if (fd < 0) return 0;
    std::uint64_t changed = 0;
    std::vector<std::byte> region;
    off_t at = 0;
    for (;;) {
      const off_t data_at = ::lseek(fd, at, SEEK_DATA);
      if (data_at < 0) break;
      const off_t hole_at = ::lseek(fd, data_at, SEEK_HOLE);
      if (hole_at <= data_at) break;
      region.resize(static_cast<std::size_t>(hole_at - data_at));
      EXPECT_EQ(::pread(fd, region.data(), region.size(), data_at),
                static_cast<ssize_t>(region.size()));
      const std::byte* from = region.data();
      const std::byte* end = region.data() + region.size();
      while (from < end) {
        const void* hit =
            ::memmem(from, static_cast<std::size_t>(end - from), chunk.data(), chunk.size());
        if (hit == nullptr) break;
        const auto* h = static_cast<const std::byte*>(hit);
        const off_t where = data_at + (h - region.data()) + static_cast<off_t>(chunk.size() / 2);
        unsigned char b = static_cast<unsigned char>(h[chunk.size() / 2]) ^ 0x5A;
        EXPECT_EQ(::pwrite(fd, &b, 1, where), 1);
        ++changed;
        from = h + chunk.size();
      }
      at = hole_at;
    }
    ::close(fd);
    return changed;
  }
};

TEST_P(ChangedCopiesTest, AnotherNodeReadsRightBytesAndTakesAGoodCopyOncePerNode) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  const auto stats = read_change_read();
  const std::uint64_t nonempty = dataset_chunks();
  // Node 1 found every changed chunk, once for the node, and took it once for the node from the
  // PFS; no rank or worker saw the changed bytes (read_all compared them).
  EXPECT_EQ(u64(stats["integrity"]["mismatches"]), nonempty);
  EXPECT_EQ(u64(stats["integrity"]["reloaded"]), nonempty);
  EXPECT_LE(u64(stats["pfs"]["bytes_read"]), 2 * dataset_bytes()) << stats["pfs"].dump();
  EXPECT_LE(u64(stats["pfs"]["read_ops"]), 2 * nonempty) << stats["pfs"].dump();
  // No rank read the PFS itself: the node's copy served them all.
  EXPECT_EQ(u64(stats["fallbacks"]), 0U) << stats["fallback_causes"].dump();
}

// Node 1 has no memory to keep copies: its ranks read node 0's chunks over the network straight
// into their buffers. Each changed chunk is found by the reading rank, and that read goes to the
// PFS, counted under `integrity`.
TEST_P(ChangedCopiesTest, ANodeWithoutRoomReadsIntoItsBuffersChecked) {
  if (size() != 4) GTEST_SKIP() << "needs 4 ranks on 2 nodes";
  if (rank() >= 2) set_env("LARDER_MEM", "0");
  const auto stats = read_change_read();
  const std::uint64_t nonempty = dataset_chunks();
  // Each rank of node 1 found every chunk bad (the 1-byte file's too) and read it from the PFS.
  EXPECT_GE(u64(stats["integrity"]["mismatches"]), 2 * nonempty);
  EXPECT_GE(u64(stats["fallback_causes"]["integrity"]), 2 * nonempty)
      << stats["fallback_causes"].dump();
  EXPECT_EQ(u64(stats["fallback_causes"]["no_room"]), 0U) << stats["fallback_causes"].dump();
  EXPECT_LE(u64(stats["pfs"]["bytes_read"]), (GetParam().worker ? 4 : 3) * dataset_bytes())
      << stats["pfs"].dump();
}

INSTANTIATE_TEST_SUITE_P(Reads, ChangedCopiesTest,
                         ::testing::Values(Reading{false, false}, Reading{true, false},
                                           Reading{false, true}, Reading{true, true}),
                         [](const ::testing::TestParamInfo<Reading>& p) {
                           return std::string(p.param.list_ahead ? "ListAhead" : "OnFirstRead") +
                                  (p.param.worker ? "WithWorker" : "");
                         });

}  // namespace
}  // namespace larder::testing
