// RunMetrics: the per-epoch series of a run (already aggregated over ranks: AU averaged,
// throughput summed) and what DLIO derives from them in end_run(): the summary.json "metric"
// object, with DLIO's field names, and the [METRIC] lines.
//   train_io_mean_MB_per_second = mean(throughput) * record_length_bytes / 1024 / 1024  (MiB/s,
//   nominal record size); train_au_meet_expectation = mean AU >= metric.au * 100.
// A value that is not available (NaN, block_metrics.hpp) is written "n/a", and so are the means,
// deviations and verdicts computed from it; the reason goes next to it
// (train_au_na_reason, train_throughput_na_reason, eval_...).
#ifndef LARDER_APPS_LARDER_BENCH_METRICS_RUN_METRICS_HPP_
#define LARDER_APPS_LARDER_BENCH_METRICS_RUN_METRICS_HPP_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace larder::bench {

struct RunMetrics {
  std::vector<double> train_au;          // % per epoch
  std::vector<double> train_throughput;  // samples/s per epoch
  std::vector<double> eval_au;
  std::vector<double> eval_throughput;
  bool do_eval = false;
  double au_threshold = 0.90;
  double record_length = 0.0;
  // Why a series is not available, when it is not (block_metrics.hpp).
  std::optional<std::string> train_au_na;
  std::optional<std::string> train_throughput_na;
  std::optional<std::string> eval_au_na;
  std::optional<std::string> eval_throughput_na;
};

// A metric as DLIO's JSON holds it: the number, or "n/a".
nlohmann::ordered_json metric_value(double v);
// A metric as a line shows it: printf-style with `decimals`, or "n/a".
std::string metric_text(double v, int decimals);

nlohmann::ordered_json metric_json(const RunMetrics& m);
// "Averaged metric over all epochs" and the [METRIC] block, one string per line (without the
// "[METRIC] " prefix for the block lines; the first element is the header).
std::vector<std::string> metric_report_lines(const RunMetrics& m, int accelerators);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_METRICS_RUN_METRICS_HPP_
