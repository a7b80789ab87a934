// DLIO's metric formulas (statscounter.py) on synthetic timings, against values computed by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/larder-bench/metrics/block_metrics.hpp"
#include "apps/larder-bench/metrics/run_metrics.hpp"

namespace larder::bench {
namespace {

// 4 steps of 1 s compute; the first step waited 2 s for its batch, the others 0.5 s.
BlockTimes four_steps() {
  BlockTimes b;
  b.start = 100.0;
  b.end = 110.0;
  b.load = {2.0, 0.5, 0.5, 0.5};
  b.compute = {1.0, 1.0, 1.0, 1.0};
  b.proc = {3.0, 1.5, 1.5, 1.5};
  return b;
}

// A block from 0 to `end` s whose step k waited load[k] and computed compute[k].
BlockTimes block(double end, std::vector<double> load, std::vector<double> compute) {
  BlockTimes b;
  b.end = end;
  for (std::size_t k = 0; k < load.size(); ++k) b.proc.push_back(load[k] + compute[k]);
  b.load = std::move(load);
  b.compute = std::move(compute);
  return b;
}

TEST(SliceTest, FollowsPythonSlicing) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(slice_sum(v, 1, -1), 5.0);   // v[1:-1]
  EXPECT_DOUBLE_EQ(slice_sum(v, -2), 7.0);      // v[-2:]
  EXPECT_DOUBLE_EQ(slice_sum(v, 0, 10), 10.0);  // v[0:10]
  EXPECT_DOUBLE_EQ(slice_sum(v, 3, 1), 0.0);    // empty
  EXPECT_DOUBLE_EQ(slice_sum(v, 0, 0), 0.0);
  EXPECT_EQ(slice(v, -3, -1), (std::vector<double>{2, 3}));
}

TEST(TrainBlockMetricsTest, ExcludesTheFirstStepFromAu) {
  // compute[1:4] = 3 s; time = 10 - proc[0] = 7 s; AU = 300/7 %; (4 - 2) / 7 * 2 samples/s
  const AuRate r = train_block_metrics(four_steps(), {4, 1, 0}, 2);
  EXPECT_NEAR(r.au_percent, 42.857142857142854, 1e-12);
  EXPECT_NEAR(r.throughput, 0.5714285714285714, 1e-12);
}

TEST(TrainBlockMetricsTest, ExcludesEndStepsWhenAsked) {
  // e = 4 - 1 - 1 = 2: compute[1:3] = 2 s; time = 10 - 3 - proc[3:] (1.5) = 5.5 s
  const AuRate r = train_block_metrics(four_steps(), {4, 1, 1}, 2);
  EXPECT_NEAR(r.au_percent, 200.0 / 5.5, 1e-12);
  EXPECT_NEAR(r.throughput, 2.0 / 5.5 * 2, 1e-12);  // still len(compute) - 2 = 2
}

TEST(TrainBlockMetricsTest, NoExclusionCountsEveryStep) {
  // compute = 4 s over the whole 10 s block
  const AuRate r = train_block_metrics(four_steps(), {4, 0, 0}, 2);
  EXPECT_NEAR(r.au_percent, 40.0, 1e-12);
  EXPECT_NEAR(r.throughput, 0.4, 1e-12);
}

TEST(TrainBlockMetricsTest, OneStepEpochHasNoAuAndNoThroughput) {
  // 3 files, 2 ranks, batch 1: one step. DLIO reports AU 0 % (the only step is excluded) and
  // (1 - 2) / (2 - 1) * 4 = -4 samples/s; neither means anything: not available, with reasons.
  const BlockTimes b = block(2.0, {0.5}, {0.5});
  const MetricWindow w{1, 1, 0};
  const AuRate r = train_block_metrics(b, w, 4);
  EXPECT_FALSE(available(r.au_percent));
  EXPECT_FALSE(available(r.throughput));
  ASSERT_TRUE(au_unavailable_reason(w).has_value());
  EXPECT_NE(au_unavailable_reason(w)->find("exclude_start_steps=1"), std::string::npos);
  EXPECT_NE(au_unavailable_reason(w)->find("DLIO reports 0"), std::string::npos);
  ASSERT_TRUE(train_throughput_unavailable_reason(w).has_value());
  EXPECT_NE(train_throughput_unavailable_reason(w)->find("negative"), std::string::npos);
  EXPECT_EQ(window_steps(w), 0);
}

TEST(TrainBlockMetricsTest, TwoStepEpochHasAuButNoThroughput) {
  // AU over step 2 alone: compute[1:2] = 1 s over 4 - proc[0] (1.5) = 2.5 s. DLIO's throughput
  // is (2 - 2) / 2.5 * 4 = 0: not available.
  const BlockTimes b = block(4.0, {0.5, 0.5}, {1.0, 1.0});
  const MetricWindow w{2, 1, 0};
  const AuRate r = train_block_metrics(b, w, 4);
  EXPECT_NEAR(r.au_percent, 40.0, 1e-12);
  EXPECT_FALSE(available(r.throughput));
  EXPECT_FALSE(au_unavailable_reason(w).has_value());
  ASSERT_TRUE(train_throughput_unavailable_reason(w).has_value());
  EXPECT_NE(train_throughput_unavailable_reason(w)->find("DLIO reports 0"), std::string::npos);
}

TEST(TrainBlockMetricsTest, ThreeStepEpochHasBoth) {
  const BlockTimes b = block(6.0, {1.0, 0.5, 0.5}, {1.0, 1.0, 1.0});
  // compute[1:3] = 2 s over 6 - 2 = 4 s: 50 %; (3 - 2) / 4 * 4 = 1 sample/s, as DLIO
  const AuRate r = train_block_metrics(b, {3, 1, 0}, 4);
  EXPECT_NEAR(r.au_percent, 50.0, 1e-12);
  EXPECT_NEAR(r.throughput, 1.0, 1e-12);
}

TEST(TrainBlockMetricsTest, WindowEmptiedByExcludedEndStepsHasNeither) {
  const MetricWindow w{4, 2, 2};
  const AuRate r = train_block_metrics(four_steps(), w, 2);
  EXPECT_FALSE(available(r.au_percent));
  EXPECT_FALSE(available(r.throughput));
  ASSERT_TRUE(train_throughput_unavailable_reason(w).has_value());
  EXPECT_NE(train_throughput_unavailable_reason(w)->find("exclude_end_steps=2"), std::string::npos);
}

TEST(EvalMetricsTest, OneStepEvaluationHasThroughputButNoAu) {
  const BlockTimes b = block(2.0, {1.0}, {1.0});
  const AuRate r = eval_metrics(b, {1, 1, 0}, 3);
  EXPECT_FALSE(available(r.au_percent));
  EXPECT_NEAR(r.throughput, 1.5, 1e-12);  // len(compute) / T * batch: 1 / 2 * 3
}

TEST(EvalMetricsTest, ThroughputUsesTheWholeEvaluation) {
  const BlockTimes b = block(6.0, {1.0, 0.5, 0.5}, {1.0, 1.0, 1.0});
  // compute[1:3] = 2 s over 6 - proc[0] = 4 s; throughput 3 / 6 * 4
  const AuRate r = eval_metrics(b, {3, 1, 0}, 4);
  EXPECT_NEAR(r.au_percent, 50.0, 1e-12);
  EXPECT_NEAR(r.throughput, 2.0, 1e-12);
}

TEST(EpochMetricsTest, WeightsBlocksBySteps) {
  const std::vector<AuRate> blocks = {{50.0, 10.0}, {100.0, 30.0}};
  const std::vector<std::size_t> steps = {1, 3};
  const AuRate r = epoch_metrics(blocks, steps);
  EXPECT_DOUBLE_EQ(r.au_percent, 87.5);
  EXPECT_DOUBLE_EQ(r.throughput, 25.0);
  const std::vector<std::size_t> none = {0, 0};
  EXPECT_DOUBLE_EQ(epoch_metrics(blocks, none).au_percent, 0.0);
}

TEST(EpochMetricsTest, ABlockWithoutAValueMakesTheEpochWithout) {
  const std::vector<AuRate> blocks = {{50.0, kNotAvailable}, {100.0, 30.0}};
  const std::vector<std::size_t> steps = {1, 3};
  const AuRate r = epoch_metrics(blocks, steps);
  EXPECT_DOUBLE_EQ(r.au_percent, 87.5);
  EXPECT_FALSE(available(r.throughput));
}

TEST(MeanStdTest, IsPopulationStandardDeviation) {
  const std::vector<double> v = {1, 2, 3, 4};
  const MeanStd m = mean_std(v);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.stdev, 1.118033988749895);  // np.std([1, 2, 3, 4])
}

TEST(RunMetricsTest, SummaryUsesDliosFieldsAndNominalRecordLength) {
  RunMetrics m;
  m.train_au = {80.0, 100.0};
  m.train_throughput = {10.0, 20.0};
  m.au_threshold = 0.90;
  m.record_length = 1048576;  // 1 MiB: MB/s equals samples/s
  const auto j = metric_json(m);
  EXPECT_DOUBLE_EQ(j["train_au_mean_percentage"].get<double>(), 90.0);
  EXPECT_EQ(j["train_au_meet_expectation"], "success");  // 90 >= 0.90 * 100
  EXPECT_DOUBLE_EQ(j["train_au_stdev_percentage"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(j["train_throughput_mean_samples_per_second"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(j["train_throughput_stdev_samples_per_second"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["train_io_mean_MB_per_second"].get<double>(), 15.0);
  EXPECT_DOUBLE_EQ(j["train_io_stdev_MB_per_second"].get<double>(), 5.0);
  EXPECT_FALSE(j.contains("eval_au_mean_percentage"));
  m.au_threshold = 0.91;
  EXPECT_EQ(metric_json(m)["train_au_meet_expectation"], "fail");
}

TEST(RunMetricsTest, ValuesNotAvailableAreNaWithTheirReason) {
  RunMetrics m;
  m.train_au = {kNotAvailable, kNotAvailable};
  m.train_throughput = {kNotAvailable, kNotAvailable};
  m.train_au_na = "no step left";
  m.train_throughput_na = "1 step(s) per epoch";
  m.record_length = 1048576;
  const auto j = metric_json(m);
  EXPECT_EQ(j["train_au_percentage"], nlohmann::ordered_json::array({"n/a", "n/a"}));
  EXPECT_EQ(j["train_au_mean_percentage"], "n/a");
  EXPECT_EQ(j["train_au_stdev_percentage"], "n/a");
  EXPECT_EQ(j["train_au_meet_expectation"], "n/a");
  EXPECT_EQ(j["train_au_na_reason"], "no step left");
  EXPECT_EQ(j["train_throughput_samples_per_second"],
            nlohmann::ordered_json::array({"n/a", "n/a"}));
  EXPECT_EQ(j["train_throughput_mean_samples_per_second"], "n/a");
  EXPECT_EQ(j["train_io_mean_MB_per_second"], "n/a");
  EXPECT_EQ(j["train_throughput_na_reason"], "1 step(s) per epoch");
  const std::vector<std::string> lines = metric_report_lines(m, 2);
  EXPECT_EQ(lines[3], "Training Accelerator Utilization [AU] (%): n/a (no step left)");
  EXPECT_EQ(lines[4], "Training Throughput (samples/second): n/a (1 step(s) per epoch)");
  EXPECT_EQ(lines[5], "Training I/O Throughput (MB/second): n/a");
  EXPECT_EQ(lines[6], "train_au_meet_expectation: n/a");
}

TEST(RunMetricsTest, AvailableValuesHaveNoReason) {
  RunMetrics m;
  m.train_au = {95.0};
  m.train_throughput = {kNotAvailable};  // a two-step epoch
  m.train_throughput_na = "2 step(s) per epoch";
  const auto j = metric_json(m);
  EXPECT_DOUBLE_EQ(j["train_au_mean_percentage"].get<double>(), 95.0);
  EXPECT_FALSE(j.contains("train_au_na_reason"));
  EXPECT_EQ(j["train_throughput_mean_samples_per_second"], "n/a");
}

TEST(RunMetricsTest, MetricLinesFollowDliosFormat) {
  RunMetrics m;
  m.train_au = {95.0, 97.0};
  m.train_throughput = {21.0, 23.0};
  m.record_length = 146600628;
  const std::vector<std::string> lines = metric_report_lines(m, 4);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[2], "Number of Simulated Accelerators: 4 ");
  EXPECT_EQ(lines[3], "Training Accelerator Utilization [AU] (%): 96.0000 (1.0000)");
  EXPECT_EQ(lines[4], "Training Throughput (samples/second): 22.0000 (1.0000)");
  EXPECT_EQ(lines[5], "Training I/O Throughput (MB/second): 3075.8036 (139.8093)");
  EXPECT_EQ(lines[6], "train_au_meet_expectation: success");
}

}  // namespace
}  // namespace larder::bench
