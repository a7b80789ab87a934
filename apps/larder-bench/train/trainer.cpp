#include "apps/larder-bench/train/trainer.hpp"

#include <fmt/format.h>

#include <chrono>

#include "apps/larder-bench/data/shared_listing.hpp"
#include "apps/larder-bench/io/larder_probe.hpp"
#include "apps/larder-bench/metrics/run_metrics.hpp"
#include "apps/larder-bench/train/epoch_plan.hpp"
#include "apps/larder-bench/train/sampler.hpp"

namespace larder::bench {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Trainer::Trainer(const Workload& w, const MpiWorld& world, Console& console, IoBackend& io,
                 bool larder_io, bool larder_counters)
    : w_(w),
      world_(world),
      console_(console),
      io_(io),
      larder_io_(larder_io),
      larder_counters_(larder_counters),
      rng_((static_cast<std::uint64_t>(w.train.seed) << 20) ^
           static_cast<std::uint64_t>(world.rank())) {}

Status Trainer::prepare() {
  auto train = list_on_root(w_.dataset, Split::kTrain, world_);
  if (!train.ok()) return train.status();
  train_files_ = std::move(train.value());
  const DatasetConfig& d = w_.dataset;
  steps_ = steps_per_epoch(d.num_files_train, d.num_samples_per_file, w_.reader.batch_size,
                           world_.size(), w_.train.total_training_steps);
  if (steps_ < 1) {
    return Status::error(fmt::format(
        "0 steps per epoch: {} files x {} samples do not make one batch of {} for each of {} "
        "ranks",
        d.num_files_train, d.num_samples_per_file, w_.reader.batch_size, world_.size()));
  }
  if (w_.workflow.evaluation) {
    auto eval = list_on_root(w_.dataset, Split::kEval, world_);
    if (!eval.ok()) return eval.status();
    eval_files_ = std::move(eval.value());
    eval_steps_ = steps_per_epoch(d.num_files_eval, d.num_samples_per_file,
                                  w_.reader.batch_size_eval, world_.size(), -1);
  }
  console_.output(fmt::format(
      "Max steps per epoch: {} = {} * {} / {} / {} (samples per file * num files / batch size / "
      "comm size)",
      steps_, d.num_samples_per_file, d.num_files_train, w_.reader.batch_size, world_.size()));
  return {};
}

RunRecord Trainer::run() {
  RunRecord run;
  run.start_ts = dlio_timestamp();
  int next_eval = w_.evaluation.eval_after_epoch;
  for (int epoch = 1; epoch <= w_.train.epochs; ++epoch) {
    EpochRecord rec = run_epoch(epoch);
    if (w_.workflow.evaluation && epoch >= next_eval) {
      next_eval += w_.evaluation.epochs_between_evals;
      rec.eval = run_eval(epoch);
    }
    run.epochs.push_back(std::move(rec));
  }
  run.end_ts = dlio_timestamp();
  return run;
}

EpochRecord Trainer::run_epoch(int epoch) {
  world_.barrier();  // DLIO main: ranks start each epoch together
  EpochRecord rec;
  rec.epoch = epoch;
  rec.start_ts = dlio_timestamp();
  const double t_start = now_seconds();
  console_.output(fmt::format("Starting epoch {}: {} steps expected", epoch, steps_));
  const auto counters = [&] {
    return larder_counters_ ? read_larder_counters() : std::optional<LarderCounters>();
  };
  const std::optional<LarderCounters> before = counters();
  rec.block = run_block(epoch);
  world_.barrier();  // the two barriers closing DLIO's _train
  world_.barrier();
  const std::size_t steps = rec.block.times.proc.size();
  rec.metrics = epoch_metrics(std::span(&rec.block.metrics, 1), std::span(&steps, 1));
  if (const auto after = counters(); before && after) {
    rec.larder = counters_delta(*before, *after);
  }
  rec.end_ts = dlio_timestamp();
  rec.seconds = now_seconds() - t_start;
  console_.output(
      fmt::format("Ending epoch {} - {} steps completed in {:.2f} s", epoch, steps, rec.seconds));
  return rec;
}

Result<LoadedBatch> Trainer::next_or_abort(Loader& loader) {
  auto batch = loader.next();
  if (!batch.ok()) {
    console_.error(batch.status().message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return batch;
}

PhaseRecord Trainer::run_block(int epoch) {
  PhaseRecord b;
  b.start_ts = dlio_timestamp();
  b.times.start = now_seconds();
  console_.output("Starting block 1");
  const EpochSpec spec{&train_files_,        epoch,         steps_,
                       w_.reader.batch_size, world_.rank(), world_.size()};
  auto loader = make_epoch_loader(w_, spec, io_, larder_io_);
  console_.progress_start(fmt::format("epoch {}/{}", epoch, w_.train.epochs), steps_);
  double t0 = now_seconds();
  for (std::int64_t step = 1; step <= steps_; ++step) {
    const LoadedBatch batch = next_or_abort(*loader).value();
    const double loaded = now_seconds();
    const double set = w_.train.computation_time.draw(rng_);
    sleep_seconds(set);
    const double done = now_seconds();
    b.times.load.push_back(loaded - t0);
    b.times.proc.push_back(done - t0);
    b.times.compute.push_back(done - loaded);
    b.bytes += batch.bytes;
    world_.barrier();  // the simulated all-reduce
    const double mib = static_cast<double>(b.bytes) / (1 << 20);
    console_.progress_update(step, fmt::format("rank 0 read {:.0f} MiB ({:.1f} MiB/s)", mib,
                                               mib / (now_seconds() - b.times.start)));
    t0 = now_seconds();
  }
  console_.progress_end();
  b.times.end = now_seconds();
  b.end_ts = dlio_timestamp();
  b.steps = steps_;
  loader.reset();  // joins the reader threads
  b.metrics = train_block_metrics(
      b.times, {steps_, w_.metric.exclude_start_steps, w_.metric.exclude_end_steps},
      w_.reader.batch_size);
  print_block(epoch, b);
  return b;
}

PhaseRecord Trainer::run_eval(int epoch) {
  PhaseRecord e;
  e.start_ts = dlio_timestamp();
  e.times.start = now_seconds();
  console_.output(fmt::format("Starting eval - {} steps expected", eval_steps_));
  const EpochSpec spec{&eval_files_,  epoch,        eval_steps_, w_.reader.batch_size_eval,
                       world_.rank(), world_.size()};
  auto loader = make_epoch_loader(w_, spec, io_, larder_io_);
  double t0 = now_seconds();
  for (std::int64_t step = 1; step <= eval_steps_; ++step) {
    const LoadedBatch batch = next_or_abort(*loader).value();
    const double loaded = now_seconds();
    sleep_seconds(w_.evaluation.eval_time.draw(rng_));
    const double done = now_seconds();
    e.times.load.push_back(loaded - t0);
    e.times.proc.push_back(done - t0);
    e.times.compute.push_back(done - loaded);
    e.bytes += batch.bytes;
    t0 = now_seconds();
  }
  e.times.end = now_seconds();
  e.end_ts = dlio_timestamp();
  e.steps = eval_steps_;
  loader.reset();
  e.metrics = eval_metrics(
      e.times, {eval_steps_, w_.metric.exclude_start_steps, w_.metric.exclude_end_steps},
      w_.reader.batch_size_eval);
  console_.output(fmt::format("Ending eval - {} steps completed in {:.2f} s", eval_steps_,
                              e.times.end - e.times.start));
  console_.output(fmt::format("Epoch {} [Eval] Accelerator Utilization [AU] (%): {}", epoch,
                              metric_text(e.metrics.au_percent, 4)));
  console_.output(fmt::format("Epoch {} [Eval] Throughput (samples/second): {}", epoch,
                              metric_text(e.metrics.throughput * world_.size(), 4)));
  return e;
}

void Trainer::print_block(int epoch, const PhaseRecord& b) {
  const MetricWindow window{steps_, w_.metric.exclude_start_steps, w_.metric.exclude_end_steps};
  const std::int64_t s = window.exclude_start;
  const std::int64_t e = steps_ - 1 - window.exclude_end;
  // DLIO averages the steps of the metric window (nan when it is empty): all steps then.
  const bool whole = window_steps(window) == 0;
  const MeanStd c = mean_std(whole ? b.times.compute : slice(b.times.compute, s, e + 1));
  console_.output(fmt::format("Ending block 1 - {} steps completed in {:.2f} s", b.steps,
                              b.times.end - b.times.start));
  const auto au_na = au_unavailable_reason(window);
  console_.output(
      fmt::format("Epoch {} - Block 1 [Training] Accelerator Utilization [AU] (%): {}{}", epoch,
                  metric_text(b.metrics.au_percent, 4), au_na ? " (" + *au_na + ")" : ""));
  const auto tput_na = train_throughput_unavailable_reason(window);
  console_.output(fmt::format("Epoch {} - Block 1 [Training] Throughput (samples/second): {}{}",
                              epoch, metric_text(b.metrics.throughput * world_.size(), 4),
                              tput_na ? " (" + *tput_na + ")" : ""));
  console_.output(fmt::format(
      "Epoch {} - Block 1 [Training] Computation time per step (second): {:.4f}+/-{:.4f} (set "
      "value: {}{})",
      epoch, c.mean, c.stdev, w_.train.computation_time.describe(),
      whole ? fmt::format("; over all {} step(s), none is in the metric window", b.steps) : ""));
}

}  // namespace larder::bench
