// Runtime: the one process-wide object. It holds the current Session (or none) and is never
// destroyed, because interposed calls can arrive from exit handlers after static destructors.
//
// Callers take a reference-counted handle to the session for the length of one call, so
// finalize cannot pull the cache out from under a read in another thread.
#ifndef LARDER_RUNTIME_API_RUNTIME_HPP_
#define LARDER_RUNTIME_API_RUNTIME_HPP_

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "runtime/api/session.hpp"
#include "runtime/common/status.hpp"

namespace larder {

// Who started the running session: the program (larder_init) or the MPI_Init hooks.
enum class Starter : int { kProgram, kHooks };

class Runtime {
 public:
  static Runtime& instance();

  // Collective over `comm` (MPI_COMM_NULL: a cache private to this process).
  // A program's init while the hooks' session runs (over MPI_COMM_WORLD) joins it when `comm` is
  // MPI_COMM_WORLD or congruent to it: it succeeds, changes nothing, and counts one reference
  // that the program's finalize drops. Any other init while a session runs: EALREADY.
  Status init(MPI_Comm comm, Starter starter = Starter::kProgram);
  // Collective. The program's finalize of the hooks' session only drops a reference (the hooks
  // stop it at MPI_Finalize); without a reference to drop it is refused (kUnavailable).
  Status finalize(Starter starter = Starter::kProgram);

  // The running session, or null. Cheap; safe from any thread.
  std::shared_ptr<Session> session() const noexcept {
    return session_.load(std::memory_order_acquire);
  }
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }

 private:
  Runtime() = default;

  std::mutex lifecycle_mu_;              // serialises init and finalize
  Starter starter_ = Starter::kProgram;  // guarded by lifecycle_mu_
  int program_refs_ = 0;  // guarded by lifecycle_mu_: program inits joined to the hooks' session
  std::atomic<std::shared_ptr<Session>> session_;  // acquire/release: publishes the session
  std::atomic<bool> active_{false};                // acquire/release: fast "is anything running"
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_RUNTIME_HPP_
