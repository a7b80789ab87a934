#include "runtime/mpi_hooks/lifecycle.hpp"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/agent/agent_server.hpp"
#include "runtime/agent/channel.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi_hooks {
namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// Binds the agent's socket and names it in the environment; children see it from now on.
void prepare_agent(Runtime& rt) {
  if (rt.agent() != nullptr) return;
  const std::string name = agent::new_agent_name();
  auto server = agent::AgentServer::listen(name);
  if (!server.ok()) {
    LARDER_LOG_WARN("worker processes will read the file system directly: {}",
                    server.status().message());
    // Children must still know they are workers (never ranks: they inherit PMI_FD): the name
    // carries our pid, and connecting to it fails, so they read the file system.
    ::setenv(agent::kEnvName, name.c_str(), 1);
    return;
  }
  ::setenv(agent::kEnvName, (*server)->name().c_str(), 1);
  rt.set_agent(std::move(*server));
}

std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since)
          .count());
}

// Collective over MPI_COMM_WORLD: starts the session on every rank or on none.
bool start_runtime(Runtime& rt) {
  Status agreed = MpiJob::agree(MPI_COMM_WORLD, rt.config_status());
  if (agreed.ok()) agreed = rt.init(MPI_COMM_WORLD, Starter::kHooks);
  if (!agreed.ok()) {
    LARDER_LOG_ERROR("larder could not start, the job runs without the cache: {}",
                     agreed.message());
    if (agent::AgentServer* a = rt.agent()) a->stop();  // its clients read the file system
    return false;
  }
  if (agent::AgentServer* a = rt.agent()) {
    if (Lease s = rt.session()) {
      a->start(s->job_dir().worker_stats_path(s->topology().rank));
      // The loader's audit module asks the agent only from now on: before, a load made while
      // MPI starts would wait for an agent that is not serving yet (runtime/audit).
      ::setenv(agent::kServingEnvName, a->name().c_str(), 1);
    }
  }
  return true;
}

// Stops the session (collective) and then MPI, on the calling thread. Called with life.mu held
// and the phase kRunning; returns PMPI_Finalize's code, or MPI_SUCCESS when MPI is not ours to
// finalize (`finalize_mpi` false).
int stop_here(MpiLife& life, std::unique_lock<std::mutex>& lock, bool finalize_mpi) {
  Runtime& rt = Runtime::instance();
  const bool up = life.runtime_up;
  life.runtime_up = false;
  life.phase.store(Phase::kStopped);  // nobody starts or stops again
  lock.unlock();
  int rc = MPI_SUCCESS;
  {
    ReentryGuard guard;  // the runtime's own calls go straight to the real functions
    if (up) {
      if (Status st = rt.finalize(Starter::kHooks); !st.ok()) {
        LARDER_LOG_ERROR("larder finalize failed: {}", st.message());
      }
    }
    if (finalize_mpi) rc = PMPI_Finalize();
  }
  lock.lock();
  life.changed.notify_all();
  return rc;
}

// Initialises MPI and starts the runtime (the rank's self-initialisation).
void self_init() {
  Runtime& rt = Runtime::instance();
  MpiLife& life = rt.mpi_life();
  int provided = MPI_THREAD_SINGLE;
  const auto started = std::chrono::steady_clock::now();
  const int rc = PMPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  rt.set_mpi_init_ns(elapsed_ns(started));
  if (rc != MPI_SUCCESS) {
    LARDER_LOG_ERROR("MPI_Init_thread failed (error {}): the job runs without the cache", rc);
    std::lock_guard lock(life.mu);
    life.phase.store(Phase::kStopped);
    life.changed.notify_all();
    return;
  }
  const bool up = start_runtime(rt);
  std::lock_guard lock(life.mu);
  life.runtime_up = up;
  life.larder_owns_mpi = true;
  life.phase.store(Phase::kRunning);
  life.changed.notify_all();
}

// Built-in launcher wrappers (lifecycle.hpp).
constexpr std::string_view kExecWrappers[] = {
    "sh",      "bash",    "dash",      "zsh",         "ksh",    "mksh",    "csh",    "tcsh",
    "fish",    "busybox", "env",       "nice",        "nohup",  "timeout", "stdbuf", "setsid",
    "chrt",    "ionice",  "taskset",   "numactl",     "time",   "pyenv",   "flock",  "prlimit",
    "unshare", "setpriv", "apptainer", "singularity", "ch-run", "shifter"};
constexpr std::string_view kForkingWrappers[] = {"starter", "starter-suid", "bwrap"};

}  // namespace

void set_openmpi_defaults() noexcept {
#ifdef OPEN_MPI
  // Open MPI's default one-sided component crashes in MPI_Compare_and_swap here (design brief).
  if (!env_set("OMPI_MCA_osc")) ::setenv("OMPI_MCA_osc", "ucx", 0);
#endif
}

bool launched_by_mpiexec() noexcept {
  return env_set("PMI_RANK") || env_set("PMI_FD") || env_set("OMPI_COMM_WORLD_RANK") ||
         env_set("PMIX_RANK");
}

bool is_worker_process() noexcept {
  const char* name = std::getenv(agent::kEnvName);
  if (name == nullptr || *name == '\0') return false;
  return agent::agent_pid(name) != ::getpid();
}

Wrapper wrapper_kind(std::string_view name) noexcept {
  if (name.empty()) return Wrapper::kNone;
  const Config& config = Runtime::instance().config();
  for (std::string_view w : kForkingWrappers) {
    if (name == w) return Wrapper::kFork;
  }
  for (const std::string& extra : config.forking_wrappers) {
    if (name == extra) return Wrapper::kFork;
  }
  for (std::string_view w : kExecWrappers) {
    if (name == w) return Wrapper::kExec;
  }
  // A versioned interpreter name (bash5.2) is still that shell.
  for (std::string_view w : {"bash", "zsh", "ksh"}) {
    if (name.starts_with(w) && name.size() > w.size() &&
        name.find_first_not_of("0123456789.", w.size()) == std::string_view::npos) {
      return Wrapper::kExec;
    }
  }
  for (const std::string& extra : config.wrappers) {
    if (name == extra) return Wrapper::kExec;
  }
  return Wrapper::kNone;
}

void start_self_init() noexcept {
  try {
    Runtime& rt = Runtime::instance();
    MpiLife& life = rt.mpi_life();
    {
      std::lock_guard lock(life.mu);
      if (life.phase.load() != Phase::kIdle) return;
      set_openmpi_defaults();
      prepare_agent(rt);
      life.pid.store(::getpid());
      life.phase.store(Phase::kStarting);
    }
    // MPI starts here, on the thread that loads the library, before the program runs, and not
    // on a thread of its own beside the program: the MPI library (hwloc, UCX, Open MPI's opal)
    // and Larder add environment variables while they start, and the C library's environment
    // cannot change while another thread reads it (setenv reallocates the array that getenv,
    // and a program that copies its environment at start, such as Python's os.environ, walk).
    // Seen here: a rank's getenv inside MPI_Init crashed while Python's start wrote the
    // environment, and Python's start crashed while MPI_Init wrote it.
    ReentryGuard guard;  // the runtime's own calls go straight to the real functions
    self_init();
  } catch (...) {
    LARDER_LOG_ERROR("cannot start larder; the job runs without the cache");
    Runtime::instance().mpi_life().phase.store(Phase::kStopped);
  }
}

bool wait_until_started(std::chrono::milliseconds timeout) noexcept {
  MpiLife& life = Runtime::instance().mpi_life();
  const Phase now = life.phase.load(std::memory_order_acquire);
  if (now != Phase::kStarting) return now == Phase::kRunning && Runtime::instance().active();
  try {
    std::unique_lock lock(life.mu);
    life.changed.wait_for(lock, timeout, [&] { return life.phase.load() != Phase::kStarting; });
    return life.phase.load() == Phase::kRunning && life.runtime_up;
  } catch (...) {
    return false;
  }
}

bool owns_mpi_start() noexcept {
  MpiLife& life = Runtime::instance().mpi_life();
  if (life.pid.load(std::memory_order_relaxed) != ::getpid()) return false;
  const Phase p = life.phase.load(std::memory_order_acquire);
  return p == Phase::kStarting || p == Phase::kRunning;
}

int on_init(int* argc, char*** argv, int required, int* provided, bool thread_variant) noexcept {
  Runtime& rt = Runtime::instance();
  if (rt.role() == Role::kWorker || is_worker_process()) {
    LARDER_LOG_ERROR(
        "this process is a worker of an MPI rank (forked, spawned or exec'd by it); it must not "
        "initialise MPI, which would break the rank's connection to its launcher");
    return MPI_ERR_OTHER;
  }
  if (!rt.requested()) {
    return thread_variant ? PMPI_Init_thread(argc, argv, required, provided)
                          : PMPI_Init(argc, argv);
  }
  try {
    MpiLife& life = rt.mpi_life();
    std::unique_lock lock(life.mu);
    life.changed.wait(lock, [&] { return life.phase.load() != Phase::kStarting; });
    if (life.phase.load() == Phase::kRunning && life.larder_owns_mpi) {
      if (provided != nullptr) PMPI_Query_thread(provided);  // MPI is ready: say so
      return MPI_SUCCESS;
    }
    if (life.phase.load() != Phase::kIdle) {
      lock.unlock();  // a second MPI_Init, or one after MPI_Finalize: let MPI report it
      return thread_variant ? PMPI_Init_thread(argc, argv, required, provided)
                            : PMPI_Init(argc, argv);
    }
    int got = MPI_THREAD_SINGLE;
    const auto started = std::chrono::steady_clock::now();
    const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got);
    rt.set_mpi_init_ns(elapsed_ns(started));
    if (rc != MPI_SUCCESS) return rc;
    if (provided != nullptr) *provided = got;
    life.pid.store(::getpid());
    life.phase.store(Phase::kStarting);
    rt.set_role(Role::kRank);
    {
      ReentryGuard guard;  // the runtime's own calls go straight to the real functions
      life.runtime_up = start_runtime(rt);
    }
    life.phase.store(Phase::kRunning);
    life.changed.notify_all();
    return MPI_SUCCESS;
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

int on_finalize() noexcept {
  try {
    MpiLife& life = Runtime::instance().mpi_life();
    std::unique_lock lock(life.mu);
    life.changed.wait(lock, [&] { return life.phase.load() != Phase::kStarting; });
    if (life.phase.load() != Phase::kRunning) {
      lock.unlock();
      return PMPI_Finalize();
    }
    return stop_here(life, lock, /*finalize_mpi=*/true);
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

void on_exit() noexcept {
  Runtime& rt = Runtime::instance();
  MpiLife& life = rt.mpi_life();
  if (life.pid.load() != ::getpid()) return;  // a child, or nothing was started here
  try {
    std::unique_lock lock(life.mu);
    // MPI_Init waits for every rank: one that never started (its program never loaded Larder)
    // leaves the others waiting. Exit anyway after LARDER_TIMEOUT; the stuck thread goes with
    // the process.
    if (!life.changed.wait_for(lock, rt.config().wait_timeout,
                               [&] { return life.phase.load() != Phase::kStarting; })) {
      LARDER_LOG_WARN("MPI was still starting at exit (a rank never joined); leaving without it");
      return;
    }
    // The application initialised MPI and exits without MPI_Finalize: not ours to finalize.
    if (life.phase.load() != Phase::kRunning || !life.larder_owns_mpi) return;
    (void)stop_here(life, lock, /*finalize_mpi=*/true);
  } catch (...) {
  }
}

}  // namespace larder::mpi_hooks
