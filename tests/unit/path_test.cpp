#include "runtime/path/path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

TEST(PathTest, LexicallyNormalCollapsesDotsAndSlashes) {
  EXPECT_EQ(path::lexically_normal("/"), "/");
  EXPECT_EQ(path::lexically_normal("//a//b/"), "/a/b");
  EXPECT_EQ(path::lexically_normal("/a/./b/."), "/a/b");
  EXPECT_EQ(path::lexically_normal("/a/b/../c"), "/a/c");
  EXPECT_EQ(path::lexically_normal("/../../a"), "/a");
  EXPECT_EQ(path::lexically_normal("/a/.."), "/");
  EXPECT_EQ(path::lexically_normal("/a/..b/c"), "/a/..b/c");
}

TEST(PathTest, AbsoluteFromJoinsRelativePaths) {
  EXPECT_EQ(path::absolute_from("/base/dir", "x/y"), "/base/dir/x/y");
  EXPECT_EQ(path::absolute_from("/base/dir", "../x"), "/base/x");
  EXPECT_EQ(path::absolute_from("/base/dir", "/abs"), "/abs");
}

TEST(PathTest, IsWithinMatchesWholeComponents) {
  EXPECT_TRUE(path::is_within("/lus/data", "/lus/data"));
  EXPECT_TRUE(path::is_within("/lus/data/x", "/lus/data"));
  EXPECT_FALSE(path::is_within("/lus/datax", "/lus/data"));
  EXPECT_FALSE(path::is_within("/lus", "/lus/data"));
  EXPECT_TRUE(path::is_within("/anything", "/"));
}

TEST(PathTest, RealPathResolvesSymlinks) {
  testing::TempDir dir;
  const std::string target = dir / "target";
  ASSERT_EQ(::mkdir(target.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(target.c_str(), (dir / "link").c_str()), 0);
  EXPECT_EQ(path::real_path_or_empty(dir / "link"), path::real_path_or_empty(target));
  EXPECT_EQ(path::real_path_or_empty(dir / "missing"), "");
}

}  // namespace
}  // namespace larder
