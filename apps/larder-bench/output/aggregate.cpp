// aggregate_run (results.hpp): DLIO's end_run() reductions, plus the byte and Larder counters.
#include "apps/larder-bench/output/host_info.hpp"
#include "apps/larder-bench/output/results.hpp"

namespace larder::bench {

RunTotals aggregate_run(const Workload& w, const MpiWorld& world, const RunRecord& run) {
  RunTotals t;
  const std::size_t n = run.epochs.size();
  std::vector<double> rates;          // per epoch: au, throughput, eval au, eval throughput
  std::vector<std::uint64_t> counts;  // per epoch: app bytes, eval bytes, Larder counters
  bool have_larder = true;
  for (const EpochRecord& e : run.epochs) {
    rates.insert(rates.end(), {e.metrics.au_percent, e.metrics.throughput,
                               e.eval ? e.eval->metrics.au_percent : 0.0,
                               e.eval ? e.eval->metrics.throughput : 0.0});
    counts.push_back(e.block.bytes);
    counts.push_back(e.eval ? e.eval->bytes : 0);
    const LarderCounters c = e.larder.value_or(LarderCounters{});
    counts.insert(counts.end(), c.begin(), c.end());
    have_larder = have_larder && e.larder.has_value();
  }
  have_larder = world.all_ok(have_larder);
  const std::vector<double> rate_sums = world.sum_at_root(rates);
  const std::vector<std::uint64_t> count_sums = world.sum_at_root(counts);
  const std::size_t stride = 2 + kLarderCounterPaths.size();
  const auto ranks = static_cast<double>(world.size());
  for (std::size_t i = 0; i < n; ++i) {
    t.metrics.train_au.push_back(rate_sums[4 * i] / ranks);
    t.metrics.train_throughput.push_back(rate_sums[4 * i + 1]);
    if (run.epochs[i].eval) {
      t.metrics.eval_au.push_back(rate_sums[4 * i + 2] / ranks);
      t.metrics.eval_throughput.push_back(rate_sums[4 * i + 3]);
    }
    EpochTotals e;
    e.seconds = run.epochs[i].seconds;
    e.app_bytes = count_sums[stride * i];
    e.eval_bytes = count_sums[stride * i + 1];
    if (have_larder) {
      LarderCounters c{};
      for (std::size_t k = 0; k < c.size(); ++k) c[k] = count_sums[stride * i + 2 + k];
      e.larder = c;
    }
    t.epochs.push_back(e);
  }
  // Why a metric is not available (the same on every rank: every rank takes the same steps).
  const auto window = [&](std::int64_t steps) {
    return MetricWindow{steps, w.metric.exclude_start_steps, w.metric.exclude_end_steps};
  };
  for (const EpochRecord& e : run.epochs) {
    if (!t.metrics.train_au_na)
      t.metrics.train_au_na = au_unavailable_reason(window(e.block.steps));
    if (!t.metrics.train_throughput_na) {
      t.metrics.train_throughput_na = train_throughput_unavailable_reason(window(e.block.steps));
    }
    if (!e.eval) continue;
    if (!t.metrics.eval_au_na) t.metrics.eval_au_na = au_unavailable_reason(window(e.eval->steps));
    if (!t.metrics.eval_throughput_na && e.eval->steps == 0) {
      t.metrics.eval_throughput_na =
          "no evaluation step (too few evaluation samples for one batch "
          "of batch_size_eval per rank)";
    }
  }
  t.metrics.do_eval = w.workflow.evaluation;
  t.metrics.au_threshold = w.metric.au;
  t.metrics.record_length = w.dataset.record_length;

  std::vector<double> memory(static_cast<std::size_t>(world.nodes()), 0.0);
  std::vector<double> cpus(static_cast<std::size_t>(world.nodes()), 0.0);
  if (world.local_rank() == 0) {
    memory[static_cast<std::size_t>(world.node_index())] = host_memory_gib();
    cpus[static_cast<std::size_t>(world.node_index())] = host_cpu_count();
  }
  t.host_memory_gb = world.sum_at_root(memory);
  for (double c : world.sum_at_root(cpus)) t.host_cpu_count.push_back(static_cast<int>(c));
  return t;
}

}  // namespace larder::bench
