#include "apps/larder-bench/output/results.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "apps/larder-bench/data/output_file.hpp"

namespace larder::bench {
namespace {

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

void print_epoch_table(const RunTotals& t, const ResultsContext& ctx, Console& console) {
  console.output(fmt::format("Per-epoch I/O (--io {}): PFS bytes are {}", ctx.io_name,
                             !t.epochs.empty() && t.epochs.front().larder
                                 ? "what Larder read from the file system"
                                 : "the application's reads (no cache)"));
  console.output(fmt::format("{:>5} {:>9} {:>9} {:>10} {:>10} {:>10} {:>22} {:>7}", "epoch",
                             "seconds", "AU (%)", "samples/s", "read MiB", "PFS MiB",
                             "hits self/node/remote", "misses"));
  for (std::size_t i = 0; i < t.epochs.size(); ++i) {
    const EpochTotals& e = t.epochs[i];
    const double read = static_cast<double>(e.app_bytes + e.eval_bytes) / kBytesPerMiB;
    const double pfs = e.larder ? static_cast<double>((*e.larder)[0]) / kBytesPerMiB : read;
    const std::string hits =
        e.larder ? fmt::format("{}/{}/{}", (*e.larder)[2], (*e.larder)[3], (*e.larder)[4]) : "-";
    const std::string misses = e.larder ? std::to_string((*e.larder)[7]) : "-";
    console.output(fmt::format("{:>5} {:>9.2f} {:>9} {:>10} {:>10.1f} {:>10.1f} {:>22} {:>7}",
                               i + 1, e.seconds, metric_text(t.metrics.train_au[i], 2),
                               metric_text(t.metrics.train_throughput[i], 2), read, pfs, hits,
                               misses));
  }
}

}  // namespace

Status write_json_file(const std::string& path, const nlohmann::ordered_json& j) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  if (Status s = file->write(j.dump(4) + "\n"); !s.ok()) return s;
  return file->close();
}

Status write_results(const Workload& w, const MpiWorld& world, const RunRecord& run,
                     const ResultsContext& ctx, Console& console) {
  const RunTotals totals = aggregate_run(w, world, run);
  Status local;
  if (world.root()) {
    std::error_code err;
    std::filesystem::create_directories(ctx.output_dir, err);
    if (err) {
      local = Status::error(fmt::format("cannot create {}: {}", ctx.output_dir, err.message()));
    }
  }
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("rank 0 could not create the output directory") : local;
  }
  if (world.root()) {
    local =
        write_json_file(ctx.output_dir + "/summary.json", summary_json(w, world, run, totals, ctx));
  }
  if (local.ok()) {
    local = write_json_file(fmt::format("{}/{}_per_epoch_stats.json", ctx.output_dir, world.rank()),
                            per_epoch_stats_json(run));
  }
  if (local.ok()) {
    local = write_json_file(fmt::format("{}/{}_output.json", ctx.output_dir, world.rank()),
                            rank_output_json(world, run));
  }
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("writing results failed on another rank") : local;
  }
  console.output(fmt::format("Saved outputs in {}", ctx.output_dir));
  const std::vector<std::string> lines = metric_report_lines(totals.metrics, world.size());
  console.output(lines.front());
  for (std::size_t i = 1; i < lines.size(); ++i) console.metric(lines[i]);
  print_epoch_table(totals, ctx, console);
  return {};
}

}  // namespace larder::bench
