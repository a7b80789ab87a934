#include "runtime/mpi_hooks/lifecycle.hpp"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
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
#include "runtime/config/config.hpp"

namespace larder::mpi_hooks {
namespace {

enum class Phase : int { kIdle, kStarting, kRunning, kStopping, kStopped };

// The lifecycle's state: process-wide, built on first use and never destroyed (the hooks run
// from exit handlers).
struct State {
  std::mutex mu;
  std::condition_variable changed;
  std::atomic<Phase> phase{Phase::kIdle};  // written under mu; read lock-free by the preload
  bool larder_owns_mpi = false;            // guarded by mu
  bool runtime_up = false;                 // guarded by mu
  bool stop_requested = false;             // guarded by mu
  int finalize_rc = MPI_SUCCESS;           // guarded by mu
  std::thread service;                     // guarded by mu
  std::atomic<pid_t> pid{0};               // the process that initialised MPI
  std::atomic<agent::AgentServer*> agent{nullptr};  // owned; set once
};

State& state() {
  static State* const s = new State();  // never deleted
  return *s;
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

void set_openmpi_defaults() {
#ifdef OPEN_MPI
  // Open MPI's default one-sided component crashes in MPI_Compare_and_swap here (design brief).
  if (!env_set("OMPI_MCA_osc")) ::setenv("OMPI_MCA_osc", "ucx", 0);
#endif
}

// Binds the agent's socket and names it in the environment; children see it from now on.
void prepare_agent(State& s) {
  if (s.agent.load() != nullptr) return;
  auto server = agent::AgentServer::listen(agent::new_agent_name());
  if (!server.ok()) {
    LARDER_LOG_WARN("worker processes will read the file system directly: {}",
                    server.status().message());
    return;
  }
  ::setenv(agent::kEnvName, (*server)->name().c_str(), 1);
  s.agent.store(server->release());
}

// Collective over MPI_COMM_WORLD: starts the runtime on every rank or on none.
bool start_runtime(State& s) {
  auto config = Config::from_environment();
  Status agreed = MpiJob::agree(MPI_COMM_WORLD, config.ok() ? Status() : config.status());
  if (agreed.ok()) agreed = Runtime::instance().init(MPI_COMM_WORLD, Starter::kHooks);
  if (!agreed.ok()) {
    LARDER_LOG_ERROR("larder could not start, the job runs without the cache: {}",
                     agreed.message());
    return false;
  }
  if (agent::AgentServer* a = s.agent.load()) a->start();
  return true;
}

void stop_runtime(State& s, bool runtime_up) {
  if (agent::AgentServer* a = s.agent.load()) a->stop();
  if (!runtime_up) return;
  if (Status st = Runtime::instance().finalize(Starter::kHooks); !st.ok()) {
    LARDER_LOG_ERROR("larder finalize failed: {}", st.message());
  }
}

void service_main() {
  mark_runtime_thread();
  State& s = state();
  int provided = MPI_THREAD_SINGLE;
  const int rc = PMPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) {
    LARDER_LOG_ERROR("MPI_Init_thread failed (error {}): the job runs without the cache", rc);
    std::lock_guard lock(s.mu);
    s.phase.store(Phase::kStopped);
    s.changed.notify_all();
    return;
  }
  const bool up = start_runtime(s);
  std::unique_lock lock(s.mu);
  s.runtime_up = up;
  s.larder_owns_mpi = true;
  s.phase.store(Phase::kRunning);
  s.changed.notify_all();
  s.changed.wait(lock, [&] { return s.stop_requested; });
  s.phase.store(Phase::kStopping);
  lock.unlock();
  stop_runtime(s, up);
  const int frc = PMPI_Finalize();
  lock.lock();
  s.runtime_up = false;
  s.finalize_rc = frc;
  s.phase.store(Phase::kStopped);
  s.changed.notify_all();
}

}  // namespace

bool activation_requested() noexcept {
  if (!env_set("LARDER_PREFIX")) return false;
  const char* e = std::getenv("LARDER_ENABLE");
  if (e == nullptr) return true;
  const std::string_view v(e);
  return !(v == "0" || v == "false" || v == "no" || v == "off");
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

void start_self_init() noexcept {
  try {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (s.phase.load() != Phase::kIdle) return;
    set_openmpi_defaults();
    prepare_agent(s);
    s.pid.store(::getpid());
    s.phase.store(Phase::kStarting);
    s.service = std::thread(service_main);
  } catch (...) {
    LARDER_LOG_ERROR("cannot start larder's service thread; the job runs without the cache");
    state().phase.store(Phase::kStopped);
  }
}

bool wait_until_started(std::chrono::milliseconds timeout) noexcept {
  State& s = state();
  if (s.phase.load(std::memory_order_acquire) == Phase::kRunning) return true;
  if (s.phase.load(std::memory_order_acquire) != Phase::kStarting) return false;
  try {
    std::unique_lock lock(s.mu);
    s.changed.wait_for(lock, timeout, [&] { return s.phase.load() != Phase::kStarting; });
    return s.phase.load() == Phase::kRunning && s.runtime_up;
  } catch (...) {
    return false;
  }
}

int on_init(int* argc, char*** argv, int required, int* provided, bool thread_variant) noexcept {
  if (is_worker_process()) {
    LARDER_LOG_ERROR(
        "this process is a worker of an MPI rank (forked or spawned by it); it must not "
        "initialise MPI, which would break the rank's connection to its launcher");
    return MPI_ERR_OTHER;
  }
  if (!activation_requested()) {
    return thread_variant ? PMPI_Init_thread(argc, argv, required, provided)
                          : PMPI_Init(argc, argv);
  }
  try {
    State& s = state();
    std::unique_lock lock(s.mu);
    s.changed.wait(lock, [&] { return s.phase.load() != Phase::kStarting; });
    if (s.phase.load() == Phase::kRunning && s.larder_owns_mpi) {
      if (provided != nullptr) PMPI_Query_thread(provided);  // MPI is ready: say so
      return MPI_SUCCESS;
    }
    if (s.phase.load() != Phase::kIdle) {
      lock.unlock();  // a second MPI_Init, or one after MPI_Finalize: let MPI report it
      return thread_variant ? PMPI_Init_thread(argc, argv, required, provided)
                            : PMPI_Init(argc, argv);
    }
    set_openmpi_defaults();
    int got = MPI_THREAD_SINGLE;
    const int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got);
    if (rc != MPI_SUCCESS) return rc;
    if (provided != nullptr) *provided = got;
    s.pid.store(::getpid());
    s.phase.store(Phase::kStarting);
    prepare_agent(s);
    {
      ReentryGuard guard;  // the runtime's own calls go straight to the real functions
      s.runtime_up = start_runtime(s);
    }
    s.phase.store(Phase::kRunning);
    s.changed.notify_all();
    return MPI_SUCCESS;
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

int on_finalize() noexcept {
  try {
    State& s = state();
    std::unique_lock lock(s.mu);
    s.changed.wait(lock, [&] { return s.phase.load() != Phase::kStarting; });
    if (s.phase.load() != Phase::kRunning) {
      lock.unlock();
      return PMPI_Finalize();
    }
    if (s.larder_owns_mpi) {
      s.stop_requested = true;
      s.changed.notify_all();
      s.changed.wait(lock, [&] { return s.phase.load() == Phase::kStopped; });
      return s.finalize_rc;
    }
    s.phase.store(Phase::kStopping);
    {
      ReentryGuard guard;
      stop_runtime(s, s.runtime_up);
    }
    s.runtime_up = false;
    const int rc = PMPI_Finalize();
    s.phase.store(Phase::kStopped);
    s.changed.notify_all();
    return rc;
  } catch (...) {
    return MPI_ERR_INTERN;
  }
}

void on_exit() noexcept {
  State& s = state();
  if (s.pid.load() != ::getpid()) return;  // a child, or nothing was started
  try {
    std::unique_lock lock(s.mu);
    if (!s.service.joinable()) return;  // the application owns MPI: its MPI_Finalize stops us
    s.changed.wait(lock, [&] { return s.phase.load() != Phase::kStarting; });
    if (s.phase.load() == Phase::kRunning) {
      s.stop_requested = true;
      s.changed.notify_all();
      s.changed.wait(lock, [&] { return s.phase.load() == Phase::kStopped; });
    }
    std::thread service = std::move(s.service);
    lock.unlock();
    service.join();
  } catch (...) {
  }
}

void on_fork_child() noexcept {
  State& s = state();
  if (agent::AgentServer* a = s.agent.load(std::memory_order_relaxed)) a->close_in_child();
  s.pid.store(0, std::memory_order_relaxed);
}

}  // namespace larder::mpi_hooks
