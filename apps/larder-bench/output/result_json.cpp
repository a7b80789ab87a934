// The JSON documents of results.hpp, with DLIO's field names (statscounter.py).
#include <fmt/format.h>

#include "apps/larder-bench/output/host_info.hpp"
#include "apps/larder-bench/output/results.hpp"

namespace larder::bench {
namespace {

std::string two_decimals(double seconds) {
  return fmt::format("{:.2f}", seconds);
}

nlohmann::ordered_json phase_stats(const PhaseRecord& p) {
  return {{"start", p.start_ts},
          {"end", p.end_ts},
          {"duration", two_decimals(p.times.end - p.times.start)}};
}

nlohmann::ordered_json larder_json(const RunTotals& t, const ResultsContext& ctx) {
  nlohmann::ordered_json l;
  l["io"] = ctx.io_name;
  const bool counted = !t.epochs.empty() && t.epochs.front().larder.has_value();
  l["pfs_bytes_source"] = counted ? "larder pfs.bytes_read" : "application reads";
  nlohmann::ordered_json pfs = nlohmann::ordered_json::array();
  nlohmann::ordered_json app = nlohmann::ordered_json::array();
  nlohmann::ordered_json secs = nlohmann::ordered_json::array();
  nlohmann::ordered_json counters = nlohmann::ordered_json::array();
  for (const EpochTotals& e : t.epochs) {
    pfs.push_back(e.larder ? (*e.larder)[0] : e.app_bytes + e.eval_bytes);
    app.push_back(e.app_bytes + e.eval_bytes);
    secs.push_back(e.seconds);
    if (e.larder) {
      nlohmann::ordered_json c = nlohmann::ordered_json::object();
      for (std::size_t k = 0; k < kLarderCounterPaths.size(); ++k) {
        c[std::string(kLarderCounterPaths[k])] = (*e.larder)[k];
      }
      counters.push_back(c);
    }
  }
  l["pfs_bytes_per_epoch"] = pfs;
  l["app_bytes_per_epoch"] = app;
  l["epoch_seconds"] = secs;
  if (counted) l["counters_per_epoch"] = counters;
  return l;
}

}  // namespace

nlohmann::ordered_json summary_json(const Workload& w, const MpiWorld& world, const RunRecord& run,
                                    const RunTotals& t, const ResultsContext& ctx) {
  nlohmann::ordered_json s;
  s["start"] = run.start_ts;
  s["end"] = run.end_ts;
  s["num_accelerators"] = world.size();
  s["num_hosts"] = world.size() / world.ranks_per_node();
  s["hostname"] = host_name();
  s["metric"] = metric_json(t.metrics);
  s["num_files_train"] = w.dataset.num_files_train;
  s["num_files_eval"] = w.dataset.num_files_eval;
  s["num_samples_per_file"] = w.dataset.num_samples_per_file;
  s["host_cpu_count"] = t.host_cpu_count;
  s["host_processor_name"] = processor_name();
  const double per_host =
      static_cast<double>(world.ranks_per_node() * w.dataset.num_samples_per_file *
                          w.dataset.num_files_train / world.size()) *
      w.dataset.record_length / 1024.0 / 1024.0 / 1024.0;
  nlohmann::ordered_json caching = nlohmann::ordered_json::array();
  for (double gb : t.host_memory_gb) caching.push_back(gb <= per_host ? 0 : 1);
  s["potential_caching"] = caching;
  s["host_cpuinfo"] = proc_file_dict("/proc/cpuinfo");
  s["host_meminfo"] = proc_file_dict("/proc/meminfo");
  s["host_memory_GB"] = t.host_memory_gb;
  s["data_size_per_host_GB"] = per_host;
  s["epochs"] = run.epochs.size();
  s["larder"] = larder_json(t, ctx);
  return s;
}

nlohmann::ordered_json per_epoch_stats_json(const RunRecord& run) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const EpochRecord& e : run.epochs) {
    nlohmann::ordered_json ep;
    ep["start"] = e.start_ts;
    ep["block1"] = phase_stats(e.block);
    ep["end"] = e.end_ts;
    ep["duration"] = two_decimals(e.seconds);
    if (e.eval) ep["eval"] = phase_stats(*e.eval);
    j[std::to_string(e.epoch)] = ep;
  }
  return j;
}

nlohmann::ordered_json rank_output_json(const MpiWorld& world, const RunRecord& run) {
  nlohmann::ordered_json j;
  j["host_memory_GB"] = host_memory_gib();
  j["host_cpu_count"] = host_cpu_count();
  j["host_processor_name"] = processor_name();
  j["rank"] = world.rank();
  const nlohmann::ordered_json meminfo = proc_file_dict("/proc/meminfo");
  for (const EpochRecord& e : run.epochs) {
    nlohmann::ordered_json ep;
    for (const char* kind : {"load", "proc", "compute", "au", "throughput"}) {
      ep[kind] = nlohmann::ordered_json::object();
    }
    auto add = [&](const std::string& key, const PhaseRecord& p) {
      ep["load"][key] = p.times.load;
      ep["proc"][key] = p.times.proc;
      ep["compute"][key] = p.times.compute;
      ep["au"][key] = metric_value(p.metrics.au_percent);
      ep["throughput"][key] = metric_value(p.metrics.throughput);
    };
    add("block1", e.block);
    if (e.eval) add("eval", *e.eval);
    ep["host_meminfo"] = meminfo;
    j[std::to_string(e.epoch)] = ep;
  }
  j["hostname"] = host_name();
  return j;
}

}  // namespace larder::bench
