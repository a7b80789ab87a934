// The C API (liblarder.so) in one process: POSIX behaviour, errors and lifecycle.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <larder/larder.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <larder/larder.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/data_files.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("LARDER_PREFIX", data.path().c_str(), 1);
    ::setenv("LARDER_CHUNK", "64K", 1);
    ::setenv("LARDER_MEM", "64M", 1);
    ::setenv("LARDER_STATS", (scratch / "stats.json").c_str(), 1);
    ::setenv("LARDER_SHM_DIR", shm.path().c_str(), 1);
    ::unsetenv("LARDER_LOG");
  }
  void TearDown() override {
    if (larder_initialized()) {
      EXPECT_EQ(larder_finalize(), LARDER_OK);
    }
    for (const char* v : {"LARDER_PREFIX", "LARDER_CHUNK", "LARDER_MEM", "LARDER_STATS",
                          "LARDER_TRANSPORT", "LARDER_SHM_DIR", "LARDER_LIST_AHEAD"}) {
      ::unsetenv(v);
    }
  }
  void init() { ASSERT_EQ(larder_init(MPI_COMM_NULL), LARDER_OK) << larder_last_error(); }

  testing::TempDir data{"larder-api-data"};
  testing::TempDir scratch{"larder-api-scratch"};
  testing::TempDir shm{"larder-api-shm"};
};

TEST_F(ApiTest, OpenReadSeekStatBehaveLikePosix) {
  const std::string p = data / "f";
  testing::write_data_file(p, 300000, 5);
  init();
  const int fd = larder_open(p.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const int ref = ::open(p.c_str(), O_RDONLY);
  ASSERT_GE(ref, 0);
  std::vector<char> a(100000), b(100000);
  for (int i = 0; i < 4; ++i) {  // sequential reads through EOF
    const ssize_t na = larder_read(fd, a.data(), a.size());
    const ssize_t nb = ::read(ref, b.data(), b.size());
    ASSERT_EQ(na, nb);
    ASSERT_EQ(0, std::memcmp(a.data(), b.data(), static_cast<size_t>(na)));
  }
  EXPECT_EQ(larder_lseek(fd, -10, SEEK_END), ::lseek(ref, -10, SEEK_END));
  EXPECT_EQ(larder_read(fd, a.data(), 100), ::read(ref, b.data(), 100));
  EXPECT_EQ(larder_lseek(fd, 5, SEEK_SET), 5);
  EXPECT_EQ(larder_lseek(fd, 7, SEEK_CUR), 12);
  EXPECT_EQ(larder_lseek(fd, -100, SEEK_SET), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(larder_pread(fd, a.data(), 1000, 299500), ::pread(ref, b.data(), 1000, 299500));
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), 500));
  EXPECT_EQ(larder_pread(fd, a.data(), 10, -1), -1);
  EXPECT_EQ(errno, EINVAL);
  struct stat sa {
  }, sb{};
  ASSERT_EQ(larder_fstat(fd, &sa), 0);
  ASSERT_EQ(::fstat(ref, &sb), 0);
  EXPECT_EQ(sa.st_size, sb.st_size);
  EXPECT_EQ(sa.st_mode, sb.st_mode);
  EXPECT_EQ(sa.st_ino, sb.st_ino);
  EXPECT_EQ(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
  EXPECT_EQ(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
  ASSERT_EQ(larder_stat(p.c_str(), &sa), 0);
  EXPECT_EQ(sa.st_size, sb.st_size);
  EXPECT_EQ(larder_close(fd), 0);
  EXPECT_EQ(larder_close(fd), -1);
  EXPECT_EQ(errno, EBADF);
  ::close(ref);
  larder_stats_t st{};
  ASSERT_EQ(larder_stats_get(&st), LARDER_OK);
  EXPECT_EQ(st.pfs_read_ops, 5u);  // 300000 bytes in 64 KiB chunks, each read once
  EXPECT_EQ(st.pfs_stat_ops, 1u);
}

// Runs `fn` (returning an errno) the same way directly and through Larder.
struct ErrnoPair {
  int direct;
  int larder;
};

TEST_F(ApiTest, ErrorsAreTheFileSystemsOwn) {
  const std::string file = data / "file";
  testing::write_data_file(file, 10, 1);
  ASSERT_EQ(::mkdir((data / "dir").c_str(), 0755), 0);
  init();
  auto both_open = [](const std::string& p) {
    errno = 0;
    const int a = ::open(p.c_str(), O_RDONLY);
    const int ea = errno;
    errno = 0;
    const int b = larder_open(p.c_str(), O_RDONLY);
    const int eb = errno;
    if (a >= 0) ::close(a);
    if (b >= 0) larder_close(b);
    return ErrnoPair{a < 0 ? ea : 0, b < 0 ? eb : 0};
  };
  for (const std::string& p : {data / "missing", file + "/below", data / "missing/deeper"}) {
    const ErrnoPair e = both_open(p);
    EXPECT_NE(e.direct, 0) << p;
    EXPECT_EQ(e.larder, e.direct) << p;
    struct stat st {};
    errno = 0;
    const int ra = ::stat(p.c_str(), &st);
    const int ea = errno;
    errno = 0;
    EXPECT_EQ(larder_stat(p.c_str(), &st), ra);
    EXPECT_EQ(errno, ea);
  }
  // A directory opens, and reading it fails with EISDIR, as with the kernel.
  const int dfd = larder_open((data / "dir").c_str(), O_RDONLY);
  ASSERT_GE(dfd, 0);
  char c;
  EXPECT_EQ(larder_read(dfd, &c, 1), -1);
  EXPECT_EQ(errno, EISDIR);
  EXPECT_EQ(larder_close(dfd), 0);
}

TEST_F(ApiTest, PermissionDeniedIsReportedAsEacces) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  const std::string secret = data / "secret";
  testing::write_data_file(secret, 10, 1);
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(data.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(shm.path().c_str(), 01777),
            0);  // the unprivileged user makes its own dir there
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    ::setenv("LARDER_STATS", "", 1);
    errno = 0;
    const int direct = ::open(secret.c_str(), O_RDONLY);
    const int direct_errno = errno;
    if (larder_init(MPI_COMM_NULL) != LARDER_OK) ::_exit(11);
    errno = 0;
    const int cached = larder_open(secret.c_str(), O_RDONLY);
    const int cached_errno = errno;
    larder_finalize();
    ::_exit(direct == -1 && cached == -1 && direct_errno == EACCES && cached_errno == EACCES ? 0
                                                                                             : 12);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(ApiTest, PathsOutsideThePrefixPassThroughUntouched) {
  testing::TempDir other("larder-api-other");
  const std::string p = other / "f";
  testing::write_data_file(p, 5000, 2);
  init();
  EXPECT_EQ(larder_is_managed(p.c_str()), 0);
  const int fd = larder_open(p.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> buf(5000);
  EXPECT_EQ(larder_pread(fd, buf.data(), buf.size(), 0), 5000);
  EXPECT_EQ(buf, testing::read_whole(p));
  EXPECT_EQ(larder_close(fd), 0);
  larder_stats_t st{};
  ASSERT_EQ(larder_stats_get(&st), LARDER_OK);
  EXPECT_EQ(st.pfs_read_ops, 0u);
  EXPECT_EQ(st.pfs_stat_ops, 0u);
}

TEST_F(ApiTest, WritableOpensBypassTheCache) {
  const std::string p = data / "w";
  testing::write_data_file(p, 100, 3);
  init();
  const int fd = larder_open(p.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(larder_pread(fd, nullptr, 0, 0), 0);
  EXPECT_EQ(larder_close(fd), 0);
  larder_stats_t st{};
  ASSERT_EQ(larder_stats_get(&st), LARDER_OK);
  EXPECT_EQ(st.pfs_stat_ops, 0u);
}

TEST_F(ApiTest, LifecycleErrorsAreReported) {
  EXPECT_EQ(larder_finalize(), LARDER_ERR_NOT_INITIALIZED);
  init();
  EXPECT_EQ(larder_init(MPI_COMM_NULL), LARDER_ERR_ALREADY_INITIALIZED);
  EXPECT_EQ(larder_initialized(), 1);
  EXPECT_EQ(larder_finalize(), LARDER_OK);
  EXPECT_EQ(larder_initialized(), 0);
}

TEST_F(ApiTest, BadConfigurationIsRejectedWithOneClearMessage) {
  ::setenv("LARDER_TRANSPORT", "carrier-pigeon", 1);
  EXPECT_EQ(larder_init(MPI_COMM_NULL), LARDER_ERR_INVALID_ARGUMENT);
  const std::string msg = larder_last_error();
  EXPECT_NE(msg.find("LARDER_TRANSPORT"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ucx or mpi"), std::string::npos) << msg;
  EXPECT_EQ(larder_initialized(), 0);
}

TEST_F(ApiTest, FinalizeWritesTheStatsJsonAndRemovesNodeFiles) {
  const std::string p = data / "f";
  testing::write_data_file(p, 200000, 4);
  init();
  {
    File f(p);
    std::vector<std::byte> buf(f.size());
    EXPECT_EQ(f.read_at(buf, 0), buf.size());
    EXPECT_EQ(f.read_at(buf, 0), buf.size());
    EXPECT_EQ(buf, testing::read_whole(p));
  }
  ASSERT_EQ(larder_finalize(), LARDER_OK);
  std::ifstream in(scratch / "stats.json");
  ASSERT_TRUE(in.good());
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["ranks"], 1);
  EXPECT_EQ(j["pfs"]["bytes_read"], 200000);
  EXPECT_EQ(j["pfs"]["read_ops"], 4);
  EXPECT_EQ(j["misses"], 4);
  EXPECT_EQ(j["hits"]["self"], 4);
  for (const char* key : {"stat_ops"}) EXPECT_TRUE(j["pfs"].contains(key));
  for (const char* key : {"node", "remote"}) EXPECT_EQ(j["hits"][key], 0);
  EXPECT_EQ(j["fallbacks"], 0);
  EXPECT_EQ(j["transport"]["bytes"], 0);
  // Nothing of the job is left in the shared-memory directory.
  const std::string base = shm / ("larder-" + std::to_string(::geteuid()));
  struct stat st {};
  if (::stat(base.c_str(), &st) == 0) {
    for (const auto& entry : std::filesystem::directory_iterator(base)) {
      ADD_FAILURE() << "left behind: " << entry.path();
    }
  }
}

TEST_F(ApiTest, CppFileReportsErrorsAsSystemErrors) {
  init();
  std::error_code ec;
  File f;
  f.open(data / "missing", ec);
  EXPECT_EQ(ec, std::errc::no_such_file_or_directory);
  EXPECT_THROW(File(data / "missing"), std::system_error);
}

TEST_F(ApiTest, StageInOneProcessLoadsEveryChunkThenReadsAreHits) {
  std::filesystem::create_directories(data / "d/e");
  testing::write_data_file(data / "d/x", 200000, 6);   // 4 chunks of 64K
  testing::write_data_file(data / "d/e/y", 65536, 7);  // 1 chunk
  ::setenv("LARDER_LIST_AHEAD", "0", 1);  // stage's own loading (list-ahead: cache_test)
  init();
  larder_stage_result_t staged{};
  const std::string root = data / "d";
  const char* roots[] = {root.c_str()};
  ASSERT_EQ(larder_stage(roots, 1, &staged), LARDER_OK) << larder_last_error();
  EXPECT_EQ(staged.files, 2u);
  EXPECT_EQ(staged.bytes, 200000u + 65536u);
  EXPECT_EQ(staged.chunks, 5u);
  EXPECT_EQ(staged.not_cached, 0u);
  EXPECT_EQ(staged.skipped, 0u);
  const larder_stats_t loaded = Session::stats();
  EXPECT_EQ(loaded.misses, 5u);
  EXPECT_EQ(loaded.pfs_read_ops, 5u);
  for (const char* name : {"d/x", "d/e/y"}) {
    File f(data / name);
    std::vector<std::byte> got(f.size());
    EXPECT_EQ(f.read_at(got, 0), got.size());
    EXPECT_EQ(got, testing::read_whole(data / name)) << name;
  }
  EXPECT_EQ(Session::stats().pfs_read_ops, 5u);  // the reads were all hits
}

// Threads of one process opening, reading and closing the same files at once through the C API:
// the descriptor table, read leases and the cache shared by every thread; each chunk is read
// from the file system once.
TEST_F(ApiTest, ThreadsReadTheSameFilesAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kFiles = 3;
  std::vector<std::string> paths;
  std::vector<std::vector<std::byte>> want;
  for (int i = 0; i < kFiles; ++i) {
    paths.push_back(data / ("t" + std::to_string(i)));
    testing::write_data_file(paths.back(), 3 * 65536 + 777 * static_cast<std::uint64_t>(i + 1),
                             20 + static_cast<std::uint64_t>(i));
    want.push_back(testing::read_whole(paths.back()));
  }
  init();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (int k = 0; k < kFiles; ++k) {
          const int i = (k + t) % kFiles;
          const int fd = larder_open(paths[static_cast<std::size_t>(i)].c_str(), O_RDONLY);
          if (fd < 0) {
            ++wrong;
            continue;
          }
          const std::vector<std::byte>& w = want[static_cast<std::size_t>(i)];
          std::vector<std::byte> got(w.size());
          const std::size_t piece = 20000 + 1000 * static_cast<std::size_t>(t);
          for (std::size_t off = 0; off < got.size(); off += piece) {
            const std::size_t n = std::min(piece, got.size() - off);
            if (larder_pread(fd, got.data() + off, n, static_cast<off_t>(off)) !=
                static_cast<ssize_t>(n)) {
              ++wrong;
            }
          }
          if (got != w) ++wrong;
          if (larder_close(fd) != 0) ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  larder_stats_t st{};
  ASSERT_EQ(larder_stats_get(&st), LARDER_OK);
  EXPECT_EQ(st.pfs_read_ops, 4u * kFiles);  // 4 chunks of 64 KiB per file, each read once
  EXPECT_EQ(st.fallbacks, 0u);
}

}  // namespace
}  // namespace larder
