#include "runtime/tier/arena.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

TEST(ArenaTest, AllocatesAlignedRangesWithinTheBudget) {
  testing::TempDir dir;
  auto arena = Arena::create(dir / "a.mem", 64 << 10);
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  auto a = (*arena)->allocate(100);
  auto b = (*arena)->allocate(8192);
  auto c = (*arena)->allocate(10);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, 0u);
  EXPECT_EQ(*b % 4096, 0u);  // page-sized pieces are page aligned (mmap-able later)
  EXPECT_EQ(*c % 64, 0u);
  EXPECT_GE(*b, 100u);
  EXPECT_GE(*c, *b + 8192);
  auto too_big = (*arena)->allocate(1 << 20);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), Errc::kNoSpace);
}

TEST(ArenaTest, FileIsPrivateAndPeersSeeTheBytes) {
  testing::TempDir dir;
  auto owner = Arena::create(dir / "a.mem", 16 << 10);
  ASSERT_TRUE(owner.ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "a.mem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto off = (*owner)->allocate(5);
  ASSERT_TRUE(off.ok());
  std::memcpy((*owner)->data() + *off, "hello", 5);
  auto peer = Arena::attach(dir / "a.mem");
  ASSERT_TRUE(peer.ok()) << peer.status().to_string();
  EXPECT_FALSE((*peer)->writable());
  EXPECT_EQ(std::memcmp((*peer)->data() + *off, "hello", 5), 0);
  EXPECT_FALSE((*peer)->allocate(5).ok());
}

TEST(ArenaTest, PagesResidentSaysWhetherTheKernelWouldReadTheDevice) {
  // A disk-tier chunk is checked when its pages are not in memory (Cache::disk_checked). A file
  // written, synced and dropped from the page cache is not; once read through, it is.
  testing::TempDir dir;
  constexpr std::size_t kBytes = 9 << 20;  // more than one mincore window (4 MiB)
  const std::string path = dir / "device";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  std::vector<char> bytes(kBytes, 'x');
  ASSERT_EQ(::pwrite(fd.get(), bytes.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  ASSERT_EQ(::fdatasync(fd.get()), 0);
  ASSERT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  void* p = ::mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  const auto* base = static_cast<const std::byte*>(p);
  // Not page-aligned, ending inside a page: the pages under it are asked about.
  const std::span<const std::byte> chunk(base + 100, kBytes - 200);
  EXPECT_FALSE(pages_resident(chunk));
  volatile std::byte sink{};
  for (std::size_t i = 0; i < kBytes; i += 4096) sink = sink ^ base[i];
  EXPECT_TRUE(pages_resident(chunk));
  EXPECT_TRUE(pages_resident({}));
  ::munmap(p, kBytes);
}

TEST(ArenaTest, CreateRefusesAnExistingFile) {
  testing::TempDir dir;
  ASSERT_TRUE(Arena::create(dir / "a.mem", 4096).ok());
  auto again = Arena::create(dir / "a.mem", 4096);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().native_code(), EEXIST);
}

TEST(ArenaTest, AttachRefusesAFileOthersCanRead) {
  testing::TempDir dir;
  ASSERT_TRUE(Arena::create(dir / "a.mem", 4096).ok());
  ASSERT_EQ(::chmod((dir / "a.mem").c_str(), 0644), 0);
  auto peer = Arena::attach(dir / "a.mem");
  ASSERT_FALSE(peer.ok());
  EXPECT_EQ(peer.status().native_code(), EPERM);
}

long minor_faults_of_this_thread() {
  rusage usage{};
  EXPECT_EQ(::getrusage(RUSAGE_THREAD, &usage), 0);
  return usage.ru_minflt;
}

// A copy into a fresh range (a progress thread receiving another node's chunk, a PFS read) takes
// no page fault per 4 KiB: allocate() has already mapped the range in this process.
TEST(ArenaTest, AnAllocatedRangeIsWrittenWithoutPageFaults) {
  testing::TempDir dir;
  auto arena = Arena::create(dir / "a.mem", 8 << 20);
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  void* probe = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool populate = ::madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
  ::munmap(probe, 4096);
  if (!populate) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14)";
  constexpr std::size_t kBytes = 4 << 20;  // 1,024 pages
  // The bytes go in by a raw pread(2) from a file, as a PFS read does: no sanitizer intercepts
  // it, so the faults counted are the arena's own, not those of ASan's shadow of the range.
  const std::string source = dir / "pattern";
  {
    const std::string pattern(kBytes, '\x5a');
    UniqueFd out(::open(source.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600));
    ASSERT_TRUE(out.valid());
    ASSERT_EQ(::write(out.get(), pattern.data(), pattern.size()),
              static_cast<ssize_t>(pattern.size()));
  }
  UniqueFd in(::open(source.c_str(), O_RDONLY));
  ASSERT_TRUE(in.valid());
  auto off = (*arena)->allocate(kBytes);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  const long before = minor_faults_of_this_thread();
  const long n = ::syscall(SYS_pread64, in.get(), (*arena)->data() + *off, kBytes, 0);
  const long faults = minor_faults_of_this_thread() - before;
  ASSERT_EQ(n, static_cast<long>(kBytes));
  EXPECT_LT(faults, 16) << "faults while reading into 1,024 freshly allocated pages";
  EXPECT_EQ(static_cast<unsigned char>((*arena)->data()[*off + kBytes - 1]), 0x5a);
}

TEST(ArenaTest, AFullFileSystemIsAFailedAllocationNotACrash) {
  testing::TempDir dir;
  const std::string mnt = dir / "tiny";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0700), 0);
  if (::mount("larder-test", mnt.c_str(), "tmpfs", 0, "size=256k") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root): " << std::strerror(errno);
  }
  {
    auto arena = Arena::create(mnt + "/a.mem", 4 << 20);  // budget larger than the file system
    ASSERT_TRUE(arena.ok()) << arena.status().to_string();
    int ok = 0;
    Status last;
    for (int i = 0; i < 64; ++i) {
      auto off = (*arena)->allocate(64 << 10);
      if (!off.ok()) {
        last = off.status();
        break;
      }
      std::memset((*arena)->data() + *off, 0xab, 64 << 10);  // would SIGBUS if not backed
      ++ok;
    }
    EXPECT_GE(ok, 1);
    EXPECT_LT(ok, 64);
    EXPECT_EQ(last.code(), Errc::kNoSpace);
    EXPECT_EQ(last.native_code(), ENOSPC);
  }
  ASSERT_EQ(::umount(mnt.c_str()), 0);
}

}  // namespace
}  // namespace larder
