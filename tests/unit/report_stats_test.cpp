// The job report's parts of the stats (runtime/stats): the timeline's bounded sampling and its
// merge onto one grid, the files' top lists and their merge over ranks, the load's spread.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/stats/file_top.hpp"
#include "runtime/stats/peer_load.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/stats/timeline.hpp"

namespace larder {
namespace {

SeriesValues app_bytes(std::uint64_t n) {
  SeriesValues v{};
  v[static_cast<std::size_t>(Series::app_bytes)] = n;
  return v;
}

std::uint64_t grid_total(const JobTimeline& grid, Series series) {
  std::uint64_t total = 0;
  for (int b = 0; b < kTimelineBuckets; ++b) {
    total +=
        grid.amounts[static_cast<std::size_t>(b) * kSeriesCount + static_cast<std::size_t>(series)];
  }
  return total;
}

TEST(TimelineTest, HoldsABoundedNumberOfSamplesWhateverTheJobsLength) {
  Timeline t(0);
  // A long job: a sample due every step, for far more steps than the timeline holds.
  std::int64_t now = 0;
  std::uint64_t bytes = 0;
  for (int i = 0; i < 100'000; ++i) {
    now += kFirstIntervalNs;
    bytes += 10;
    if (t.due(now)) t.sample(now, app_bytes(bytes));
  }
  t.sample(now, app_bytes(bytes), true);  // finalize's
  const auto samples = t.samples();
  EXPECT_LE(samples.size(), kTimelineSamples);
  EXPECT_GE(samples.size(), kTimelineSamples / 2);
  // Thinned, never losing counts: the newest sample holds the total.
  EXPECT_EQ(samples.back().values[static_cast<std::size_t>(Series::app_bytes)], bytes);
  for (std::size_t i = 1; i < samples.size(); ++i) {
    EXPECT_LT(samples[i - 1].unix_ns, samples[i].unix_ns);
  }
}

TEST(TimelineTest, SamplesAreNotDueBeforeTheInterval) {
  Timeline t(1000);
  EXPECT_FALSE(t.due(1000 + kFirstIntervalNs - 1));
  EXPECT_TRUE(t.due(1000 + kFirstIntervalNs));
  t.sample(1000 + kFirstIntervalNs, app_bytes(1));
  EXPECT_FALSE(t.due(1000 + kFirstIntervalNs + 1));
  // At finalize a sample is taken whenever asked.
  t.sample(1000 + kFirstIntervalNs + 1, app_bytes(2), true);
  EXPECT_EQ(t.samples().size(), 2u);
}

TEST(TimelineTest, TheGridGetsEachSamplesIncreaseInItsBucket) {
  JobTimeline grid = timeline_grid(0, kTimelineBuckets * 100);
  ASSERT_EQ(grid.bucket_ns, 100);
  const std::vector<TimelineSample> samples = {
      {50, app_bytes(5)}, {250, app_bytes(12)}, {251, app_bytes(12)}, {99'999, app_bytes(20)}};
  add_samples(samples, grid);
  auto at = [&](int bucket) {
    return grid.amounts[static_cast<std::size_t>(bucket) * kSeriesCount +
                        static_cast<std::size_t>(Series::app_bytes)];
  };
  EXPECT_EQ(at(0), 5u);
  EXPECT_EQ(at(2), 7u);
  EXPECT_EQ(at(kTimelineBuckets - 1), 8u);  // after the grid's end: its last bucket
  EXPECT_EQ(grid_total(grid, Series::app_bytes), 20u);
}

TEST(TimelineTest, RanksThatStartedLaterLandOnTheSharedGrid) {
  // Two ranks' samples on one grid from the earlier start: the sum is the job's.
  JobTimeline grid = timeline_grid(1'000, 1'000 + 12'000);
  add_samples(std::vector<TimelineSample>{{1'500, app_bytes(3)}, {12'000, app_bytes(9)}}, grid);
  add_samples(std::vector<TimelineSample>{{6'000, app_bytes(4)}}, grid);
  EXPECT_EQ(grid_total(grid, Series::app_bytes), 13u);
}

TEST(TimelineTest, StatsSampleOnApplicationReadsOnlyWithARecorder) {
  Recorder recorder;
  Stats stats;
  stats.record_app_read(100, std::chrono::steady_clock::now());
  stats.final_sample();
  EXPECT_TRUE(recorder.timeline().samples().empty());  // not attached: a worker's Stats
  stats.attach(&recorder);
  stats.final_sample();
  const auto samples = recorder.timeline().samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].values[static_cast<std::size_t>(Series::app_bytes)], 100u);
}

std::string path_of(const FileEntry& e) {
  return {e.path, ::strnlen(e.path, kFilePathBytes)};
}

TEST(FileTopTest, CountsEachFilesOperationsAndBytes) {
  FileTop top;
  top.pfs_op("/lus/a", 0);
  top.pfs_op("/lus/a", 4096);
  top.pfs_op("/lus/b", 100);
  const FileLists lists = top.lists();
  ASSERT_EQ(lists.by_bytes[0].used, 1u);
  EXPECT_EQ(path_of(lists.by_bytes[0]), "/lus/a");
  EXPECT_EQ(lists.by_bytes[0].bytes, 4096u);
  EXPECT_EQ(lists.by_bytes[0].ops, 2u);
  EXPECT_EQ(lists.by_bytes[0].over, 0u);
}

TEST(FileTopTest, TheHeavyFilesStayInTheListAmongManyLightOnes) {
  FileTop top;
  for (int round = 0; round < 5; ++round) {
    for (int f = 0; f < 1000; ++f) top.pfs_op("/lus/light/" + std::to_string(f), 10);
    top.pfs_op("/lus/heavy-1", 1'000'000);
    top.pfs_op("/lus/heavy-2", 500'000);
  }
  FileLists lists = top.lists();
  FileLists job{};
  merge_file_lists(job, lists);  // sorted by the merge, as the job's lists are
  EXPECT_EQ(path_of(job.by_bytes[0]), "/lus/heavy-1");
  EXPECT_GE(job.by_bytes[0].bytes, 5'000'000u);
  EXPECT_EQ(path_of(job.by_bytes[1]), "/lus/heavy-2");
  // A count is an upper bound: at most `over` above the truth.
  EXPECT_LE(job.by_bytes[0].bytes - job.by_bytes[0].over, 5'000'000u);
}

TEST(FileTopTest, ListsOfRanksMergeByPath) {
  FileTop a, b;
  a.pfs_op("/lus/x", 10);
  a.pfs_op("/lus/y", 30);
  b.pfs_op("/lus/x", 25);
  b.fallback("/lus/z", FallbackCause::kNoRoom);
  a.fallback("/lus/z", FallbackCause::kNoRoom);
  a.fallback("/lus/z", FallbackCause::kIntegrity);
  FileLists job = a.lists();
  merge_file_lists(job, b.lists());
  EXPECT_EQ(path_of(job.by_bytes[0]), "/lus/x");
  EXPECT_EQ(job.by_bytes[0].bytes, 35u);
  EXPECT_EQ(job.by_bytes[0].ops, 2u);
  EXPECT_EQ(path_of(job.by_bytes[1]), "/lus/y");
  int no_room = 0, integrity = 0;
  for (const FileEntry& e : job.fallbacks) {
    if (e.used == 0) continue;
    EXPECT_EQ(path_of(e), "/lus/z");
    if (e.cause == static_cast<std::uint32_t>(FallbackCause::kNoRoom))
      no_room += static_cast<int>(e.ops);
    if (e.cause == static_cast<std::uint32_t>(FallbackCause::kIntegrity))
      integrity += static_cast<int>(e.ops);
  }
  EXPECT_EQ(no_room, 2);
  EXPECT_EQ(integrity, 1);
}

TEST(FileTopTest, ALongPathKeepsItsEnd) {
  FileTop top;
  const std::string path = "/lus/" + std::string(400, 'd') + "/the-file.npz";
  top.pfs_op(path, 1);
  top.pfs_op(path, 1);
  const FileLists lists = top.lists();
  const std::string stored = path_of(lists.by_ops[0]);
  EXPECT_EQ(stored.size(), kFilePathBytes - 1);
  EXPECT_EQ(stored.substr(0, 3), "...");
  EXPECT_EQ(stored.substr(stored.size() - 13), "/the-file.npz");
  EXPECT_EQ(lists.by_ops[0].ops, 2u);  // the same file, matched by what was stored
}

TEST(FileTopTest, ConcurrentOperationsAreAllCounted) {
  FileTop top;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&top] {
      for (int i = 0; i < 1000; ++i) top.pfs_op("/lus/shared", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(top.lists().by_ops[0].ops, 4000u);
}

TEST(PeerLoadTest, HoldsOnlyTheRanksAskedWhateverTheJobsSize) {
  PeerLoad load(98304);
  load.directory_op(7);
  load.directory_op(7, 2);
  load.fetched(98303, 4096);
  load.fetched(7, 10);
  load.directory_op(98304);  // not a rank of the job: ignored
  load.fetched(-1, 5);
  ASSERT_EQ(load.size(), 2u);
  const auto entries = load.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].target, 7);
  EXPECT_EQ(entries[0].ops, 3u);
  EXPECT_EQ(entries[0].bytes, 10u);
  EXPECT_EQ(entries[1].target, 98303);
  EXPECT_EQ(entries[1].ops, 0u);
  EXPECT_EQ(entries[1].bytes, 4096u);
}

TEST(SpreadTest, NamesTheHotSpotItsNodeAndCountsRanksByPowerOfTwo) {
  const std::vector<std::uint64_t> per_rank = {0, 5, 5, 100, 6, 0};
  const std::vector<int> node_of = {0, 0, 1, 1, 2, 2};
  const Spread s = spread_of(per_rank, node_of);
  EXPECT_EQ(s.max, 100u);
  EXPECT_EQ(s.max_rank, 3);
  EXPECT_EQ(s.max_node, 1);
  EXPECT_EQ(s.total, 116u);
  EXPECT_EQ(s.median, 5u);
  EXPECT_EQ(s.ranks_log2[0], 2u);                 // the zeros
  EXPECT_EQ(s.ranks_log2[spread_bucket(5)], 3u);  // 5 and 6 in [4, 8)
  EXPECT_EQ(s.ranks_log2[spread_bucket(100)], 1u);
  ASSERT_EQ(s.top_ranks.size(), 6u);
  EXPECT_EQ(s.top_ranks[0].rank, 3);
  EXPECT_EQ(s.top_ranks[0].node, 1);
  EXPECT_EQ(s.top_ranks[1].rank, 4);  // 6, then the 5s by rank
  EXPECT_EQ(s.top_ranks[2].rank, 1);
  // Nodes: sums 5, 105, 6.
  EXPECT_EQ(s.node_max, 105u);
  EXPECT_EQ(s.node_max_node, 1);
  EXPECT_EQ(s.node_median, 6u);
}

TEST(SpreadTest, TheJsonCarriesTheReportsParts) {
  StatsSnapshot snap;
  Skew skew;
  skew.bytes_served = spread_of(std::vector<std::uint64_t>{1, 2}, std::vector<int>{0, 1});
  snap.skew = skew;
  JobDetail detail;
  detail.job.nodes = 2;
  detail.job.settings = {{"LARDER_MEM", "1G"}};
  detail.timeline = timeline_grid(0, 1000);
  FileTop top;
  top.pfs_op("/lus/f", 7);
  top.fallback("/lus/g", FallbackCause::kTransport);
  detail.files = top.lists();
  snap.detail = std::make_shared<JobDetail>(detail);
  const auto j = nlohmann::json::parse(snap.to_json());
  EXPECT_EQ(j["skew"]["bytes_served"]["max_node"], 1);
  EXPECT_EQ(j["skew"]["bytes_served"]["top_ranks"][0]["rank"], 1);
  EXPECT_EQ(j["skew"]["bytes_served"]["nodes"]["max"], 2);
  EXPECT_EQ(j["job"]["nodes"], 2);
  EXPECT_EQ(j["job"]["settings"]["LARDER_MEM"], "1G");
  EXPECT_EQ(j["timeline"]["buckets"], kTimelineBuckets);
  EXPECT_EQ(j["timeline"]["series"]["app_bytes"].size(),
            static_cast<std::size_t>(kTimelineBuckets));
  EXPECT_EQ(j["top_files"]["by_bytes"][0]["path"], "/lus/f");
  EXPECT_EQ(j["top_files"]["by_bytes"][0]["bytes"], 7);
  EXPECT_EQ(j["fallback_files"][0]["cause"], "transport");
  EXPECT_TRUE(j.contains("served"));
  EXPECT_TRUE(j["fallback_causes"].contains("no_room"));
}

}  // namespace
}  // namespace larder
