// DLIO's metric formulas (utils/statscounter.py, identical in DLIO main and mlperf_storage v2.0),
// on recorded timings. Pure functions: the unit tests feed them synthetic timings.
//
// Per step k of a block: load[k] = batch arrival - loading start, proc[k] = load + compute,
// compute[k] = measured compute time. The per-step barrier is in the block time, not in proc.
// Training block, s = exclude_start_steps, e = steps - 1 - exclude_end_steps:
//   AU (%)      = 100 * sum(compute[s:e+1]) / (T_block - sum(proc[:s]) - sum(proc[e+1:]))
//   throughput  = (len(compute) - 2) / that same time * batch_size     (the "- 2" is DLIO's)
// Evaluation: the same AU; throughput = len(compute) / T_eval * batch_size_eval.
// Epoch: step-weighted mean over blocks. Run: AU averaged over ranks, throughput summed over
// ranks, then mean and population standard deviation over epochs. Slices follow Python's rules
// (negative indices count from the end).
//
// Where DLIO's formulas have no meaning the value is not available (NaN here, "n/a" in the
// result files and lines, with a reason from the *_unavailable_reason functions); NaN carries
// through the epoch, rank and run aggregates:
//   AU                   no step left in the metric window (steps <= exclude_start + exclude_end):
//                        DLIO reports 0 %;
//   training throughput  fewer than 3 steps (DLIO's len - 2 makes it 0, or negative), or no step
//                        left in the metric window (no time was measured);
//   eval throughput      no step.
#ifndef LARDER_APPS_LARDER_BENCH_METRICS_BLOCK_METRICS_HPP_
#define LARDER_APPS_LARDER_BENCH_METRICS_BLOCK_METRICS_HPP_

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace larder::bench {

struct BlockTimes {
  double start = 0.0;  // seconds, any one clock
  double end = 0.0;
  std::vector<double> load;
  std::vector<double> proc;
  std::vector<double> compute;
};

struct AuRate {
  double au_percent = 0.0;
  double throughput = 0.0;  // samples/s of this rank
};

struct MeanStd {
  double mean = 0.0;
  double stdev = 0.0;
};

struct MetricWindow {
  std::int64_t steps = 0;  // the expected steps (max_steps or total_training_steps)
  int exclude_start = 1;
  int exclude_end = 0;
};

// sum(v[start:stop]) with Python slice semantics; no stop means to the end.
double slice_sum(const std::vector<double>& v, std::int64_t start,
                 std::optional<std::int64_t> stop = std::nullopt);
// v[start:stop] with Python slice semantics.
std::vector<double> slice(const std::vector<double>& v, std::int64_t start,
                          std::optional<std::int64_t> stop = std::nullopt);

// Not available (see above).
inline constexpr double kNotAvailable = std::numeric_limits<double>::quiet_NaN();
inline bool available(double v) noexcept {
  return !std::isnan(v);
}

// Steps inside the metric window [exclude_start, steps - 1 - exclude_end].
std::int64_t window_steps(const MetricWindow& w);
// Why AU, or the training throughput, is not available for a block of `w.steps` steps; nullopt
// when it is.
std::optional<std::string> au_unavailable_reason(const MetricWindow& w);
std::optional<std::string> train_throughput_unavailable_reason(const MetricWindow& w);

AuRate train_block_metrics(const BlockTimes& b, const MetricWindow& w, std::int64_t batch);
AuRate eval_metrics(const BlockTimes& b, const MetricWindow& w, std::int64_t batch_eval);

// end_train: blocks weighted by their step counts (len(proc)); zero when no steps.
// A block whose value is not available makes the epoch's not available.
AuRate epoch_metrics(std::span<const AuRate> blocks, std::span<const std::size_t> steps);

// np.mean and np.std (ddof 0); zeros for an empty span; not available when any value is not.
MeanStd mean_std(std::span<const double> values);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_METRICS_BLOCK_METRICS_HPP_
