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

class Runtime {
 public:
  static Runtime& instance();

  // Collective over `comm` (MPI_COMM_NULL: a cache private to this process).
  Status init(MPI_Comm comm);
  // Collective.
  Status finalize();

  // The running session, or null. Cheap; safe from any thread.
  std::shared_ptr<Session> session() const noexcept {
    return session_.load(std::memory_order_acquire);
  }
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }

 private:
  Runtime() = default;

  std::mutex lifecycle_mu_;                        // serialises init and finalize
  std::atomic<std::shared_ptr<Session>> session_;  // acquire/release: publishes the session
  std::atomic<bool> active_{false};                // acquire/release: fast "is anything running"
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_RUNTIME_HPP_
