#include "apps/larder-bench/metrics/run_metrics.hpp"

#include <fmt/format.h>

#include "apps/larder-bench/metrics/block_metrics.hpp"

namespace larder::bench {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* verdict(double mean_au, double threshold) {
  return mean_au >= threshold * 100.0 ? "success" : "fail";
}

void add_series(nlohmann::ordered_json& j, const std::string& kind, const std::vector<double>& au,
                const std::vector<double>& tput, const RunMetrics& m) {
  const MeanStd a = mean_std(au);
  const MeanStd t = mean_std(tput);
  j[kind + "_au_percentage"] = au;
  j[kind + "_au_mean_percentage"] = a.mean;
  j[kind + "_au_meet_expectation"] = verdict(a.mean, m.au_threshold);
  j[kind + "_au_stdev_percentage"] = a.stdev;
  j[kind + "_throughput_samples_per_second"] = tput;
  j[kind + "_throughput_mean_samples_per_second"] = t.mean;
  j[kind + "_throughput_stdev_samples_per_second"] = t.stdev;
  j[kind + "_io_mean_MB_per_second"] = t.mean * m.record_length / kMiB;
  j[kind + "_io_stdev_MB_per_second"] = t.stdev * m.record_length / kMiB;
}

}  // namespace

nlohmann::ordered_json metric_json(const RunMetrics& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  add_series(j, "train", m.train_au, m.train_throughput, m);
  if (m.do_eval) add_series(j, "eval", m.eval_au, m.eval_throughput, m);
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
      fmt::format("Training Accelerator Utilization [AU] (%): {:.4f} ({:.4f})", a.mean, a.stdev),
      fmt::format("Training Throughput (samples/second): {:.4f} ({:.4f})", t.mean, t.stdev),
      fmt::format("Training I/O Throughput (MB/second): {:.4f} ({:.4f})", t.mean * mib,
                  t.stdev * mib),
      fmt::format("train_au_meet_expectation: {}", verdict(a.mean, m.au_threshold))};
  if (m.do_eval) {
    const MeanStd ea = mean_std(m.eval_au);
    const MeanStd et = mean_std(m.eval_throughput);
    out.push_back(
        fmt::format("Eval Accelerator Utilization [AU] (%): {:.4f} ({:.4f})", ea.mean, ea.stdev));
    out.push_back(
        fmt::format("Eval Throughput (samples/second): {:.6f} ({:.6f})", et.mean, et.stdev));
    out.push_back(
        fmt::format("Eval Throughput (MB/second): {:.6f} ({:.6f})", et.mean * mib, et.stdev * mib));
    out.push_back(fmt::format("eval_au_meet_expectation: {}", verdict(ea.mean, m.au_threshold)));
  }
  out.emplace_back("==========================================================");
  return out;
}

}  // namespace larder::bench
