// Which samples a rank reads, and in what order (DLIO's samplers; dlio.md section 2).
//
// INDEX (PyTorch, DALI: unet3d): total = files * nspf, spp = ceil(total / P); rank r reads the
//   global samples [r*spp, min((r+1)*spp, total)) in ascending order, every epoch (DLIO's
//   shuffles do not change the PyTorch I/O order); sample g is sample g % nspf of file g / nspf.
// ITERATIVE (TensorFlow loader, non-TFRecord formats): the same contiguous block over the file
//   list shuffled each epoch with np.random.seed(seed + epoch) when reader.file_shuffle is set.
// TFRecord with the TensorFlow loader: the list shuffled once (epoch 1), file i to rank i % P
//   (or every file with a sample-level shard when there are fewer files than ranks), read by
//   read_threads interleaved streams (tf_interleave).
// Batches drop the remainder (drop_last) and stop at the epoch's step count.
#ifndef LARDER_APPS_LARDER_BENCH_TRAIN_SAMPLER_HPP_
#define LARDER_APPS_LARDER_BENCH_TRAIN_SAMPLER_HPP_

#include <cstdint>
#include <vector>

#include "apps/larder-bench/config/workload.hpp"

namespace larder::bench {

struct SampleRef {
  std::int64_t file = 0;  // index into the epoch's file list
  std::int64_t sample = 0;
  bool operator==(const SampleRef&) const = default;
};
using Batch = std::vector<SampleRef>;

// DLIO main.py: floor(nspf * files / batch / P), capped by total_training_steps when > 0.
std::int64_t steps_per_epoch(std::int64_t files, std::int64_t nspf, std::int64_t batch, int ranks,
                             std::int64_t total_training_steps);

std::vector<SampleRef> index_samples(std::int64_t files, std::int64_t nspf, int rank, int ranks);

std::vector<Batch> make_batches(const std::vector<SampleRef>& samples, std::int64_t batch,
                                std::int64_t steps);

// File order 0..files-1, shuffled as DLIO's reconfigure(epoch) does when `shuffle` is not off.
std::vector<std::int64_t> shuffled_files(std::int64_t files, Shuffle shuffle, std::uint32_t seed,
                                         int epoch, bool seed_change_epoch);

// Remaps each sample's file index through `order` (ITERATIVE sampler).
std::vector<SampleRef> through_order(std::vector<SampleRef> samples,
                                     const std::vector<std::int64_t>& order);

// TFRecord/TensorFlow: this rank's files (order[i] with i % P == rank), or all when fewer
// files than ranks.
std::vector<std::int64_t> tf_rank_files(const std::vector<std::int64_t>& order, int rank,
                                        int ranks);

// TFRecordDataset(num_parallel_reads=cycle): records in the order the deterministic interleave
// yields them, files taken `cycle` at a time, one record per file per round. `count` records,
// starting over at the first file when the files run out (repeat()).
struct StreamRecord {
  SampleRef ref;
  int slot = 0;  // the parallel read (interleave cycle element) that reads it
};
std::vector<StreamRecord> tf_interleave(const std::vector<std::int64_t>& files, std::int64_t nspf,
                                        int cycle, std::int64_t count);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_TRAIN_SAMPLER_HPP_
