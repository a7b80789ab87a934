// Scale behaviour that counts, asserted from the job's stats (run at -n 16: 8 emulated nodes of
// 2 ranks): a hot file crosses the network once per node down a fan-out tree in which no rank
// serves more than F copies; a whole job opening one file at once costs directory operations
// per node, not per rank; a stalled first reader sends the others to the PFS within the timeout.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <larder/larder.hpp>
#include <thread>

#include "tests/mpi/mpi_fixture.hpp"
#include "tests/mpi/scoped_seams.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

using ScaleTest = MpiFixture;

constexpr int kNodeSize = 2;

std::uint64_t u64(const nlohmann::json& j) {
  return j.get<std::uint64_t>();
}

TEST_F(ScaleTest, AHotFileCrossesTheNetworkOncePerNodeAndNoRankServesMoreThanFanoutCopies) {
  constexpr std::uint64_t kFanout = 2;  // at 8 nodes: a tree of depth 3
  chunk_size = 4 << 20;
  set_env("LARDER_NODE_SIZE", std::to_string(kNodeSize));
  set_env("LARDER_FANOUT", std::to_string(kFanout));
  set_env("LARDER_TRANSPORT", "ucx");
  const std::uint64_t bytes = 64ull << 20;
  make_file("hot", bytes, 41);
  init();
  const auto direct = read_whole(data("hot"));
  EXPECT_EQ(read_in_pieces(data("hot"), 1 << 20), direct) << "rank " << rank();
  const auto stats = finalize();
  const std::uint64_t nodes = static_cast<std::uint64_t>(size()) / kNodeSize;
  const std::uint64_t chunks = bytes / chunk_size;
  EXPECT_EQ(stats["pfs"]["read_ops"], chunks);
  EXPECT_EQ(stats["pfs"]["bytes_read"], bytes);
  EXPECT_EQ(stats["fallbacks"], 0);
  // Every other node copied each chunk once, and nothing else crossed.
  EXPECT_EQ(stats["node"]["copies"], (nodes - 1) * chunks);
  EXPECT_EQ(stats["transport"]["bytes"], (nodes - 1) * bytes);
  // The tree: no rank served more than F nodes' copies of the file.
  EXPECT_LE(u64(stats["skew"]["bytes_served"]["max"]), kFanout * bytes)
      << "rank " << stats["skew"]["bytes_served"]["max_rank"];
  EXPECT_EQ(u64(stats["skew"]["bytes_served"]["total"]), (nodes - 1) * bytes);
}

TEST_F(ScaleTest, AJobOpeningOneFileAtOnceCostsDirectoryOperationsPerNodeNotPerRank) {
  // Two shapes of the same 16 ranks: 8 nodes of 2, then 4 nodes of 4. The directory operations
  // (and the waits) follow the nodes.
  for (const int node_size : {2, 4}) {
    SCOPED_TRACE("nodes of " + std::to_string(node_size));
    set_env("LARDER_NODE_SIZE", std::to_string(node_size));
    set_env("LARDER_TRANSPORT", "ucx");
    const std::string name = "once" + std::to_string(node_size);
    make_file(name, 5000, 50 + static_cast<std::uint64_t>(node_size));
    init();
    const auto direct = read_whole(data(name));
    barrier();
    EXPECT_EQ(read_in_pieces(data(name), 1 << 20), direct);
    const auto stats = finalize();
    const std::uint64_t nodes = static_cast<std::uint64_t>(size() / node_size);
    EXPECT_EQ(stats["pfs"]["read_ops"], 1);
    EXPECT_EQ(stats["pfs"]["stat_ops"], 1);
    // Per node: one batched lookup of the path and its data (two keys) by the node's resolver;
    // at 8 nodes and F = 8 nobody below the origin can be asked for a copy (no holder entries).
    EXPECT_LE(u64(stats["directory"]["ops"]), 2 * nodes);
    EXPECT_LE(u64(stats["waits"]), 2 * nodes);
    EXPECT_EQ(stats["node"]["copies"], nodes - 1);
    // The home of both keys (a path and its chunk 0 share it) received those lookups and the
    // loader's two publications.
    EXPECT_LE(u64(stats["skew"]["directory_ops_received"]["max"]), 2 * nodes + 2);
  }
}

TEST_F(ScaleTest, WithNodeGroupsAKeysHomeSeesOneLookupPerGroupAndACopyStaysInItsGroup) {
  // 8 nodes of 2 ranks in 4 groups of 2 nodes (LARDER_GROUP=2; by default groups start at 64
  // nodes): each key's home sees one lookup per group (its representative), each group's
  // entry one per node of the group; a hot file still crosses the network once per node, and
  // no rank serves more than F copies (the tree of representatives, then each group's tree).
  constexpr std::uint64_t kGroup = 2;
  constexpr std::uint64_t kFanout = 2;
  chunk_size = 4 << 20;
  set_env("LARDER_NODE_SIZE", std::to_string(kNodeSize));
  set_env("LARDER_GROUP", std::to_string(kGroup));
  set_env("LARDER_FANOUT", std::to_string(kFanout));
  set_env("LARDER_TRANSPORT", "ucx");
  const std::uint64_t bytes = 32ull << 20;
  make_file("grouped", bytes, 61);
  init();
  const auto direct = read_whole(data("grouped"));
  barrier();
  EXPECT_EQ(read_in_pieces(data("grouped"), 1 << 20), direct) << "rank " << rank();
  const auto stats = finalize();
  const std::uint64_t nodes = static_cast<std::uint64_t>(size()) / kNodeSize;
  const std::uint64_t groups = nodes / kGroup;
  const std::uint64_t chunks = bytes / chunk_size;
  EXPECT_EQ(stats["pfs"]["read_ops"], chunks);
  EXPECT_EQ(stats["fallbacks"], 0);
  EXPECT_EQ(stats["node"]["copies"], (nodes - 1) * chunks);
  EXPECT_EQ(stats["transport"]["bytes"], (nodes - 1) * bytes);
  EXPECT_LE(u64(stats["skew"]["bytes_served"]["max"]), kFanout * bytes)
      << "rank " << stats["skew"]["bytes_served"]["max_rank"];
  // The nodes that were not their group's representative got the group's answers: one per key
  // (the path, and each chunk) per such node.
  EXPECT_EQ(u64(stats["group"]["answers"]), (nodes - groups) * (chunks + 1));
  // No rank receives the lookups of every node: at most one per group (at a key's home) plus
  // one per node of a group (at a group entry's home), per key, with its publications and the
  // holder entries of the trees.
  const std::uint64_t keys = chunks + 1;
  EXPECT_LE(u64(stats["skew"]["directory_ops_received"]["max"]), keys * (groups + kGroup + 4));
}

// A file system that holds reads of one file (the first reader's load) until every other rank
// has written its "done" mark, and says when it starts holding.
class HoldingFileSystem final : public FileSystem {
 public:
  HoldingFileSystem(std::unique_ptr<FileSystem> real, std::string held, std::string marks,
                    int others)
      : real_(std::move(real)), held_(std::move(held)), marks_(std::move(marks)), others_(others) {}

  Result<ResolvedPath> resolve(const std::string& path) override { return real_->resolve(path); }
  Result<FileMeta> lstat(const std::string& path) override { return real_->lstat(path); }
  Result<std::vector<std::byte>> list(const std::string& path) override {
    return real_->list(path);
  }
  Result<std::size_t> read(const std::string& path, std::uint64_t version, std::uint64_t offset,
                           std::span<std::byte> into) override {
    if (path == held_) {
      touch(marks_ + "/holding");
      // A condition, not a timing: every other rank has finished reading without this one.
      // (The bound only keeps a broken run from hanging the suite.)
      for (int i = 0; i < 600'000 && !all_done(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    return real_->read(path, version, offset, into);
  }

 private:
  static void touch(const std::string& p) {
    const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) ::close(fd);
  }
  bool all_done() const {
    for (int r = 1; r <= others_; ++r) {
      if (!std::filesystem::exists(marks_ + "/done." + std::to_string(r))) return false;
    }
    return true;
  }

  std::unique_ptr<FileSystem> real_;
  std::string held_;
  std::string marks_;
  int others_;
};

TEST_F(ScaleTest, AStalledFirstReaderSendsTheOthersToThePfsWithinTheTimeout) {
  // Rank 0 claims the file's data and its load stalls (the PFS holds it) until every other rank
  // has read the file: they can only finish by giving up on rank 0 after LARDER_TIMEOUT, rank 1
  // on its node table (rank 0 resolves for their node), the others on the directory.
  set_env("LARDER_NODE_SIZE", std::to_string(kNodeSize));
  set_env("LARDER_TRANSPORT", "ucx");
  set_env("LARDER_TIMEOUT", "2");
  make_file("stalled", 3000, 60);
  const std::string marks = data("marks");
  if (rank() == 0) std::filesystem::create_directory(marks);
  barrier();
  Seams seams;
  if (rank() == 0) {
    const std::string held = data("stalled");
    const int others = size() - 1;
    seams.file_system = [held, marks, others](std::unique_ptr<FileSystem> real) {
      return std::make_unique<HoldingFileSystem>(std::move(real), held, marks, others);
    };
  }
  const ScopedSeams faults(seams);
  init();
  const auto direct = read_whole(data("stalled"));
  if (rank() == 0) {
    EXPECT_EQ(read_in_pieces(data("stalled"), 1 << 20), direct);
  } else {
    while (!std::filesystem::exists(marks + "/holding")) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // rank 0 holds its claim
    }
    EXPECT_EQ(read_in_pieces(data("stalled"), 1 << 20), direct) << "rank " << rank();
    const std::string done = marks + "/done." + std::to_string(rank());
    const int fd = ::open(done.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  const auto stats = finalize();
  // The other nodes' resolvers waited on the directory for rank 0, then read the PFS (as did
  // their node peers); rank 1 gave up on its node table and opened the file itself.
  const auto ranks = static_cast<std::uint64_t>(size());
  EXPECT_GE(u64(stats["waits"]), ranks / kNodeSize - 1);
  EXPECT_GE(u64(stats["fallbacks"]), ranks - 2);
}

}  // namespace
}  // namespace larder::testing
