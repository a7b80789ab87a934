// larder-bench: a DLIO-compatible training-I/O emulator (docs/larder-bench.md).
//
//   mpiexec.mpich -n 2 larder-bench generate configs/unet3d_demo.yaml
//   mpiexec.mpich -n 2 larder-bench train configs/unet3d_demo.yaml --io larder --output out
#include <mpi.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>

#include "apps/larder-bench/cli.hpp"
#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/config/workload_load.hpp"
#include "apps/larder-bench/data/generator.hpp"
#include "apps/larder-bench/data/output_file.hpp"
#include "apps/larder-bench/io/io_setup.hpp"
#include "apps/larder-bench/io/verify.hpp"
#include "apps/larder-bench/output/results.hpp"
#include "apps/larder-bench/train/trainer.hpp"

namespace larder::bench {
namespace {

// Hydra's record of the run, which MLPerf Storage's report tools read.
Status write_hydra_files(const CliOptions& cli, const LoadedWorkload& loaded) {
  const std::string dir = cli.output_dir + "/.hydra";
  std::error_code err;
  std::filesystem::create_directories(dir, err);
  if (err) return Status::error(fmt::format("cannot create {}: {}", dir, err.message()));
  YAML::Node config;
  config["workload"] = loaded.tree;
  YAML::Node overrides(YAML::NodeType::Sequence);
  for (const std::string& o : cli.overrides) overrides.push_back("++workload." + o);
  for (const auto& [name, node] :
       {std::pair{"config.yaml", config}, std::pair{"overrides.yaml", overrides}}) {
    YAML::Emitter out;
    out << node;
    auto file = OutputFile::create(dir + "/" + name);
    if (!file.ok()) return file.status();
    if (Status s = file->write(std::string(out.c_str()) + "\n"); !s.ok()) return s;
    if (Status s = file->close(); !s.ok()) return s;
  }
  return {};
}

// Collective: rank 0 creates the output directory and starts DLIO's log file there (dlio.log).
Status prepare_output(const std::string& dir, const MpiWorld& world, Console& console) {
  Status local;
  if (world.root()) {
    std::error_code err;
    std::filesystem::create_directories(dir, err);
    local = err ? Status::error(fmt::format("cannot create {}: {}", dir, err.message()))
                : console.start_log(dir + "/dlio.log");
  }
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("rank 0 could not prepare the output directory") : local;
  }
  return {};
}

Status train(const CliOptions& cli, const LoadedWorkload& loaded, const MpiWorld& world,
             Console& console) {
  const Workload& w = loaded.workload;
  if (Status s = prepare_output(cli.output_dir, world, console); !s.ok()) return s;
  auto io = start_io(cli.io, w, world, console);
  if (!io.ok()) return io.status();
  Trainer trainer(w, world, console, *io->backend, io->larder_io, io->larder_counters);
  Status s = trainer.prepare();
  if (s.ok()) {
    const RunRecord run = trainer.run();
    s = write_results(w, world, run, {cli.output_dir, cli.io_name}, console);
    if (s.ok() && world.root()) s = write_hydra_files(cli, loaded);
  }
  finish_io(io.value(), console);
  if (Status log = console.finish_log(); s.ok()) s = log;
  return s;
}

Status verify(const CliOptions& cli, const Workload& w, const MpiWorld& world, Console& console) {
  if (cli.io == IoMode::kHdf5) {
    return Status::error("verify compares bytes: use --io posix, larder or preload");
  }
  auto io = start_io(cli.io, w, world, console);
  if (!io.ok()) return io.status();
  const Status s = verify_dataset(w, *io->backend, world, console);
  finish_io(io.value(), console);
  return s;
}

Status run(const CliOptions& cli, const MpiWorld& world, Console& console) {
  auto loaded = load_workload_file(cli.workload_path, cli.overrides);
  if (!loaded.ok()) return loaded.status();
  for (const std::string& warning : loaded->warnings) console.warning(warning);
  const Workload& w = loaded->workload;
  console.output(fmt::format("Running larder-bench with {} process(es): {} ({} files of {}, {})",
                             world.size(), cli.workload_path, w.dataset.num_files_train,
                             format_name(w.dataset.format), w.reader.data_loader_name));
  if (cli.command == Command::kVerify) return verify(cli, w, world, console);
  if (cli.command == Command::kGenerate || w.workflow.generate_data) {
    if (Status s = generate_dataset(w, cli.generate, world, console); !s.ok()) return s;
  }
  if (cli.command == Command::kTrain && w.workflow.train) {
    return train(cli, loaded.value(), world, console);
  }
  return {};
}

int main_with_mpi(int argc, char** argv) {
  const MpiWorld world = MpiWorld::create();
  auto cli = parse_command_line(argc, argv);
  if (!cli.ok()) {
    if (world.root())
      fmt::print(stderr, "larder-bench: {}\n(see larder-bench --help)\n", cli.status().message());
    return 2;
  }
  if (cli->command == Command::kHelp) {
    if (world.root()) fmt::print("{}", cli->help_text);
    return 0;
  }
  Console console(world.rank(), cli->progress);
  const Status s = run(cli.value(), world, console);
  if (!s.ok()) {
    console.error(s.message());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace larder::bench

int main(int argc, char** argv) {
  int provided = 0;
  larder::bench::mpi_check(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided),
                           "MPI_Init_thread");
  int rc = 1;
  try {
    rc = larder::bench::main_with_mpi(argc, argv);
  } catch (const std::exception& e) {  // std::bad_alloc, or a third-party library's exception
    fmt::print(stderr, "larder-bench: {}\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
