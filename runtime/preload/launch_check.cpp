// When the library loads in a task that srun started without the MPI plugin this build's MPI
// needs, says so once (task 0), at warn: the tasks would not form one MPI job, so they cannot
// share a cache (docs/user-guide.md, "Running under Slurm").
//
// What srun sets (Slurm 22.05, checked on a one-host cluster): every task of a job step gets
// SLURM_STEP_ID, SLURM_PROCID and SLURM_STEP_NUM_TASKS (a batch script itself has SLURM_PROCID
// but no SLURM_STEP_ID); --mpi=pmi2 adds PMI_FD, PMI_RANK, PMI_SIZE and PMI_JOBID, which
// MPICH's PMI client reads; --mpi=pmix adds PMIX_RANK, PMIX_NAMESPACE and the PMIx server's
// variables, which Open MPI reads. MPICH (Debian's 4.0.2) makes every task a 1-process job
// under --mpi=none or pmix; Open MPI (4.1.4) fails in MPI_Init under none or pmi2. A process's
// role (runtime/mpi_hooks/lifecycle.cpp, launched_by_mpiexec) is decided from PMI_RANK/PMI_FD
// and PMIX_RANK, as under mpiexec.
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <string_view>

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
#else
constexpr const char* kMpiName = "MPICH";
constexpr const char* kPlugin = "pmi2";
constexpr const char* kPluginVariable = "PMI_FD";
#endif

void check_srun_launch() noexcept {
  if (!env_set("SLURM_STEP_ID") || !mpi_hooks::activation_requested() ||
      mpi_hooks::is_worker_process() || env_set(kPluginVariable)) {
    return;
  }
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* task = std::getenv("SLURM_PROCID");
  if (tasks == nullptr || std::atol(tasks) < 2 || task == nullptr || std::string_view(task) != "0")
    return;
  const char* type = std::getenv("SLURM_MPI_TYPE");
  LARDER_LOG_WARN(
      "srun started this step's {} tasks without the MPI plugin Larder's {} build needs (srun "
      "--mpi={}; this step: {}): each task is an MPI job of its own, so the tasks do not share a "
      "cache ({}). Launch with srun --mpi={} (or set SLURM_MPI_TYPE={}); Larder's Open MPI build "
      "runs under --mpi=pmix, its MPICH build under --mpi=pmi2",
      tasks, kMpiName, kPlugin,
      type != nullptr && *type != '\0' ? std::string("--mpi=") + type : "no --mpi",
      mpi_hooks::launched_by_mpiexec() ? "each starts Larder alone" : "Larder stays off", kPlugin,
      kPlugin);
}

[[gnu::constructor]] void on_load() {
  check_srun_launch();
}

}  // namespace
}  // namespace larder::preload
