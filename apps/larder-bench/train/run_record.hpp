// What one rank recorded during `train`: per epoch, the timings DLIO's StatsCounter keeps and the
// bytes read; the output writers (output/results.hpp) turn it into DLIO's files.
#ifndef LARDER_APPS_LARDER_BENCH_TRAIN_RUN_RECORD_HPP_
#define LARDER_APPS_LARDER_BENCH_TRAIN_RUN_RECORD_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/larder-bench/io/larder_probe.hpp"
#include "apps/larder-bench/metrics/block_metrics.hpp"

namespace larder::bench {

struct PhaseRecord {  // one block of training steps, or one evaluation
  std::string start_ts;
  std::string end_ts;
  BlockTimes times;
  AuRate metrics;
  std::int64_t steps = 0;   // steps taken
  std::uint64_t bytes = 0;  // read by the application
};

struct EpochRecord {
  int epoch = 0;
  std::string start_ts;
  std::string end_ts;
  double seconds = 0.0;
  PhaseRecord block;  // DLIO's block1 (no checkpoints, one block per epoch)
  AuRate metrics;     // end_train: step-weighted over blocks
  std::optional<PhaseRecord> eval;
  std::optional<LarderCounters> larder;  // this rank's Larder counters during the epoch
};

struct RunRecord {
  std::string start_ts;
  std::string end_ts;
  std::vector<EpochRecord> epochs;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_TRAIN_RUN_RECORD_HPP_
