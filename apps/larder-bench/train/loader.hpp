// Loader: delivers an epoch's batches in order, read ahead by reader threads.
//
// Batch loader (PyTorch DataLoader, persistent workers, drop_last): batch b goes to worker
//   b % read_threads, which reads its samples one after the other; at most
//   read_threads * prefetch_factor batches are in flight, prefetch_factor =
//   ceil(prefetch_size / read_threads) (2 when prefetch_size is 0), and batch b starts once batch
//   b - window has been taken. read_threads 0 loads in the caller's thread.
// Stream loader (TFRecordDataset with num_parallel_reads): one thread per interleave slot reads
//   its files record after record through a transfer_size buffer; records are taken in the
//   interleave order; with sample_shuffle the shuffle buffer makes the consumer wait until
//   shuffle_size records beyond the one it takes have been read; at most prefetch_size batches
//   (plus the shuffle buffer) are read ahead.
// Threads stop and are joined when the loader is destroyed. A read error is returned by next()
// for the batch that failed.
#ifndef LARDER_APPS_LARDER_BENCH_TRAIN_LOADER_HPP_
#define LARDER_APPS_LARDER_BENCH_TRAIN_LOADER_HPP_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/larder-bench/config/time_spec.hpp"
#include "apps/larder-bench/io/io_backend.hpp"
#include "apps/larder-bench/io/sample_reader.hpp"
#include "apps/larder-bench/train/sampler.hpp"

namespace larder::bench {

struct LoadedBatch {
  std::uint64_t bytes = 0;  // read from files (or the cache) for this batch
  std::int64_t samples = 0;
};

class Loader {
 public:
  virtual ~Loader() = default;
  virtual Result<LoadedBatch> next() = 0;
};

using ReaderFactory = std::function<Result<std::unique_ptr<SampleReader>>()>;

struct LoaderContext {
  std::vector<std::string> files;  // the epoch's file list; SampleRef::file indexes it
  TimeSpec preprocess_time;        // slept after each sample, in the reading thread
  std::uint64_t seed = 0;          // for preprocess_time draws
};

std::unique_ptr<Loader> make_batch_loader(LoaderContext ctx, std::vector<Batch> batches,
                                          ReaderFactory make_reader, int read_threads,
                                          int prefetch_size);

struct StreamPlan {
  std::vector<StreamRecord> records;  // every record read, in the order they are taken
  std::int64_t batch_size = 1;
  std::int64_t keep_every = 1;  // sample-level shard: keep record j when j % keep_every == offset
  std::int64_t keep_offset = 0;
  std::int64_t shuffle_size = 0;  // 0: no shuffle buffer
  int prefetch_size = 2;
  std::size_t buffer_size = 256 * 1024;
};

std::unique_ptr<Loader> make_stream_loader(LoaderContext ctx, StreamPlan plan, IoBackend& io);

// Sleeps for `seconds` (no-op when <= 0).
void sleep_seconds(double seconds);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_TRAIN_LOADER_HPP_
