#include "runtime/stats/stats.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

TEST(StatsTest, JsonHasTheDocumentedKeys) {
  Stats stats;
  stats.add(Counter::pfs_bytes_read, 100);
  stats.add(Counter::pfs_read_ops, 2);
  stats.add(Counter::hits_node, 3);
  StatsSnapshot snap = stats.snapshot();
  snap.ranks = 4;
  const auto j = nlohmann::json::parse(snap.to_json());
  EXPECT_EQ(j["ranks"], 4);
  EXPECT_EQ(j["pfs"]["bytes_read"], 100);
  EXPECT_EQ(j["pfs"]["read_ops"], 2);
  EXPECT_EQ(j["pfs"]["stat_ops"], 0);
  EXPECT_EQ(j["hits"]["self"], 0);
  EXPECT_EQ(j["hits"]["node"], 3);
  EXPECT_EQ(j["hits"]["remote"], 0);
  EXPECT_EQ(j["misses"], 0);
  EXPECT_EQ(j["fallbacks"], 0);
  EXPECT_EQ(j["transport"]["bytes"], 0);
  EXPECT_TRUE(j.contains("latency"));
}

TEST(StatsTest, SnapshotsAddUp) {
  Stats a, b;
  a.add(Counter::misses, 2);
  b.add(Counter::misses, 3);
  a.record_latency(1000);
  b.record_latency(5000);
  StatsSnapshot s = a.snapshot();
  s.add(b.snapshot());
  EXPECT_EQ(s.get(Counter::misses), 5u);
  EXPECT_EQ(s.latency_sum_ns, 6000u);
  EXPECT_EQ(s.latency_max_ns, 5000u);
}

TEST(StatsTest, LatencyQuantilesComeFromTheHistogram) {
  Stats s;
  for (int i = 0; i < 99; ++i) s.record_latency(1000);  // bucket [512, 1024)
  s.record_latency(1'000'000);
  const StatsSnapshot snap = s.snapshot();
  EXPECT_EQ(snap.latency_quantile_ns(0.5), 1024u);
  EXPECT_EQ(snap.latency_quantile_ns(0.999), 1u << 20);
}

TEST(StatsTest, WritesTheFileAtomically) {
  testing::TempDir dir;
  Stats s;
  s.add(Counter::misses, 7);
  ASSERT_TRUE(write_stats_file(dir / "stats.json", s.snapshot()).ok());
  std::ifstream in(dir / "stats.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["misses"], 7);
  EXPECT_FALSE(write_stats_file(dir / "missing/dir/stats.json", s.snapshot()).ok());
}

}  // namespace
}  // namespace larder
