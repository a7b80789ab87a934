#include "apps/larder-bench/train/epoch_plan.hpp"

#include <larder/larder.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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

// The epoch's batches for the batch loader (PyTorch/DALI INDEX, TensorFlow ITERATIVE).
std::vector<Batch> epoch_batches(const Workload& w, const EpochSpec& spec, int epoch) {
  const auto nfiles = static_cast<std::int64_t>(spec.files->size());
  std::vector<SampleRef> samples =
      index_samples(nfiles, w.dataset.num_samples_per_file, spec.rank, spec.ranks);
  if (w.reader.data_loader == LoaderKind::kTensorflow) {  // ITERATIVE: reshuffled every epoch
    samples = through_order(std::move(samples),
                            shuffled_files(nfiles, w.reader.file_shuffle, w.train.seed, epoch,
                                           w.train.seed_change_epoch));
  }
  return make_batches(samples, spec.batch, spec.steps);
}

// Hands Larder the files of `batches` in order (a file read for several samples in a row once);
// `entries_after[b]`: the schedule's entries up to the end of batch b.
void schedule_batches(const std::vector<std::string>& files, const std::vector<Batch>& batches,
                      unsigned flags, std::vector<std::uint64_t>* entries_after) {
  std::vector<larder_read_t> reads;
  std::int64_t last = -1;
  for (const Batch& batch : batches) {
    for (const SampleRef& ref : batch) {
      if (ref.file == last) continue;
      last = ref.file;
      reads.push_back({files[static_cast<std::size_t>(ref.file)].c_str(), 0, 0});
    }
    if (entries_after != nullptr) entries_after->push_back(reads.size());
  }
  (void)larder_schedule(reads.data(), reads.size(), flags);  // a schedule is only advice
}

// The batch loader, telling Larder how far the epoch's schedule has been taken.
class ScheduledLoader final : public Loader {
 public:
  ScheduledLoader(std::unique_ptr<Loader> inner, std::vector<std::uint64_t> entries_after)
      : inner_(std::move(inner)), entries_after_(std::move(entries_after)) {}
  Result<LoadedBatch> next() override {
    auto batch = inner_->next();
    if (taken_ < entries_after_.size()) (void)larder_schedule_position(entries_after_[taken_++]);
    return batch;
  }

 private:
  std::unique_ptr<Loader> inner_;
  std::vector<std::uint64_t> entries_after_;
  std::size_t taken_ = 0;
};

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
  std::vector<Batch> batches = epoch_batches(w, spec, spec.epoch);
  std::vector<std::uint64_t> entries_after;
  const bool scheduled = w.reader.larder_prefetch && larder_initialized() != 0;
  if (scheduled) {
    // This epoch's order, then the next one's, so that it is prefetched while this one ends.
    schedule_batches(ctx.files, batches, 0, &entries_after);
    schedule_batches(ctx.files, epoch_batches(w, spec, spec.epoch + 1), LARDER_SCHEDULE_APPEND,
                     nullptr);
  }
  ReaderFactory factory = [&w, &io, larder_io] { return make_sample_reader(w, io, larder_io); };
  auto loader = make_batch_loader(std::move(ctx), std::move(batches), std::move(factory),
                                  w.reader.read_threads, w.reader.prefetch_size);
  if (!scheduled) return loader;
  return std::make_unique<ScheduledLoader>(std::move(loader), std::move(entries_after));
}

}  // namespace larder::bench
