// Trainer: DLIO's training loop (main.py run/_train/_eval) on every rank.
//
// Per epoch: barrier; block start; for each of the epoch's steps: wait for the next batch
// (load), sleep computation_time (compute), barrier; block end. Then, when due
// (evaluation.eval_after_epoch, epochs_between_evals), an evaluation over the valid/ files with
// eval_time and no barriers. Timings are recorded for DLIO's metrics (block_metrics.hpp), and
// rank 0 prints DLIO's lines. A read error ends the job (MPI_Abort) after printing it: the
// other ranks would otherwise wait in the step barrier forever.
#ifndef LARDER_APPS_LARDER_BENCH_TRAIN_TRAINER_HPP_
#define LARDER_APPS_LARDER_BENCH_TRAIN_TRAINER_HPP_

#include <random>
#include <string>
#include <vector>

#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/io/io_backend.hpp"
#include "apps/larder-bench/output/console.hpp"
#include "apps/larder-bench/train/loader.hpp"
#include "apps/larder-bench/train/run_record.hpp"

namespace larder::bench {

class Trainer {
 public:
  // `larder_io`: the backend is Larder's API; `larder_counters`: Larder serves the reads, so
  // its per-epoch counters are recorded.
  Trainer(const Workload& w, const MpiWorld& world, Console& console, IoBackend& io, bool larder_io,
          bool larder_counters);

  // Lists the dataset (rank 0, broadcast) and checks that every epoch has a step. Collective.
  Status prepare();
  // All epochs. Collective.
  RunRecord run();

  std::int64_t steps() const noexcept { return steps_; }
  std::int64_t eval_steps() const noexcept { return eval_steps_; }

 private:
  EpochRecord run_epoch(int epoch);
  PhaseRecord run_block(int epoch);
  PhaseRecord run_eval(int epoch);
  Result<LoadedBatch> next_or_abort(Loader& loader);
  void print_block(int epoch, const PhaseRecord& block);

  const Workload& w_;
  const MpiWorld& world_;
  Console& console_;
  IoBackend& io_;
  bool larder_io_;
  bool larder_counters_;
  std::vector<std::string> train_files_;
  std::vector<std::string> eval_files_;
  std::int64_t steps_ = 0;
  std::int64_t eval_steps_ = 0;
  std::mt19937_64 rng_;  // computation_time and eval_time draws
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_TRAIN_TRAINER_HPP_
