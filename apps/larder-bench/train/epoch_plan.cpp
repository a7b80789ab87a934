#include "apps/larder-bench/train/epoch_plan.hpp"

#include <algorithm>

#include "apps/larder-bench/train/sampler.hpp"

namespace larder::bench {
namespace {

std::unique_ptr<Loader> tfrecord_stream(const Workload& w, const EpochSpec& spec, LoaderContext ctx,
                                        IoBackend& io) {
  const auto nfiles = static_cast<std::int64_t>(spec.files->size());
  // The dataset is built once after reconfigure(1): the epoch-1 order for the whole run.
  const std::vector<std::int64_t> order =
      shuffled_files(nfiles, w.reader.file_shuffle, w.train.seed, 1, w.train.seed_change_epoch);
  StreamPlan plan;
  plan.batch_size = spec.batch;
  if (nfiles < spec.ranks) {  // sample-level shard: every rank reads every file
    plan.keep_every = spec.ranks;
    plan.keep_offset = spec.rank;
  }
  plan.records =
      tf_interleave(tf_rank_files(order, spec.rank, spec.ranks), w.dataset.num_samples_per_file,
                    std::max(w.reader.read_threads, 1), spec.steps * spec.batch * plan.keep_every);
  plan.shuffle_size = w.reader.sample_shuffle != Shuffle::kOff ? w.reader.shuffle_size : 0;
  plan.prefetch_size = w.reader.prefetch_size;
  plan.buffer_size = static_cast<std::size_t>(w.transfer_bytes());
  return make_stream_loader(std::move(ctx), std::move(plan), io);
}

}  // namespace

std::unique_ptr<Loader> make_epoch_loader(const Workload& w, const EpochSpec& spec, IoBackend& io,
                                          bool larder_io) {
  LoaderContext ctx;
  ctx.files = *spec.files;
  ctx.preprocess_time = w.reader.preprocess_time;
  ctx.seed = (static_cast<std::uint64_t>(w.train.seed) << 32) ^
             (static_cast<std::uint64_t>(spec.rank) << 16) ^ static_cast<std::uint64_t>(spec.epoch);
  const bool tensorflow = w.reader.data_loader == LoaderKind::kTensorflow;
  if (tensorflow && w.dataset.format == Format::kTfrecord) {
    return tfrecord_stream(w, spec, std::move(ctx), io);
  }
  const auto nfiles = static_cast<std::int64_t>(spec.files->size());
  std::vector<SampleRef> samples =
      index_samples(nfiles, w.dataset.num_samples_per_file, spec.rank, spec.ranks);
  if (tensorflow) {  // ITERATIVE: the file list is reshuffled every epoch
    samples = through_order(std::move(samples),
                            shuffled_files(nfiles, w.reader.file_shuffle, w.train.seed, spec.epoch,
                                           w.train.seed_change_epoch));
  }
  ReaderFactory factory = [&w, &io, larder_io] { return make_sample_reader(w, io, larder_io); };
  return make_batch_loader(std::move(ctx), make_batches(samples, spec.batch, spec.steps),
                           std::move(factory), w.reader.read_threads, w.reader.prefetch_size);
}

}  // namespace larder::bench
