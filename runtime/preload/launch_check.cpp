// When the library loads in a task that srun started with an MPI plugin other than the one this
// build's MPI needs, says so once (task 0), at warn: the tasks do not form one MPI job, so they
// cannot share a cache (docs/user-guide.md, "Running under Slurm").
//
// What srun sets (Slurm 22.05, checked on a one-host cluster): every task of a job step gets
// SLURM_STEP_ID, SLURM_PROCID and SLURM_STEP_NUM_TASKS (a batch script itself has SLURM_PROCID
// but no SLURM_STEP_ID); --mpi=pmi2 adds PMI_FD, PMI_RANK, PMI_SIZE and PMI_JOBID, which
// MPICH's PMI client reads; --mpi=pmix adds PMIX_RANK, PMIX_NAMESPACE and the PMIx server's
// variables, which Open MPI reads. Either makes the task a rank (launched_by_mpiexec), but MPICH
// (Debian's 4.0.2) makes each task a 1-process job under pmix, and Open MPI (4.1.4) fails in
// MPI_Init under pmi2. Without any plugin no launcher variable is set, and the preload's
// "not started by an MPI launcher" message says what to do.
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"

namespace larder::preload {
namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

#if defined(OPEN_MPI)
constexpr const char* kMpiName = "Open MPI";
constexpr const char* kPlugin = "pmix";
constexpr const char* kPluginVariable = "PMIX_RANK";
constexpr const char* kWrong = "pmi2";
#else
constexpr const char* kMpiName = "MPICH";
constexpr const char* kPlugin = "pmi2";
constexpr const char* kPluginVariable = "PMI_FD";
constexpr const char* kWrong = "pmix";
#endif

void check_srun_plugin() noexcept {
  if (!env_set("SLURM_STEP_ID") || env_set(kPluginVariable) || !mpi_hooks::launched_by_mpiexec() ||
      mpi_hooks::is_worker_process() || !Runtime::instance().requested()) {
    return;
  }
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* task = std::getenv("SLURM_PROCID");
  if (tasks == nullptr || std::atol(tasks) < 2 || task == nullptr || std::string_view(task) != "0")
    return;
  LARDER_LOG_WARN(
      "srun started this step's {} tasks with --mpi={}, but Larder's {} build needs --mpi={}: "
      "the tasks are not one MPI job and do not share a cache. Launch with srun --mpi={} (or "
      "SLURM_MPI_TYPE={}); Larder's MPICH build runs under --mpi=pmi2, its Open MPI build under "
      "--mpi=pmix",
      tasks, env_set("SLURM_MPI_TYPE") ? std::getenv("SLURM_MPI_TYPE") : kWrong, kMpiName, kPlugin,
      kPlugin, kPlugin);
}

[[gnu::constructor]] void on_load() {
  check_srun_plugin();
}

}  // namespace
}  // namespace larder::preload
