// The loaders deliver every batch in order with the bytes its samples hold, whatever the number
// of reader threads, and report read errors at the batch that failed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "apps/larder-bench/data/npz_writer.hpp"
#include "apps/larder-bench/data/tfrecord_writer.hpp"
#include "apps/larder-bench/train/loader.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder::bench {
namespace {

Workload npz_workload() {
  Workload w;
  w.dataset.format = Format::kNpz;
  w.reader.transfer_size = 4096;
  return w;
}

// Six npz files of growing sizes; returns their paths.
std::vector<std::string> make_files(const testing::TempDir& dir) {
  std::vector<std::string> files;
  for (int i = 0; i < 6; ++i) {
    files.push_back(dir / ("f" + std::to_string(i) + ".npz"));
    EXPECT_TRUE(
        write_npz(files.back(), {10 + i, 100}, 1, seeded_content(i), ZipStyle::kModern).ok());
  }
  return files;
}

std::uint64_t size_of(const std::string& p) {
  return std::filesystem::file_size(p);
}

class BatchLoaderTest : public ::testing::TestWithParam<int> {};

TEST_P(BatchLoaderTest, DeliversBatchesInOrder) {
  testing::TempDir dir("lbp-loader");
  const std::vector<std::string> files = make_files(dir);
  const Workload w = npz_workload();
  auto io = make_posix_backend(false);
  LoaderContext ctx;
  ctx.files = files;
  const std::vector<Batch> batches = make_batches(index_samples(6, 1, 0, 1), 2, 3);
  auto loader = make_batch_loader(
      ctx, batches, [&] { return make_sample_reader(w, *io, false); }, GetParam(), 2);
  for (int b = 0; b < 3; ++b) {
    auto got = loader->next();
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->samples, 2);
    EXPECT_EQ(got->bytes, size_of(files[2 * b]) + size_of(files[2 * b + 1])) << "batch " << b;
  }
  EXPECT_FALSE(loader->next().ok());  // the epoch has 3 batches
}

INSTANTIATE_TEST_SUITE_P(ReadThreads, BatchLoaderTest, ::testing::Values(0, 1, 2, 4));

TEST(BatchLoaderErrorTest, ReportsAMissingFileAtItsBatch) {
  testing::TempDir dir("lbp-loader");
  std::vector<std::string> files = make_files(dir);
  files[3] = dir / "missing.npz";
  const Workload w = npz_workload();
  auto io = make_posix_backend(false);
  LoaderContext ctx;
  ctx.files = files;
  auto loader = make_batch_loader(
      ctx, make_batches(index_samples(6, 1, 0, 1), 2, 3),
      [&] { return make_sample_reader(w, *io, false); }, 2, 2);
  EXPECT_TRUE(loader->next().ok());
  auto failed = loader->next();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("missing.npz"), std::string::npos);
}

TEST(StreamLoaderTest, ReadsInterleavedRecordsThroughTheShuffleBuffer) {
  testing::TempDir dir("lbp-loader");
  std::vector<std::string> files;
  std::uint64_t total = 0;
  for (int i = 0; i < 3; ++i) {
    files.push_back(dir / ("r" + std::to_string(i) + ".tfrecord"));
    std::string index;
    ASSERT_TRUE(write_tfrecord(files.back(), {50, 50}, 4, 50, i, index).ok());
    total += size_of(files.back());
  }
  auto io = make_posix_backend(false);
  LoaderContext ctx;
  ctx.files = files;
  StreamPlan plan;
  plan.records = tf_interleave({0, 1, 2}, 4, 2, 12);
  plan.batch_size = 3;
  plan.shuffle_size = 5;
  plan.buffer_size = 4096;
  auto loader = make_stream_loader(ctx, plan, *io);
  std::uint64_t bytes = 0;
  for (int b = 0; b < 4; ++b) {
    auto got = loader->next();
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got->samples, 3);
    bytes += got->bytes;
  }
  EXPECT_EQ(bytes, total);  // every record of every file, read once
}

}  // namespace
}  // namespace larder::bench
