// The preload's cheap "surely not managed" test (runtime/preload/fast_path.hpp) never says
// "outside" for a path that lexical normalisation puts under a prefix: checked against
// path::lexically_normal and path::is_within on hand-picked and on random paths.
#include "runtime/preload/fast_path.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/path/path.hpp"

namespace larder::preload {
namespace {

bool within_any(const std::string& p, const std::vector<std::string>& prefixes) {
  const std::string clean = path::lexically_normal(p);
  for (const std::string& prefix : prefixes) {
    if (path::is_within(clean, prefix)) return true;
  }
  return false;
}

bool outside(const std::string& p, const std::vector<std::string>& prefixes) {
  return surely_outside(p.c_str(), prefixes);
}

TEST(FastPathTest, AnswersTheCommonCasesWithoutTheFullCheck) {
  const std::vector<std::string> prefixes = {"/lus/data/train"};
  EXPECT_TRUE(outside("/usr/lib/python3/dist-packages/numpy/__init__.py", prefixes));
  EXPECT_TRUE(outside("/lus/data/val/x.npz", prefixes));
  EXPECT_TRUE(outside("/lus/data/trainer", prefixes));
  EXPECT_TRUE(outside("/lus/data", prefixes));
  EXPECT_TRUE(outside("/lus/data/.hidden", prefixes));
  EXPECT_TRUE(outside("/lus/data/train..x/y", {"/lus/data/trainx"}));
  EXPECT_FALSE(outside("/lus/data/train", prefixes));
  EXPECT_FALSE(outside("/lus/data/train/", prefixes));
  EXPECT_FALSE(outside("/lus/data/train/a/b.npz", prefixes));
}

TEST(FastPathTest, LeavesPathsThatNormaliseIntoAPrefixToTheFullCheck) {
  const std::vector<std::string> prefixes = {"/lus/data/train"};
  for (const char* p : {"/lus//data/train/x", "/lus/./data/train/x", "/usr/../lus/data/train",
                        "/lus/data/val/../train/x", "/lus/data/./train", "/lus/data//train",
                        "/lus/data/train/.", "/.."}) {
    EXPECT_FALSE(outside(p, prefixes)) << p;
  }
  // A prefix component that starts with a dot, and a "." component just before it.
  EXPECT_FALSE(outside("/x/./.y/z", {"/x/.y"}));
  EXPECT_FALSE(outside("/x/../x/..y/z", {"/x/..y"}));  // ".." starting 3 before the difference
  EXPECT_FALSE(outside("/anything", {"/"}));
}

TEST(FastPathTest, NeverCallsAPathUnderAPrefixOutsideOnRandomPaths) {
  const std::vector<std::vector<std::string>> prefix_sets = {
      {"/a"}, {"/a/b"}, {"/a/.b"}, {"/a/..b", "/b.."}, {"/ab/a", "/b"}, {"/a/b/a.b/ab"}};
  const std::string alphabet = "//..ab";
  std::mt19937 rng(17);
  int outside_count = 0;
  for (int i = 0; i < 200000; ++i) {
    const auto& prefixes = prefix_sets[static_cast<std::size_t>(i) % prefix_sets.size()];
    std::string p = "/";
    const int len = static_cast<int>(rng() % 14);
    for (int j = 0; j < len; ++j) p.push_back(alphabet[rng() % alphabet.size()]);
    if (outside(p, prefixes)) {
      ++outside_count;
      ASSERT_FALSE(within_any(p, prefixes)) << p << " under " << prefixes.front();
    }
  }
  EXPECT_GT(outside_count, 10000);  // and it does answer most of them
}

}  // namespace
}  // namespace larder::preload
