#include "apps/larder-bench/cli.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <sstream>

namespace larder::bench {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: mpiexec -n N larder-bench generate|train|verify WORKLOAD.yaml [options]\n"
    "  generate  write the workload's dataset (DLIO's names, sizes and formats)\n"
    "  train     run the workload's training loop and report DLIO's metrics\n"
    "  verify    read the dataset through --io and compare with direct reads\n";

Status parse_choices(CliOptions& o, const std::string& io, const std::string& layout,
                     const std::string& npz) {
  if (io == "posix") {
    o.io = IoMode::kPosix;
  } else if (io == "larder") {
    o.io = IoMode::kLarder;
  } else if (io == "preload") {
    o.io = IoMode::kPreload;
  } else if (io == "hdf5") {
    o.io = IoMode::kHdf5;
  } else {
    return Status::error("--io " + io + " is not valid: accepted posix, larder, preload, hdf5");
  }
  o.io_name = io;
  if (layout == "mlperf") {
    o.generate.layout = DlioLayout::kMlperfV2;
  } else if (layout == "head") {
    o.generate.layout = DlioLayout::kHead;
  } else {
    return Status::error("--layout " + layout + " is not valid: accepted mlperf, head");
  }
  if (npz == "modern") {
    o.generate.npz_style = ZipStyle::kModern;
  } else if (npz == "legacy") {
    o.generate.npz_style = ZipStyle::kLegacy;
  } else {
    return Status::error("--npz-zip " + npz + " is not valid: accepted modern, legacy");
  }
  return {};
}

}  // namespace

Result<CliOptions> parse_command_line(int argc, char** argv) {
  CliOptions o;
  std::string command;
  std::string io = "posix";
  std::string layout = "mlperf";
  std::string npz = "modern";
  po::options_description visible("options");
  visible.add_options()("help,h", "show this help")(
      "set", po::value(&o.overrides)->composing(),
      "override a workload key, DLIO's dotted name: --set train.epochs=2 (repeatable)")(
      "output", po::value(&o.output_dir)->default_value("output"),
      "train: directory for summary.json and the other result files")(
      "io", po::value(&io)->default_value("posix"),
      "train: how samples are read: posix, larder (Larder's C API), preload (POSIX under "
      "LD_PRELOAD=liblarder_preload.so), hdf5 (HDF5 API, for the VOL connector)")(
      "layout", po::value(&layout)->default_value("mlperf"),
      "generate: mlperf (mlperf_storage v2.0 files) or head (DLIO main) where they differ")(
      "npz-zip", po::value(&npz)->default_value("modern"),
      "generate: zip headers of CPython >= 3.11.4 (modern) or older (legacy)")(
      "no-progress", "no progress line on stderr (it is shown only on a terminal)")(
      "prefetch",
      "train: hand each epoch's sample order to Larder ahead of the reads (larder_schedule; "
      "the same as --set reader.larder_prefetch=true)");
  po::options_description hidden;
  hidden.add_options()("command", po::value(&command))("workload", po::value(&o.workload_path));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("workload", 1);
  std::ostringstream help;
  help << kUsage << visible;
  o.help_text = help.str();
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || command.empty()) return o;
    o.progress = vm.count("no-progress") == 0;
    if (vm.count("prefetch") != 0) o.overrides.emplace_back("reader.larder_prefetch=true");
  } catch (const po::error& e) {
    return Status::error(e.what());
  }
  if (command == "generate") {
    o.command = Command::kGenerate;
  } else if (command == "train") {
    o.command = Command::kTrain;
  } else if (command == "verify") {
    o.command = Command::kVerify;
  } else {
    return Status::error(
        fmt::format("unknown command '{}': accepted generate, train, verify", command));
  }
  if (o.workload_path.empty()) return Status::error("missing WORKLOAD.yaml");
  if (Status s = parse_choices(o, io, layout, npz); !s.ok()) return s;
  return o;
}

}  // namespace larder::bench
