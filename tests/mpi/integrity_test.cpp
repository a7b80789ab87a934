// Every chunk checked (LARDER_VERIFY): bytes that enter a node through the transport are checked
// against the content hash the chunk's record carries, and a copy that does not match never
// reaches the application. The faults are a transport seam that changes bytes in flight from
// one rank (a bad holder, for every chunk or for one), on 4 emulated nodes of one rank each.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <larder/larder.hpp>
#include <string>

#include "runtime/agent/agent_client.hpp"
#include "runtime/agent/agent_server.hpp"
#include "runtime/agent/channel.hpp"
#include "runtime/common/content_hash.hpp"
#include "tests/mpi/mpi_fixture.hpp"
#include "tests/mpi/scoped_seams.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

// Forwards to the real transport, then flips a byte of what arrived from rank `bad` (only for
// gets that start inside [from, to) of the holder's memory when `to` is set). A real transport
// that hashed the bytes as they arrived (GetOp::hashed) would have hashed the flipped byte: the
// hash is made again over what the caller now holds.
class CorruptingTransport : public Transport {
 public:
  CorruptingTransport(Transport& real, int bad, std::uint64_t from, std::uint64_t to)
      : real_(real), bad_(bad), from_(from), to_(to) {}
  const char* name() const noexcept override { return real_.name(); }
  Status get(const GetOp& op) override {
    Status s = real_.get(op);
    if (s.ok()) spoil(op);
    return s;
  }
  void get_many(std::span<const GetOp> ops, std::span<Status> out) override {
    real_.get_many(ops, out);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (out[i].ok()) spoil(ops[i]);
    }
  }
  Result<std::vector<std::byte>> expose(std::uint32_t segment,
                                        std::span<std::byte> memory) override {
    return real_.expose(segment, memory);
  }
  bool knows(int owner, std::uint32_t segment) override { return real_.knows(owner, segment); }
  Status learn(int owner, std::uint32_t segment, std::span<const std::byte> d) override {
    return real_.learn(owner, segment, d);
  }
  void begin_close() noexcept override { real_.begin_close(); }

 private:
  void spoil(const GetOp& op) const {
    if (op.owner != bad_ || op.into.empty()) return;
    if (to_ != 0 && (op.offset < from_ || op.offset >= to_)) return;
    op.into[op.into.size() / 2] ^= std::byte{0x5A};
    if (op.hashed != nullptr && op.hashed->hash != 0) {
      op.hashed->hash = content_hash(op.into.data(), op.into.size());
    }
  }
  Transport& real_;
  const int bad_;
  const std::uint64_t from_;
  const std::uint64_t to_;
};

Seams corrupting(int bad, std::uint64_t from = 0, std::uint64_t to = 0) {
  Seams seams;
  seams.transport = [bad, from, to](Transport& real) {
    return std::make_unique<CorruptingTransport>(real, bad, from, to);
  };
  return seams;
}

// The residency seam: whether a disk-tier chunk's pages are in memory (true: as the kernel says
// of pages just written; false: as if they had been evicted and come from the device now).
std::atomic<bool> g_resident{true};

Seams residency() {
  Seams seams;
  seams.resident = [](std::span<const std::byte>) { return g_resident.load(); };
  return seams;
}

std::uint64_t u64(const nlohmann::json& j) {
  return j.get<std::uint64_t>();
}

// Rank 0 reads the file first (the origin of every chunk), then the others one after another:
// with LARDER_FANOUT=1 each later node copies from the one before it (a chain of holders).
class IntegrityTest : public MpiFixture {
 protected:
  std::vector<std::byte> read_in_turn(const std::string& path) {
    std::vector<std::byte> got;
    for (int turn = 0; turn < size(); ++turn) {
      if (turn == rank()) got = read_in_pieces(path, 100'000);
      barrier();
    }
    return got;
  }
};

TEST_F(IntegrityTest, AFanOutTreeWithACorruptingHolderInItsMiddleServesRightBytes) {
  constexpr std::uint64_t kChunks = 8;
  set_env("LARDER_NODE_SIZE", "1");
  set_env("LARDER_FANOUT", "1");
  make_file("tree", kChunks * chunk_size, 71);
  const ScopedSeams faults(corrupting(1));  // every copy taken from rank 1 is spoiled in flight
  init();
  const auto direct = read_whole(data("tree"));
  const auto got = read_in_turn(data("tree"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  // Rank 1 copied good bytes from rank 0; rank 2 found rank 1's copies bad and took rank 0's;
  // rank 3 copied from rank 2 (or the origin). The PFS served each chunk once.
  if (size() >= 3) {
    EXPECT_GE(u64(stats["integrity"]["mismatches"]), kChunks);
    EXPECT_EQ(stats["integrity"]["mismatches"], stats["integrity"]["refetched"]);
  }
  EXPECT_EQ(stats["pfs"]["read_ops"], kChunks);
  EXPECT_EQ(stats["fallbacks"], 0);
}

TEST_F(IntegrityTest, AHolderFoundBadIsMarkedBadAndTheNextReaderBelowItGoesAroundIt) {
  // Fan-out 2 over 6 nodes read in turn: positions 1 and 2 below the origin, 3 and 4 below 1,
  // 5 below 2. Rank 1 (position 1) serves spoiled bytes. Rank 3 finds them bad and marks the
  // holder; rank 4, also below it, sees the mark with its parent's entry and copies from the
  // origin: one mismatch per chunk, not two.
  if (size() != 6) GTEST_SKIP() << "needs 6 ranks (integrity_np6)";
  constexpr std::uint64_t kChunks = 4;
  set_env("LARDER_NODE_SIZE", "1");
  set_env("LARDER_FANOUT", "2");
  make_file("marked", kChunks * chunk_size, 75);
  const ScopedSeams faults(corrupting(1));
  init();
  const auto direct = read_whole(data("marked"));
  const auto got = read_in_turn(data("marked"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  EXPECT_EQ(u64(stats["integrity"]["mismatches"]), kChunks) << "rank 4 went around rank 1";
  EXPECT_EQ(u64(stats["integrity"]["holders_marked"]), kChunks);
  EXPECT_EQ(stats["pfs"]["read_ops"], kChunks);
  EXPECT_EQ(stats["fallbacks"], 0);
}

TEST_F(IntegrityTest, AHolderBadForOneChunkIsGoodForTheOthers) {
  constexpr std::uint64_t kChunks = 6;
  set_env("LARDER_NODE_SIZE", "1");
  make_file("one", kChunks * chunk_size, 72);
  // Only gets that start in rank 0's second chunk-sized range of memory are spoiled: rank 0 loads
  // the file's chunks into its arena in order, so that is chunk 1.
  const ScopedSeams faults(corrupting(0, chunk_size, 2 * chunk_size));
  init();
  const auto direct = read_whole(data("one"));
  const auto got = read_in_turn(data("one"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  const auto others = static_cast<std::uint64_t>(size() - 1);
  // Each other node found chunk 1 of the origin bad (and read it from the PFS); the rest came
  // from the origin's memory, checked and good.
  EXPECT_GE(u64(stats["integrity"]["mismatches"]), others);
  EXPECT_LE(u64(stats["pfs"]["read_ops"]), kChunks + 4 * others);
  EXPECT_GE(u64(stats["integrity"]["checked"]), others * kChunks);
}

TEST_F(IntegrityTest, ARemoteReadIntoTheCallersBufferIsChecked) {
  // Ranks other than 0 have no memory tier: they read rank 0's chunks over the network straight
  // into their buffers, in pieces smaller than a chunk (each checked with its whole chunk).
  constexpr std::uint64_t kChunks = 4;
  set_env("LARDER_NODE_SIZE", "1");
  if (rank() != 0) set_env("LARDER_MEM", "0");
  make_file("remote", kChunks * chunk_size, 73);
  const ScopedSeams faults(corrupting(0));
  init();
  const auto direct = read_whole(data("remote"));
  const auto got = read_in_turn(data("remote"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  EXPECT_GE(u64(stats["integrity"]["mismatches"]), static_cast<std::uint64_t>(size() - 1));
  // Each rejected copy is a read from the PFS, counted under its cause (the job report's).
  EXPECT_GE(u64(stats["fallback_causes"]["integrity"]), static_cast<std::uint64_t>(size() - 1));
  std::uint64_t by_cause = 0;
  for (const auto& [cause, n] : stats["fallback_causes"].items()) by_cause += u64(n);
  EXPECT_EQ(by_cause, u64(stats["fallbacks"]));
}

// All ranks on one node, with no memory tier: rank 0 reads the file first, so every chunk is in
// its disk-tier arena, and the others read it from there.
class DiskTierTest : public IntegrityTest {
 protected:
  static constexpr std::uint64_t kChunks = 6;
  void SetUp() override {
    IntegrityTest::SetUp();
    local_ = std::filesystem::path(data("x")).parent_path().parent_path() / "local";
    if (rank() == 0) std::filesystem::create_directory(local_);
    set_env("LARDER_NODE_SIZE", std::to_string(size()));
    set_env("LARDER_MEM", "0");
    set_env("LARDER_DISK", "64M");
    set_env("LARDER_DIR", local_.string());
    g_resident = true;
    seams_ = std::make_unique<ScopedSeams>(residency());
  }
  void TearDown() override {
    IntegrityTest::TearDown();
    seams_.reset();
    g_resident = true;
  }
  // Starts Larder and has rank 0 read a new file `name`: every chunk is then in rank 0's disk
  // tier. Returns the file's bytes, read directly.
  std::vector<std::byte> cached_on_disk(const std::string& name, std::uint64_t seed) {
    make_file(name, kChunks * chunk_size, seed);
    init();
    auto direct = read_whole(data(name));
    if (rank() == 0) {
      EXPECT_EQ(read_in_pieces(data(name), 100'000), direct);  // the origin
    }
    barrier();
    return direct;
  }
  // Changes a byte in every chunk of rank 0's disk-tier arena, as a device that went bad would.
  void spoil_disk_arena() {
    if (rank() == 0) {
      std::filesystem::path arena;
      for (const auto& e : std::filesystem::recursive_directory_iterator(local_)) {
        if (e.path().filename() == "arena-0.disk") arena = e.path();
      }
      ASSERT_FALSE(arena.empty()) << "no disk-tier arena of rank 0 under " << local_;
      const int fd = ::open(arena.c_str(), O_RDWR | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      // Chunks start at page boundaries: a byte every half chunk is in every chunk.
      for (std::uint64_t at = 7; at < kChunks * chunk_size; at += chunk_size / 2) {
        unsigned char b = 0;
        ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(at)), 1);
        b ^= 0x5A;
        ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at)), 1);
      }
      ::close(fd);
    }
    barrier();
  }
  std::filesystem::path local_;
  std::unique_ptr<ScopedSeams> seams_;
};

TEST_F(DiskTierTest, ChunksInMemoryAreNotCheckedAgain) {
  const auto direct = cached_on_disk("disk", 76);
  const auto got = read_in_turn(data("disk"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  EXPECT_GT(u64(stats["hits"]["tier"]["disk"]), 0U);
  EXPECT_EQ(stats["integrity"]["checked"], 0);  // hashed once, on the PFS read
  EXPECT_EQ(stats["pfs"]["read_ops"], kChunks);
}

TEST_F(DiskTierTest, ChunksReadFromTheDeviceAreCheckedAndBadOnesNeverServed) {
  const auto direct = cached_on_disk("disk", 77);
  spoil_disk_arena();
  g_resident = false;  // the spoiled pages come from the device
  const auto got = read_in_turn(data("disk"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  // Every rank found every chunk bad and read it from the PFS: never the spoiled bytes.
  const auto reads = static_cast<std::uint64_t>(size()) * kChunks;
  EXPECT_GE(u64(stats["integrity"]["mismatches"]), reads);
  EXPECT_EQ(stats["integrity"]["mismatches"], stats["integrity"]["refetched"]);
  EXPECT_GE(u64(stats["fallback_causes"]["integrity"]), reads);
}

TEST_F(DiskTierTest, AfterAMismatchChunksInMemoryAreCheckedToo) {
  // One chunk from the device is bad: the node's disk tier is suspect from then on, and the
  // chunks whose pages are in memory are checked as well (and found good).
  const auto direct = cached_on_disk("disk", 78);
  spoil_disk_arena();
  if (rank() == 0) {
    g_resident = false;
    std::vector<std::byte> first(100);
    File f(data("disk"));
    EXPECT_EQ(f.read_at(first, 0), first.size());
    EXPECT_TRUE(std::equal(first.begin(), first.end(), direct.begin()));
    g_resident = true;
  }
  barrier();
  const auto got = read_in_turn(data("disk"));
  EXPECT_EQ(got, direct) << "rank " << rank();
  const auto stats = finalize();
  EXPECT_GE(u64(stats["integrity"]["mismatches"]), static_cast<std::uint64_t>(size()) * kChunks);
}

// Nodes of one rank; rank 0 alone has a disk tier (and no memory tier), the others no tier at
// all, so they read rank 0's chunks over the network into their buffers, as messages: rank 0
// serves them from its disk tier.
// Rank 0 holds every chunk on its disk tier; the other ranks (nodes of one rank each) read them
// from it, as messages (the holder serves each piece) or with one-sided gets (the holder is asked
// to check the chunks first: HolderChecks). With LARDER_TRANSPORT=mpi both are MPI gets.
class ServedDiskTest : public DiskTierTest {
 protected:
  void SetUp() override {
    DiskTierTest::SetUp();
    set_env("LARDER_NODE_SIZE", "1");
    if (rank() != 0) set_env("LARDER_DISK", "0");
  }
  void spoiled_pages_are_checked_before_they_are_served(std::uint64_t seed) {
    const auto direct = cached_on_disk("served", seed);
    spoil_disk_arena();
    // Rank 0's spoiled pages are not in memory: the first remote read of each chunk brings them
    // in from the device. Rank 0 checks them before they are read, finds them bad and refuses.
    g_resident = false;
    for (int turn = 1; turn < size(); ++turn) {
      if (turn == rank()) {
        EXPECT_EQ(read_in_pieces(data("served"), 100'000), direct) << "rank " << rank();
      }
      barrier();
    }
    // Now the pages are in memory, as the transport left them. Without the holder's check rank 0
    // would read them unchecked as its own memory: the spoiled bytes.
    g_resident = true;
    if (rank() == 0) {
      EXPECT_EQ(read_in_pieces(data("served"), 100'000), direct) << "rank 0, after serving";
    }
    const auto stats = finalize();
    // Each chunk was found bad by rank 0 when first asked for (and again by rank 0's own read,
    // its node now suspect); the readers took it from the PFS, and so did rank 0.
    EXPECT_GE(u64(stats["integrity"]["mismatches"]), 2 * kChunks);
    EXPECT_GE(u64(stats["fallback_causes"]["integrity"]),
              static_cast<std::uint64_t>(size()) * kChunks);
    EXPECT_EQ(u64(stats["fallback_causes"]["transport"]), 0U);
  }
};

TEST_F(ServedDiskTest, PagesATransportLoadsFromTheDeviceAreCheckedBeforeTheyAreServed) {
  set_env("LARDER_REMOTE_READS", "messages");
  spoiled_pages_are_checked_before_they_are_served(79);
}

TEST_F(ServedDiskTest, PagesAOneSidedGetLoadsFromTheDeviceAreCheckedBeforeTheGet) {
  set_env("LARDER_REMOTE_READS", "rma");
  spoiled_pages_are_checked_before_they_are_served(80);
}

// A DataLoader worker copies node-local chunks itself (AgentClient::copy_local). Once a check
// has found the node's disk tier bad, it reads disk-tier chunks through its rank, which checks
// them, even when their pages are in memory: it sees the node's words (NodeView::node_word).
TEST_F(ServedDiskTest, AWorkerReadsDiskTierChunksThroughItsRankOnceTheNodeIsSuspect) {
  const auto direct = cached_on_disk("worker", 81);
  spoil_disk_arena();
  // Rank 1's read has rank 0 check its spoiled chunks (pages "not in memory"): they fail, and
  // rank 0's node is suspect from then on.
  g_resident = false;
  if (rank() == 1) {
    EXPECT_EQ(read_in_pieces(data("worker"), 100'000), direct);
  }
  barrier();
  g_resident = true;
  if (rank() == 0) {
    // A worker of rank 0, in this process: the spoiled pages are in the page cache, so without
    // the node's words it copied them as they are.
    auto server = agent::AgentServer::listen(agent::new_agent_name());
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    (*server)->start((local_ / "worker-stats").string());
    auto config = Config::from_environment();
    ASSERT_TRUE(config.ok());
    auto client = agent::AgentClient::connect((*server)->name(), *config);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    ASSERT_NE((*client)->node_view(), nullptr);  // so the worker decides by the node's words
    auto record = (*client)->lookup(data("worker"));
    ASSERT_TRUE(record.ok());
    const CachedFile file = CachedFile::of(data("worker"), *record);
    std::vector<std::byte> got(direct.size());
    for (std::size_t off = 0; off < got.size(); off += 100'000) {
      const std::size_t n = std::min<std::size_t>(100'000, got.size() - off);
      auto read = (*client)->read(file, std::span(got).subspan(off, n), off);
      ASSERT_TRUE(read.ok()) << read.status().to_string();
      ASSERT_EQ(*read, n);
    }
    EXPECT_EQ(got, direct) << "a worker of the suspect node";
    client->reset();
    (*server)->stop();
  }
  const auto stats = finalize();
  EXPECT_EQ(u64(stats["fallback_causes"]["transport"]), 0U);
}

TEST_F(IntegrityTest, WithVerifyOffNothingIsHashed) {
  set_env("LARDER_NODE_SIZE", "1");
  set_env("LARDER_VERIFY", "off");
  make_file("plain", 3 * chunk_size, 74);
  init();
  const auto direct = read_whole(data("plain"));
  const auto got = read_in_turn(data("plain"));
  EXPECT_EQ(got, direct);
  const auto stats = finalize();
  EXPECT_EQ(stats["integrity"]["bytes_hashed"], 0);
  EXPECT_EQ(stats["integrity"]["checked"], 0);
}

}  // namespace
}  // namespace larder::testing
