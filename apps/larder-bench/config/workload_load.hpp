// Reading a Workload from DLIO workload YAML, with `--set key=value` overrides.
//
//   auto w = load_workload_file("configs/unet3d_demo.yaml", {"train.epochs=2"});
// Overrides use DLIO's dotted names (dataset.data_folder=/x); the Hydra spellings
// ++workload.dataset.data_folder=/x and workload.dataset.data_folder=/x are accepted too. The
// value is parsed as YAML, so `--set train.computation_time="{mean: 0.1, stdev: 0.01}"` works.
#ifndef LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_LOAD_HPP_
#define LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_LOAD_HPP_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/config/workload.hpp"

namespace larder::bench {

struct LoadedWorkload {
  Workload workload;
  YAML::Node tree;                    // the YAML after overrides (written to .hydra/config.yaml)
  std::vector<std::string> warnings;  // unknown keys, ignored features
};

// Applies one "key=value" override to the tree (creating maps on the way).
Status apply_override(YAML::Node& tree, const std::string& assignment);

// Maps a tree (DLIO's schema) to a Workload and checks it.
Result<LoadedWorkload> load_workload(YAML::Node tree);

Result<LoadedWorkload> load_workload_file(const std::string& path,
                                          const std::vector<std::string>& overrides);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_LOAD_HPP_
