#include "runtime/common/units.hpp"

#include <gtest/gtest.h>

namespace larder {
namespace {

TEST(UnitsTest, ParsesPlainAndSuffixedSizes) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("4KB"), 4096u);
  EXPECT_EQ(parse_size("3M"), 3u << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_size("12B"), 12u);
}

TEST(UnitsTest, RejectsGarbageAndOverflow) {
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("G"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("1.5G"));
  EXPECT_FALSE(parse_size("4X"));
  EXPECT_FALSE(parse_size("4Kx"));
  EXPECT_FALSE(parse_size("99999999999T"));
  EXPECT_FALSE(parse_size("18446744073709551616"));
}

TEST(UnitsTest, FormatsForHumans) {
  EXPECT_EQ(format_size(512), "512 B");
  EXPECT_EQ(format_size(4096), "4.0 KiB");
  EXPECT_EQ(format_size(3u << 20), "3.0 MiB");
}

}  // namespace
}  // namespace larder
