// Process: the preload library's view of this process: its role, the managed descriptors, which
// paths are managed, and the FileService that serves them right now.
//
// Roles, decided when the library loads (docs/user-guide.md, "How a process finds its cache"):
//   kRank    launched by mpiexec (or the application calls MPI_Init): served by its own runtime;
//   kClient  a child of a rank (LARDER_AGENT names another process, or fork): served by the rank
//            over the node-local channel, never calls MPI;
//   kOff     neither: every call passes straight through.
// Built once and never destroyed (wrappers run from exit handlers); fork-aware.
#ifndef LARDER_RUNTIME_PRELOAD_PROCESS_HPP_
#define LARDER_RUNTIME_PRELOAD_PROCESS_HPP_

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/agent/agent_client.hpp"
#include "runtime/api/file_service.hpp"
#include "runtime/api/file_table.hpp"
#include "runtime/api/session.hpp"
#include "runtime/preload/fast_path.hpp"

namespace larder::preload {

enum class Role : int { kOff, kRank, kClient };

// Set once by the library constructor: Larder was asked for (LARDER_PREFIX) and the settings
// are valid. False means every wrapper is a plain pass-through.
inline bool g_enabled = false;

class Process {
 public:
  static Process& get() noexcept;  // valid once g_enabled is true (inline, below)

  // The service for a managed call now; null: pass the call through. Holds the session alive.
  struct Service {
    std::shared_ptr<Session> session;
    FileService* svc = nullptr;
    explicit operator bool() const noexcept { return svc != nullptr; }
  };
  Service service() noexcept;

  FileTable& files() noexcept { return files_; }

  // True when absolute path `abs`, once made lexically clean, is under no prefix; false when it
  // may be (candidate() decides). Never allocates (fast_path.hpp).
  bool surely_outside(const char* abs) const noexcept {
    return preload::surely_outside(abs, config_.prefixes);
  }
  // `path` made absolute and lexically clean, when it lies under a prefix; nullopt (without
  // allocating, for most absolute paths) when it does not.
  std::optional<std::string> candidate(const char* path) const;
  // The same for a path relative to directory descriptor `dirfd` (AT_FDCWD or a real one).
  std::optional<std::string> candidate_at(int dirfd, const char* path) const;

  // Turns managed descriptor `fd` into a real descriptor of the same file at the same position
  // (when nothing can serve it any more). False when it cannot.
  bool detach(int fd) noexcept;
  // A path this process opened for writing: later calls on it go to the file system.
  void mark_written(const std::string& abs);

  // False in a vfork()ed child, which shares the parent's memory: it must not change the table.
  bool owns_table() const noexcept;

  void on_fork_prepare() noexcept;
  void on_fork_parent() noexcept;
  void on_fork_child() noexcept;
  void on_exit() noexcept;

 private:
  Process();
  friend void initialize() noexcept;
  bool under_prefix(std::string_view clean) const noexcept;
  agent::AgentClient* client() noexcept;

  Config config_;
  std::atomic<Role> role_{Role::kOff};
  std::atomic<int> pid_{0};                  // the process this state belongs to
  std::atomic<bool> session_allowed_{true};  // false in a forked child: the session is the parent's
  FileTable files_;
  std::mutex client_mu_;
  std::atomic<agent::AgentClient*> client_{nullptr};  // leaked on purpose (fork, exit)
  std::atomic<bool> client_failed_{false};
  mutable std::mutex written_mu_;
  std::vector<std::string> written_;       // guarded by written_mu_
  std::atomic<bool> any_written_{false};   // relaxed: a hint
  std::atomic<bool> mmap_checked_{false};  // relaxed: UCX's hook looked for after MPI started
};

// The one Process: built by initialize(), never destroyed.
inline Process* g_process = nullptr;

inline Process& Process::get() noexcept {
  return *g_process;
}

// The library constructor's work (called once).
void initialize() noexcept;

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_PROCESS_HPP_
