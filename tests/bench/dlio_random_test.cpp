// numpy's legacy RandomState as DLIO uses it, and the file sizes and orders that follow
// (test vectors from numpy 1.24 and the DLIO reference).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "apps/larder-bench/common/legacy_random.hpp"
#include "apps/larder-bench/data/size_plan.hpp"
#include "apps/larder-bench/train/sampler.hpp"

namespace larder::bench {
namespace {

TEST(LegacyRandomTest, MatchesNumpyStreamForSeedTen) {
  LegacyRandom rng(10);
  const std::vector<std::uint32_t> want = {3312796937U, 1283169405U, 89128932U, 2124247567U,
                                           2721498432U};
  for (std::uint32_t w : want) EXPECT_EQ(rng.next_u32(), w);
}

TEST(LegacyRandomTest, DoublesAndGaussiansMatchNumpy) {
  LegacyRandom rng(7);  // np.random.seed(7); np.random.random_sample(3)
  EXPECT_DOUBLE_EQ(rng.next_double(), 0.07630828937395717);
  EXPECT_DOUBLE_EQ(rng.next_double(), 0.7799187922401146);
  EXPECT_DOUBLE_EQ(rng.next_double(), 0.4384092314408935);
  rng.seed(7);  // np.random.normal(0, 1, 3)
  EXPECT_DOUBLE_EQ(rng.gauss(), 1.690525703800356);
  EXPECT_DOUBLE_EQ(rng.gauss(), -0.4659373705408328);
  EXPECT_DOUBLE_EQ(rng.gauss(), 0.0328201636785844);
}

TEST(LegacyRandomTest, ShuffleMatchesNumpy) {
  LegacyRandom rng(124);  // np.random.seed(123 + 1); np.random.shuffle(list(range(10)))
  std::vector<int> v(10);
  std::iota(v.begin(), v.end(), 0);
  rng.shuffle(v);
  EXPECT_EQ(v, (std::vector<int>{6, 8, 3, 5, 4, 0, 9, 2, 7, 1}));
  rng.seed(124);
  std::vector<int> big(1000);
  std::iota(big.begin(), big.end(), 0);
  rng.shuffle(big);
  EXPECT_EQ(std::vector<int>(big.begin(), big.begin() + 8),
            (std::vector<int>{80, 789, 869, 518, 794, 762, 896, 506}));
}

TEST(SizePlanTest, Unet3dMatchesDlioTestVectors) {
  DatasetConfig d;
  d.record_length = 146600628;
  d.record_length_stdev = 68341808;
  EXPECT_EQ(record_dimension(d.record_length), 12107);
  EXPECT_NEAR(record_dimension_stdev(d.record_length, d.record_length_stdev), 2822.2049741, 1e-6);
  const std::vector<Dims> dims = plan_dimensions(d, 168);
  const std::vector<Dims> want = {{15865, 14125}, {7745, 12083},  {13860, 10074}, {12856, 12413},
                                  {12119, 11614}, {13329, 15502}, {9383, 15009},  {12752, 13363},
                                  {8899, 12488},  {16296, 9059}};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(dims[i], want[i]) << "file " << i;
  EXPECT_EQ(dims[0].bytes(), 224093125);
  EXPECT_EQ(dims[1].bytes(), 93582835);
  EXPECT_EQ(dims[2].bytes(), 139625640);
  EXPECT_EQ(dims[3].bytes(), 159581528);
  std::int64_t sum = 0, lo = dims[0].bytes(), hi = 0;
  for (const Dims& f : dims) {
    sum += f.bytes();
    lo = std::min(lo, f.bytes());
    hi = std::max(hi, f.bytes());
  }
  EXPECT_EQ(sum / 168, 150511797);
  EXPECT_EQ(lo, 46888650);
  EXPECT_EQ(hi, 301601979);
}

TEST(SizePlanTest, SizesDoNotDependOnTheFileCount) {
  DatasetConfig d;
  d.record_length = 146600628;
  d.record_length_stdev = 68341808;
  const std::vector<Dims> few = plan_dimensions(d, 10);
  const std::vector<Dims> many = plan_dimensions(d, 168);
  EXPECT_TRUE(std::equal(few.begin(), few.end(), many.begin()));
}

TEST(SizePlanTest, CosmoflowAndResnetMatchDlio) {
  DatasetConfig cosmo;
  cosmo.record_length = 2828486;
  cosmo.record_length_stdev = 71311;
  const std::vector<Dims> want = {{1709, 1696}, {1648, 1680}, {1694, 1665}, {1686, 1683},
                                  {1681, 1677}, {1690, 1706}, {1660, 1702}, {1685, 1690},
                                  {1656, 1683}, {1712, 1658}};
  EXPECT_EQ(plan_dimensions(cosmo, 10), want);
  DatasetConfig resnet;
  resnet.record_length = 114660.07;  // int(sqrt(.)) = 338, no stdev: every image 338 x 338
  for (const Dims& f : plan_dimensions(resnet, 5)) EXPECT_EQ(f, (Dims{338, 338}));
}

TEST(FileOrderTest, ShuffledWithSeedPlusEpochLikeDlio) {
  EXPECT_EQ(shuffled_files(10, Shuffle::kSeed, 123, 1, true),
            (std::vector<std::int64_t>{6, 8, 3, 5, 4, 0, 9, 2, 7, 1}));
  EXPECT_EQ(shuffled_files(4, Shuffle::kOff, 123, 1, true),
            (std::vector<std::int64_t>{0, 1, 2, 3}));
  // seed_change_epoch False: the same order every epoch (seed 123)
  EXPECT_EQ(shuffled_files(10, Shuffle::kSeed, 123, 5, false),
            shuffled_files(10, Shuffle::kSeed, 122, 1, true));
}

}  // namespace
}  // namespace larder::bench
