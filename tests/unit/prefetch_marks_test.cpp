#include "runtime/node/prefetch_marks.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

TEST(PrefetchMarksTest, TheChunksNoReadUsedAreCountedWithTheirBytes) {
  testing::TempDir dir("larder-marks");
  const std::string path = PrefetchMarks::path_for(dir / "node-0.table");
  // Without `create`, a node that was never told an order has none.
  auto absent = PrefetchMarks::open(path, false);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), Errc::kNotFound);
  auto made = PrefetchMarks::open(path, true);
  ASSERT_TRUE(made.ok()) << made.status().message();
  // Another process of the node maps the same marks.
  auto other = PrefetchMarks::open(path, false);
  ASSERT_TRUE(other.ok()) << other.status().message();
  const std::uint32_t a = (*made)->add(100);
  const std::uint32_t b = (*made)->add(65536);
  const std::uint32_t c = (*other)->add(7);
  EXPECT_EQ(a, 1U);
  EXPECT_EQ(b, 2U);
  EXPECT_EQ(c, 3U);
  EXPECT_EQ((*other)->unused().bytes, 100U + 65536 + 7);
  (*other)->use(b);
  (*made)->use(b);                             // every epoch's read of it: counted used once
  (*made)->use(0);                             // no mark: nothing
  (*made)->use(PrefetchMarks::kCapacity + 1);  // never given: nothing
  const PrefetchMarks::Unused u = (*made)->unused();
  EXPECT_EQ(u.chunks, 2U);
  EXPECT_EQ(u.bytes, 107U);
  EXPECT_EQ((*made)->marked(), 3U);
}

TEST(PrefetchMarksTest, MarksFromManyThreadsAreDistinctAndStopAtTheCapacity) {
  testing::TempDir dir("larder-marks");
  auto marks = PrefetchMarks::open(dir / "m.marks", true);
  ASSERT_TRUE(marks.ok()) << marks.status().message();
  constexpr std::uint32_t kThreads = 4;
  constexpr std::uint32_t kEach = PrefetchMarks::kCapacity / kThreads + 10;
  std::vector<std::vector<std::uint32_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < kEach; ++i) got[t].push_back((*marks)->add(1));
    });
  }
  for (auto& th : threads) th.join();
  std::vector<bool> seen(PrefetchMarks::kCapacity + 1, false);
  std::uint32_t given = 0;
  std::uint32_t refused = 0;
  for (const auto& g : got) {
    for (std::uint32_t m : g) {
      if (m == 0) {
        ++refused;
        continue;
      }
      ASSERT_LE(m, PrefetchMarks::kCapacity);
      EXPECT_FALSE(seen[m]) << "mark " << m << " given twice";
      seen[m] = true;
      ++given;
    }
  }
  EXPECT_EQ(given, PrefetchMarks::kCapacity);
  EXPECT_EQ(refused, kThreads * kEach - PrefetchMarks::kCapacity);
  EXPECT_EQ((*marks)->marked(), PrefetchMarks::kCapacity);
  EXPECT_EQ((*marks)->unused().bytes, PrefetchMarks::kCapacity);
}

TEST(PrefetchMarksTest, AFileOfAnotherSizeIsRefused) {
  testing::TempDir dir("larder-marks");
  const std::string path = dir / "bad.marks";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ::close(fd);
  auto marks = PrefetchMarks::open(path, true);
  EXPECT_FALSE(marks.ok());
}

}  // namespace
}  // namespace larder
