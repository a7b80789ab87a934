// DLIO's sample-to-rank partitioning, batching and TFRecord interleave order.
#include <gtest/gtest.h>

#include <vector>

#include "apps/larder-bench/train/sampler.hpp"

namespace larder::bench {
namespace {

std::vector<std::int64_t> files_of(const std::vector<SampleRef>& s) {
  std::vector<std::int64_t> out;
  for (const SampleRef& r : s) out.push_back(r.file);
  return out;
}

TEST(StepsTest, FloorOfSamplesOverBatchAndRanks) {
  EXPECT_EQ(steps_per_epoch(168, 1, 7, 4, -1), 6);  // unet3d h100, 4 accelerators
  EXPECT_EQ(steps_per_epoch(168, 1, 7, 4, 3), 3);   // total_training_steps caps
  EXPECT_EQ(steps_per_epoch(1024, 1251, 400, 8, -1), 400);
  EXPECT_EQ(steps_per_epoch(3, 1, 2, 2, -1), 0);
}

TEST(IndexSamplerTest, GivesEachRankAContiguousAscendingBlock) {
  // total 10, spp = ceil(10 / 3) = 4
  EXPECT_EQ(files_of(index_samples(10, 1, 0, 3)), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(files_of(index_samples(10, 1, 1, 3)), (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(files_of(index_samples(10, 1, 2, 3)), (std::vector<std::int64_t>{8, 9}));
}

TEST(IndexSamplerTest, MapsGlobalSamplesToFileAndSample) {
  // 3 files x 2 samples over 2 ranks: rank 1 has global samples 3, 4, 5
  EXPECT_EQ(index_samples(3, 2, 1, 2), (std::vector<SampleRef>{{1, 1}, {2, 0}, {2, 1}}));
}

TEST(IndexSamplerTest, BatchesDropTheRemainderAndStopAtSteps) {
  const std::vector<SampleRef> s = index_samples(7, 1, 0, 1);
  const std::vector<Batch> b = make_batches(s, 2, 100);
  ASSERT_EQ(b.size(), 3u);  // 7 samples: 3 batches of 2, one sample dropped
  EXPECT_EQ(b[2], (Batch{{4, 0}, {5, 0}}));
  EXPECT_EQ(make_batches(s, 2, 2).size(), 2u);
}

TEST(IterativeSamplerTest, RemapsThroughTheShuffledList) {
  const std::vector<std::int64_t> order = {2, 0, 1};
  EXPECT_EQ(files_of(through_order(index_samples(3, 1, 0, 1), order)),
            (std::vector<std::int64_t>{2, 0, 1}));
}

TEST(TfShardTest, FileIGoesToRankIModP) {
  const std::vector<std::int64_t> order = {6, 8, 3, 5, 4, 0, 9, 2, 7, 1};
  EXPECT_EQ(tf_rank_files(order, 1, 3), (std::vector<std::int64_t>{8, 4, 2}));
  // fewer files than ranks: every rank gets every file (the shard is per sample)
  EXPECT_EQ(tf_rank_files({3, 1}, 2, 4), (std::vector<std::int64_t>{3, 1}));
}

TEST(TfInterleaveTest, TakesOneRecordPerFileAndRound) {
  const std::vector<StreamRecord> r = tf_interleave({10, 11, 12}, 2, 2, 6);
  ASSERT_EQ(r.size(), 6u);
  const std::vector<SampleRef> want = {{10, 0}, {11, 0}, {10, 1}, {11, 1}, {12, 0}, {12, 1}};
  const std::vector<int> slots = {0, 1, 0, 1, 0, 0};
  for (std::size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].ref, want[i]) << i;
    EXPECT_EQ(r[i].slot, slots[i]) << i;
  }
}

TEST(TfInterleaveTest, RepeatsWhenTheFilesRunOut) {
  const std::vector<StreamRecord> r = tf_interleave({4}, 2, 4, 5);
  const std::vector<SampleRef> want = {{4, 0}, {4, 1}, {4, 0}, {4, 1}, {4, 0}};
  ASSERT_EQ(r.size(), want.size());
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].ref, want[i]) << i;
}

}  // namespace
}  // namespace larder::bench
