#include "apps/larder-bench/metrics/run_metrics.hpp"

#include <fmt/format.h>

#include "apps/larder-bench/metrics/block_metrics.hpp"

namespace larder::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* verdict(double mean_au, double threshold) {
  if (!available(mean_au)) return "n/a";
  return mean_au >= threshold * 100.0 ? "success" : "fail";
}

nlohmann::ordered_json series(const std::vector<double>& values) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (double v : values) a.push_back(metric_value(v));
  return a;
}

void add_series(nlohmann::ordered_json& j, const std::string& kind, const std::vector<double>& au,
                const std::vector<double>& tput, const std::optional<std::string>& au_na,
                const std::optional<std::string>& tput_na, const RunMetrics& m) {
  const MeanStd a = mean_std(au);
  const MeanStd t = mean_std(tput);
  j[kind + "_au_percentage"] = series(au);
  j[kind + "_au_mean_percentage"] = metric_value(a.mean);
  j[kind + "_au_meet_expectation"] = verdict(a.mean, m.au_threshold);
  j[kind + "_au_stdev_percentage"] = metric_value(a.stdev);
  if (au_na) j[kind + "_au_na_reason"] = *au_na;
  j[kind + "_throughput_samples_per_second"] = series(tput);
  j[kind + "_throughput_mean_samples_per_second"] = metric_value(t.mean);
  j[kind + "_throughput_stdev_samples_per_second"] = metric_value(t.stdev);
  j[kind + "_io_mean_MB_per_second"] = metric_value(t.mean * m.record_length / kMiB);
  j[kind + "_io_stdev_MB_per_second"] = metric_value(t.stdev * m.record_length / kMiB);
  if (tput_na) j[kind + "_throughput_na_reason"] = *tput_na;
}

// "mean (stdev)", or "n/a (reason)" when the mean is not available.
std::string mean_and_stdev(const MeanStd& m, double scale, int decimals,
                           const std::optional<std::string>& reason) {
  if (!available(m.mean)) return reason ? "n/a (" + *reason + ")" : "n/a";
  return fmt::format("{} ({})", metric_text(m.mean * scale, decimals),
                     metric_text(m.stdev * scale, decimals));
}

}  // namespace

nlohmann::ordered_json metric_value(double v) {
  if (!available(v)) return "n/a";
  return v;
}

std::string metric_text(double v, int decimals) {
  if (!available(v)) return "n/a";
  return fmt::format("{:.{}f}", v, decimals);
}

nlohmann::ordered_json metric_json(const RunMetrics& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  add_series(j, "train", m.train_au, m.train_throughput, m.train_au_na, m.train_throughput_na, m);
  if (m.do_eval) {
    add_series(j, "eval", m.eval_au, m.eval_throughput, m.eval_au_na, m.eval_throughput_na, m);
  }
  return j;
}

std::vector<std::string> metric_report_lines(const RunMetrics& m, int accelerators) {
  const MeanStd a = mean_std(m.train_au);
  const MeanStd t = mean_std(m.train_throughput);
  const double mib = m.record_length / kMiB;
  std::vector<std::string> out = {
      "Averaged metric over all epochs",
      "==========================================================",
      fmt::format("Number of Simulated Accelerators: {} ", accelerators),
      fmt::format("Training Accelerator Utilization [AU] (%): {}",
                  mean_and_stdev(a, 1.0, 4, m.train_au_na)),
      fmt::format("Training Throughput (samples/second): {}",
                  mean_and_stdev(t, 1.0, 4, m.train_throughput_na)),
      fmt::format("Training I/O Throughput (MB/second): {}", mean_and_stdev(t, mib, 4, {})),
      fmt::format("train_au_meet_expectation: {}", verdict(a.mean, m.au_threshold))};
  if (m.do_eval) {
    const MeanStd ea = mean_std(m.eval_au);
    const MeanStd et = mean_std(m.eval_throughput);
    out.push_back(fmt::format("Eval Accelerator Utilization [AU] (%): {}",
                              mean_and_stdev(ea, 1.0, 4, m.eval_au_na)));
    out.push_back(fmt::format("Eval Throughput (samples/second): {}",
                              mean_and_stdev(et, 1.0, 6, m.eval_throughput_na)));
    out.push_back(fmt::format("Eval Throughput (MB/second): {}", mean_and_stdev(et, mib, 6, {})));
    out.push_back(fmt::format("eval_au_meet_expectation: {}", verdict(ea.mean, m.au_threshold)));
  }
  out.emplace_back("==========================================================");
  return out;
}

}  // namespace larder::bench
