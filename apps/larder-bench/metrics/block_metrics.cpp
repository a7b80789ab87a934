#include "apps/larder-bench/metrics/block_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace larder::bench {
namespace {

std::int64_t clamp_index(std::int64_t i, std::int64_t len) {
  if (i < 0) i += len;
  return std::clamp<std::int64_t>(i, 0, len);
}

// T_block minus the proc time of the excluded steps: the denominator of AU and throughput.
double measured_time(const BlockTimes& b, std::int64_t s, std::int64_t e) {
  return (b.end - b.start) - slice_sum(b.proc, 0, s) - slice_sum(b.proc, e + 1);
}

}  // namespace

std::vector<double> slice(const std::vector<double>& v, std::int64_t start,
                          std::optional<std::int64_t> stop) {
  const auto len = static_cast<std::int64_t>(v.size());
  const std::int64_t a = clamp_index(start, len);
  const std::int64_t b = stop ? clamp_index(*stop, len) : len;
  if (b <= a) return {};
  return {v.begin() + a, v.begin() + b};
}

double slice_sum(const std::vector<double>& v, std::int64_t start,
                 std::optional<std::int64_t> stop) {
  const std::vector<double> part = slice(v, start, stop);
  return std::accumulate(part.begin(), part.end(), 0.0);
}

std::int64_t window_steps(const MetricWindow& w) {
  const std::int64_t s = std::max<std::int64_t>(w.exclude_start, 0);
  const std::int64_t e = w.steps - 1 - w.exclude_end;
  return std::max<std::int64_t>(e - s + 1, 0);
}

std::optional<std::string> au_unavailable_reason(const MetricWindow& w) {
  if (window_steps(w) > 0) return std::nullopt;
  return fmt::format(
      "no step left in the metric window: {} step(s) per epoch, and "
      "output.metric.exclude_start_steps={} and exclude_end_steps={} leave none; DLIO reports 0",
      w.steps, w.exclude_start, w.exclude_end);
}

std::optional<std::string> train_throughput_unavailable_reason(const MetricWindow& w) {
  if (w.steps < 3) {
    return fmt::format(
        "{} step(s) per epoch: DLIO's throughput, (steps - 2) / time * batch_size, needs 3 or "
        "more; DLIO reports {}",
        w.steps, w.steps == 2 ? "0" : "a negative rate");
  }
  if (window_steps(w) == 0) {
    return fmt::format(
        "no step left in the metric window (output.metric.exclude_start_steps={}, "
        "exclude_end_steps={}): no time was measured",
        w.exclude_start, w.exclude_end);
  }
  return std::nullopt;
}

AuRate train_block_metrics(const BlockTimes& b, const MetricWindow& w, std::int64_t batch) {
  const std::int64_t s = w.exclude_start;
  const std::int64_t e = w.steps - 1 - w.exclude_end;
  const double compute = slice_sum(b.compute, s, e + 1);
  const double time = measured_time(b, s, e);
  AuRate r;
  if (au_unavailable_reason(w)) {
    r.au_percent = kNotAvailable;
  } else {
    r.au_percent = compute == 0.0 ? 0.0 : 100.0 * compute / time;
  }
  if (train_throughput_unavailable_reason(w)) {
    r.throughput = kNotAvailable;
  } else {
    r.throughput =
        (static_cast<double>(b.compute.size()) - 2.0) / time * static_cast<double>(batch);
  }
  return r;
}

AuRate eval_metrics(const BlockTimes& b, const MetricWindow& w, std::int64_t batch_eval) {
  const std::int64_t s = w.exclude_start;
  const std::int64_t e = w.steps - 1 - w.exclude_end;
  const double compute = slice_sum(b.compute, s, e + 1);
  AuRate r;
  if (au_unavailable_reason(w)) {
    r.au_percent = kNotAvailable;
  } else {
    r.au_percent = compute == 0.0 ? 0.0 : 100.0 * compute / measured_time(b, s, e);
  }
  r.throughput = b.compute.empty() ? kNotAvailable
                                   : static_cast<double>(b.compute.size()) / (b.end - b.start) *
                                         static_cast<double>(batch_eval);
  return r;
}

AuRate epoch_metrics(std::span<const AuRate> blocks, std::span<const std::size_t> steps) {
  double total_steps = 0.0;
  AuRate out;
  for (std::size_t i = 0; i < blocks.size() && i < steps.size(); ++i) {
    const auto n = static_cast<double>(steps[i]);
    out.au_percent += blocks[i].au_percent * n;
    out.throughput += blocks[i].throughput * n;
    total_steps += n;
  }
  if (total_steps == 0.0) return {};
  out.au_percent /= total_steps;
  out.throughput /= total_steps;
  return out;
}

MeanStd mean_std(std::span<const double> values) {
  if (values.empty()) return {};
  const auto n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double sq = 0.0;
  for (double v : values) sq += (v - mean) * (v - mean);
  return {mean, std::sqrt(sq / n)};
}

}  // namespace larder::bench
