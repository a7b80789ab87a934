// The result files of `train`, with DLIO's names and field names, in --output DIR:
//   summary.json            rank 0: start, end, num_accelerators, num_hosts, hostname, metric{..},
//                           num_files_train/eval, num_samples_per_file, host_* (per node),
//                           potential_caching, data_size_per_host_GB, epochs; plus "larder":
//                           PFS bytes per epoch, bytes read, seconds and Larder counters per epoch
//   {rank}_per_epoch_stats.json  every rank: its {epoch: {start, end, duration, block1{..},
//                           eval{..}}}
//   {rank}_output.json      every rank: its per-step load/proc/compute, au and throughput
//   (dlio.log, rank 0's lines, and .hydra/ are written by main.cpp)
// and, on rank 0, DLIO's [METRIC] block and a per-epoch table with the PFS bytes. Collective.
#ifndef LARDER_APPS_LARDER_BENCH_OUTPUT_RESULTS_HPP_
#define LARDER_APPS_LARDER_BENCH_OUTPUT_RESULTS_HPP_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/metrics/run_metrics.hpp"
#include "apps/larder-bench/output/console.hpp"
#include "apps/larder-bench/train/run_record.hpp"

namespace larder::bench {

struct ResultsContext {
  std::string output_dir;
  std::string io_name;  // posix, larder, preload, hdf5
};

// Sums over ranks of one epoch (rank 0's view).
struct EpochTotals {
  double seconds = 0.0;         // rank 0's epoch time
  std::uint64_t app_bytes = 0;  // read by the application, all ranks
  std::uint64_t eval_bytes = 0;
  std::optional<LarderCounters> larder;  // all ranks, when every rank had Larder running
};

struct RunTotals {
  RunMetrics metrics;
  std::vector<EpochTotals> epochs;
  std::vector<double> host_memory_gb;  // per node
  std::vector<int> host_cpu_count;     // per node
};

// Collective: every rank's record summed or averaged at rank 0.
RunTotals aggregate_run(const Workload& w, const MpiWorld& world, const RunRecord& run);

nlohmann::ordered_json summary_json(const Workload& w, const MpiWorld& world, const RunRecord& run,
                                    const RunTotals& totals, const ResultsContext& ctx);
// This rank's epochs (DLIO writes one per rank: {rank}_per_epoch_stats.json).
nlohmann::ordered_json per_epoch_stats_json(const RunRecord& run);
nlohmann::ordered_json rank_output_json(const MpiWorld& world, const RunRecord& run);

Status write_results(const Workload& w, const MpiWorld& world, const RunRecord& run,
                     const ResultsContext& ctx, Console& console);

// Writes `j` (4-space indent, as DLIO's json.dump(indent=4)) to `path`.
Status write_json_file(const std::string& path, const nlohmann::ordered_json& j);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_OUTPUT_RESULTS_HPP_
