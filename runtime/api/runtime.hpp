// Runtime: the one owner of this process's Larder state (docs/architecture.md, "The Runtime").
//
// It owns, and nothing else in the process holds mutable state beside it (the logger's level and
// rank tag and the resolved real:: symbols, both written once, are the documented exceptions):
//   - the configuration, parsed once from the environment when the Runtime is built (the preload
//     library's constructor, or the first call into Larder), then immutable; a program's
//     larder_init reads the environment again for the session it starts (its own choice);
//   - the process's role: off, an MPI rank, or a worker of a rank (preload);
//   - MPI's life: who initialised MPI, the phase of Larder's start and stop (runtime/mpi_hooks
//     drives it, see MpiLife);
//   - the session and its read leases: every call that reads through the cache holds a Lease for
//     its length; finalize refuses new leases, waits for those in flight (bounded by
//     LARDER_TIMEOUT) and only then unmaps anything;
//   - the agent that serves this rank's worker processes, and, in a worker, its agent client;
//   - the preload's table of managed descriptors and the paths this process wrote.
// Built once and never destroyed: interposed calls can arrive from exit handlers.
#ifndef LARDER_RUNTIME_API_RUNTIME_HPP_
#define LARDER_RUNTIME_API_RUNTIME_HPP_

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/api/file_table.hpp"
#include "runtime/api/produce_table.hpp"
#include "runtime/api/seams.hpp"
#include "runtime/api/session.hpp"
#include "runtime/common/status.hpp"
#include "runtime/config/config.hpp"

namespace larder {

namespace agent {
class AgentServer;
class AgentClient;
}  // namespace agent

// Who started the running session: the program (larder_init) or the MPI_Init hooks.
enum class Starter : int { kProgram, kHooks };

// What this process is to Larder (decided by the preload's constructor; see process.hpp).
enum class Role : int {
  kOff,     // every call passes through (unless the program starts Larder itself)
  kRank,    // an MPI rank: served by its own session
  kWorker,  // a child of a rank: served by the rank's agent, never calls MPI
};

// The phases of MPI and of Larder's start in this process (runtime/mpi_hooks/lifecycle.cpp).
enum class Phase : int { kIdle, kStarting, kRunning, kStopped };

// A read's hold on the running session: while any Lease is alive the session's arenas, windows
// and transport stay mapped. Empty when nothing runs, or when finalize has begun.
class Lease {
 public:
  Lease() = default;
  explicit Lease(std::shared_ptr<Session> session) noexcept : session_(std::move(session)) {}
  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  explicit operator bool() const noexcept { return session_ != nullptr; }
  Session* get() const noexcept { return session_.get(); }
  Session* operator->() const noexcept { return session_.get(); }
  Session& operator*() const noexcept { return *session_; }

 private:
  std::shared_ptr<Session> session_;
};

// MPI's life in this process. Guarded by `mu` unless said otherwise; `changed` is notified on
// every phase change.
struct MpiLife {
  std::mutex mu;
  std::condition_variable changed;
  std::atomic<Phase> phase{Phase::kIdle};  // written under mu; read lock-free by the preload
  bool larder_owns_mpi = false;            // Larder called PMPI_Init_thread (self-initialisation)
  bool runtime_up = false;                 // the hooks' session started
  std::atomic<pid_t> pid{0};               // the process that started MPI (not its children)
};

class Runtime {
 public:
  // The Runtime, built (and the configuration parsed) on the first call.
  static Runtime& instance() noexcept;
  // The Runtime if it is built, else null: for code that may run before Larder's library
  // constructor (a sanitizer's start-up calls mmap before the environment is in place), which
  // must not build it with whatever the environment says at that moment.
  static Runtime* existing() noexcept { return slot().load(std::memory_order_acquire); }

  // ---- configuration ----------------------------------------------------------------------
  // The configuration parsed when the Runtime was built; defaults when it was invalid.
  const Config& config() const noexcept { return config_; }
  // Non-OK when a LARDER_* variable was invalid: the one message naming it.
  const Status& config_status() const noexcept { return config_status_; }
  // LARDER_PREFIX is set, LARDER_ENABLE is not off, and every setting is valid.
  bool requested() const noexcept { return requested_; }

  // ---- role -------------------------------------------------------------------------------
  Role role() const noexcept { return role_.load(std::memory_order_acquire); }
  void set_role(Role role) noexcept { role_.store(role, std::memory_order_release); }
  // The preload's wrappers may serve calls in this process (set by its constructor; a launcher
  // wrapper image or a process without LARDER_PREFIX passes everything through). Relaxed: one
  // load on every interposed call.
  bool intercepting() const noexcept { return intercepting_.load(std::memory_order_relaxed); }
  void set_intercepting(bool on) noexcept { intercepting_.store(on, std::memory_order_relaxed); }
  // The process this state belongs to (a vfork()ed child shares it and must not change it).
  pid_t pid() const noexcept { return pid_.load(std::memory_order_relaxed); }

  // ---- sessions ---------------------------------------------------------------------------
  // Collective over `comm` (MPI_COMM_NULL: a cache private to this process).
  // A program's init while the hooks' session runs (over MPI_COMM_WORLD) joins it when `comm` is
  // MPI_COMM_WORLD or congruent to it: it succeeds, changes nothing, and counts one reference
  // that the program's finalize drops. Any other init while a session runs: EALREADY.
  Status init(MPI_Comm comm, Starter starter = Starter::kProgram);
  // Collective. The program's finalize of the hooks' session only drops a reference (the hooks
  // stop it at MPI_Finalize); without a reference to drop it is refused (kUnavailable).
  // Stops new leases and waits (up to LARDER_TIMEOUT) for the ones in flight before tearing down.
  Status finalize(Starter starter = Starter::kProgram);
  // A lease on the running session (empty when none runs or it is closing). Cheap; any thread.
  Lease session() const noexcept;
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  // Testing only (seams.hpp): the fakes the next session is built with.
  void set_seams_for_testing(Seams seams);

  // ---- MPI life, the agent, the worker client ---------------------------------------------
  MpiLife& mpi_life() noexcept { return mpi_life_; }
  // The agent serving this rank's workers (null when none); set once, before MPI starts.
  agent::AgentServer* agent() const noexcept { return agent_.load(std::memory_order_acquire); }
  void set_agent(std::unique_ptr<agent::AgentServer> agent) noexcept;
  // A worker's connection to its rank (connected on first use; null when there is none).
  agent::AgentClient* worker_client() noexcept;
  // In a child after fork: drops the parent's agent, client and session (async-signal-safe).
  void on_fork_child() noexcept;

  // ---- the preload's process state --------------------------------------------------------
  FileTable& files() noexcept { return files_; }
  // The files under LARDER_PRODUCE this process writes, until they are published.
  ProduceTable& produced() noexcept { return produced_; }
  // A path this process opened for writing (or created): later calls on it go to the file
  // system, so the process always sees its own file.
  void mark_written(const std::string& abs);
  bool written(const std::string& abs) const;
  // UCX's own mmap (ucm_mmap) when Larder took mmap back from UCX's hook; null otherwise.
  void* ucm_mmap() const noexcept { return ucm_mmap_.load(std::memory_order_acquire); }
  void set_ucm_mmap(void* fn) noexcept { ucm_mmap_.store(fn, std::memory_order_release); }
  // UCX's own munmap (ucm_munmap), likewise.
  void* ucm_munmap() const noexcept { return ucm_munmap_.load(std::memory_order_acquire); }
  void set_ucm_munmap(void* fn) noexcept { ucm_munmap_.store(fn, std::memory_order_release); }

  // How long MPI_Init took in this process (the hooks time it): the stats' startup.mpi_init_ns.
  void set_mpi_init_ns(std::uint64_t ns) noexcept {
    mpi_init_ns_.store(ns, std::memory_order_relaxed);
  }

 private:
  static std::atomic<Runtime*>& slot() noexcept;
  struct Parsed {
    Config config;
    Status status;
  };
  static Parsed parse_environment();
  Runtime();
  explicit Runtime(Parsed parsed);

  const Config config_;
  const Status config_status_;
  const bool requested_;
  std::atomic<Role> role_{Role::kOff};
  std::atomic<bool> intercepting_{false};
  std::atomic<std::uint64_t> mpi_init_ns_{0};  // relaxed: a statistic
  std::atomic<pid_t> pid_;

  std::mutex lifecycle_mu_;              // serialises init and finalize
  Starter starter_ = Starter::kProgram;  // guarded by lifecycle_mu_
  int program_refs_ = 0;  // guarded by lifecycle_mu_: program inits joined to the hooks' session
  Seams seams_;           // guarded by lifecycle_mu_ (testing only; empty in production)
  // The running session: written under lifecycle_mu_ and session_mu_ (exclusive), read under
  // either (session(): shared). Not std::atomic<std::shared_ptr>: libstdc++ 12 guards that with a
  // bit lock whose load() unlocks relaxed, so nothing orders a reader's copy before the next
  // writer's swap (ThreadSanitizer reports it; GCC 13 annotates the lock for it). A reader-writer
  // lock costs the same two atomic operations per session() and is a lock every tool knows.
  mutable std::shared_mutex session_mu_;
  std::shared_ptr<Session> session_;
  // A forked child: the session (and its MPI) is the parent's; it is never used nor destroyed.
  std::atomic<bool> forked_{false};
  std::atomic<bool> active_{false};  // acquire/release: fast "is anything running"

  MpiLife mpi_life_;
  std::atomic<agent::AgentServer*> agent_{nullptr};  // owned; never deleted (exit handlers)
  std::mutex client_mu_;
  std::atomic<agent::AgentClient*> client_{nullptr};  // owned; never deleted (fork, exit)
  std::atomic<bool> client_failed_{false};

  FileTable files_;
  ProduceTable produced_;
  mutable std::mutex written_mu_;
  std::vector<std::string> written_;      // guarded by written_mu_
  std::atomic<bool> any_written_{false};  // relaxed: a hint that written_ is not empty
  std::atomic<void*> ucm_mmap_{nullptr};
  std::atomic<void*> ucm_munmap_{nullptr};
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_RUNTIME_HPP_
