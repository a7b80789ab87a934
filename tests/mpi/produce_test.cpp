// Files produced during the job through the C API (LARDER_PRODUCE, docs/user-guide.md "Producing
// files"), every rank its own node: readers that open a file before it exists wait for it
// (registered with the path's home or with its producer, never polling) and read the producer's
// bytes; nobody producing means the file system's answer after LARDER_TIMEOUT; a second producer
// gets EEXIST, a writer of a published file EROFS. Run over both transports and both MPIs.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <larder/larder.h>

#include "tests/mpi/mpi_fixture.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {
namespace {

class ProduceTest : public MpiFixture {
 protected:
  void SetUp() override {
    MpiFixture::SetUp();
    out_ = data("out");
    if (rank() == 0) ::mkdir(out_.c_str(), 0755);
    set_env("LARDER_NODE_SIZE", "1");
    set_env("LARDER_PRODUCE", out_);
    set_env("LARDER_PRODUCE_MODE", "local");
    barrier();
  }

  // Produces `name` with the bytes of `reference` through the C API; the descriptor is
  // returned open (publish with larder_close).
  int produce_open(const std::string& name, const std::vector<std::byte>& bytes) {
    const int fd = larder_open((out_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    if (fd < 0) return fd;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      EXPECT_GT(n, 0);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    return fd;
  }

  std::vector<std::byte> read_through_larder(const std::string& path) {
    const int fd = larder_open(path.c_str(), O_RDONLY);
    if (fd < 0) return {};
    std::vector<std::byte> out;
    std::byte buf[50000];
    for (;;) {
      const ssize_t n = larder_read(fd, buf, sizeof buf);
      if (n <= 0) break;
      out.insert(out.end(), buf, buf + n);
    }
    larder_close(fd);
    return out;
  }

  int open_for_write_errno(const std::string& name) {
    const int fd = larder_open((out_ + "/" + name).c_str(), O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
      larder_close(fd);
      return 0;
    }
    return errno;
  }

  std::string out_;
};

TEST_F(ProduceTest, ReadersOnOtherNodesWaitAndGetTheProducersBytes) {
  // The reference bytes, outside the prefixes: 3 chunks and a piece.
  make_file("../reference", 3 * chunk_size + 777, 31);
  const std::vector<std::byte> want = read_whole(data("../reference"));
  init();
  barrier();
  if (rank() == 0) {
    const int fd = produce_open("sample.bin", want);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(larder_close(fd), 0);  // published
  } else {
    // Most readers open it before it is produced: they wait for it.
    EXPECT_EQ(read_through_larder(out_ + "/sample.bin"), want);
  }
  // Everyone, the producer too, reads it again: from the node (the producer's segment, or the
  // copy this node made), not over the network again.
  EXPECT_EQ(read_through_larder(out_ + "/sample.bin"), want);
  struct stat st {};
  ASSERT_EQ(larder_stat((out_ + "/sample.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(want.size()));
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~mask);
  const auto stats = finalize();
  EXPECT_EQ(stats["produce"]["files"], 1);
  EXPECT_EQ(stats["produce"]["pfs_bytes"], 0);  // local mode
  EXPECT_EQ(stats["pfs"]["read_ops"], 0);
  // Each other node fetched the file once, and a waiting node cost one wait, not a stream of
  // lookups: the path's home received a bounded number of directory operations.
  EXPECT_EQ(stats["transport"]["bytes"], (size() - 1) * want.size());
  EXPECT_LE(stats["produce"]["waits"].get<int>(), size() - 1);
  EXPECT_LE(stats["skew"]["directory_ops_received"]["max"].get<int>(), 20 * size());
}

TEST_F(ProduceTest, ReadersOnTheProducersNodeInAJobOfOneNodeGetItsBytes) {
  // One node: its ranks find chunks in the node table only (the directory is not asked for what
  // the table claims), so the producer publishes its chunks there too. The file is on no PFS
  // (local mode): a reader that missed them would read the empty name and fail.
  set_env("LARDER_NODE_SIZE", std::to_string(size()));
  make_file("../reference", 3 * chunk_size + 777, 37);
  const std::vector<std::byte> want = read_whole(data("../reference"));
  init();
  barrier();
  if (rank() == 0) {
    const int fd = produce_open("here.bin", want);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(larder_close(fd), 0);  // published
  } else {
    EXPECT_EQ(read_through_larder(out_ + "/here.bin"), want);
  }
  EXPECT_EQ(read_through_larder(out_ + "/here.bin"), want);
  const auto stats = finalize();
  EXPECT_EQ(stats["produce"]["files"], 1);
  EXPECT_EQ(stats["pfs"]["read_ops"], 0);
  EXPECT_EQ(stats["fallbacks"], 0);
  EXPECT_EQ(stats["transport"]["bytes"], 0);
  // Found on the node at once: no reader asked the PFS for it (4 opens before the producer
  // published its chunks in the node table) or asked the directory again after a failure.
  EXPECT_EQ(stats["pfs"]["open_ops"], 0);
  EXPECT_EQ(stats["directory"]["retries"], 0);
}

TEST_F(ProduceTest, NobodyProducingMeansTheFileSystemsAnswerAfterTheTimeout) {
  set_env("LARDER_TIMEOUT", "1");
  init();
  const int fd = larder_open((out_ + "/never.bin").c_str(), O_RDONLY);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(errno, ENOENT);
  struct stat st {};
  EXPECT_EQ(larder_stat((out_ + "/never.bin").c_str(), &st), -1);
  EXPECT_EQ(errno, ENOENT);
  // A directory under the produce prefix is the file system's at once.
  ASSERT_EQ(larder_stat(out_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  finalize();
}

TEST_F(ProduceTest, ProducedFilesAreWrittenOnce) {
  make_file("../reference", 1000, 32);
  const std::vector<std::byte> want = read_whole(data("../reference"));
  init();
  int fd = -1;
  if (rank() == 0) fd = produce_open("once.bin", want);
  barrier();
  if (rank() != 0) {
    EXPECT_EQ(open_for_write_errno("once.bin"), EEXIST);  // being produced
  }
  barrier();
  if (rank() == 0) {
    EXPECT_EQ(larder_close(fd), 0);
  }
  barrier();
  EXPECT_EQ(read_through_larder(out_ + "/once.bin"), want);
  EXPECT_EQ(open_for_write_errno("once.bin"), EROFS);  // published: read-only for the job
  const auto stats = finalize();
  EXPECT_EQ(stats["produce"]["files"], 1);
  EXPECT_EQ(stats["produce"]["refused"], size() - 1 + size());
}

}  // namespace
}  // namespace larder::testing
