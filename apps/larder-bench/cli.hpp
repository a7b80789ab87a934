// The command line (Boost.Program_options):
//   larder-bench generate WORKLOAD.yaml [--set key=value]... [--layout mlperf|head]
//                                       [--npz-zip modern|legacy] [--no-progress]
//   larder-bench train    WORKLOAD.yaml [--set key=value]... [--output DIR]
//                                       [--io posix|larder|preload|hdf5] [--no-progress]
//   larder-bench verify   WORKLOAD.yaml [--set key=value]... [--io posix|larder|preload]
// Run under mpiexec (one rank per simulated accelerator). docs/larder-bench.md has the details.
#ifndef LARDER_APPS_LARDER_BENCH_CLI_HPP_
#define LARDER_APPS_LARDER_BENCH_CLI_HPP_

#include <string>
#include <vector>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/data/generator.hpp"

namespace larder::bench {

enum class Command { kGenerate, kTrain, kVerify, kHelp };
enum class IoMode { kPosix, kLarder, kPreload, kHdf5 };

struct CliOptions {
  Command command = Command::kHelp;
  std::string workload_path;
  std::vector<std::string> overrides;
  std::string output_dir = "output";
  IoMode io = IoMode::kPosix;
  std::string io_name = "posix";
  GenerateOptions generate;
  bool progress = true;
  std::string help_text;
};

Result<CliOptions> parse_command_line(int argc, char** argv);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_CLI_HPP_
