// The preload library's view of this process, over the Runtime (which owns all of its state):
// which calls it may serve, which paths are managed, and the FileService that serves them now.
//
// Roles, decided when the library loads (docs/user-guide.md, "How a process finds its cache"):
//   Role::kRank    launched by an MPI launcher: served by its own session (MPI starts in the
//                  library constructor, see runtime/mpi_hooks/lifecycle.hpp);
//   Role::kWorker  a child of a rank (LARDER_AGENT names another process, or after fork): served
//                  by the rank over the node-local channel, never calls MPI;
//   Role::kOff     neither (or a launcher wrapper image): calls pass through, unless the program
//                  calls MPI_Init itself, which makes it a rank.
#ifndef LARDER_RUNTIME_PRELOAD_PROCESS_HPP_
#define LARDER_RUNTIME_PRELOAD_PROCESS_HPP_

#include <optional>
#include <string>

#include "runtime/api/file_service.hpp"
#include "runtime/api/file_table.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/preload/fast_path.hpp"

namespace larder::preload {

inline Runtime& runtime() noexcept {
  return Runtime::instance();
}

// The wrappers may serve calls (false: everything passes through). Never builds the Runtime:
// calls made before the library constructor (a sanitizer's start-up) pass through.
inline bool enabled() noexcept {
  const Runtime* rt = Runtime::existing();
  return rt != nullptr && rt->intercepting();
}

inline FileTable& files() noexcept {
  return runtime().files();
}

// The service for a managed call now; empty: pass the call through. Holds a lease on the session
// (a rank) for the length of the call.
struct Service {
  Lease lease;
  FileService* svc = nullptr;
  explicit operator bool() const noexcept { return svc != nullptr; }
};
Service service() noexcept;

// "/proc/self/fd/N", "/proc/<this pid>/fd/N" or "/dev/fd/N" where N is a managed descriptor: N;
// else -1. Such a path names the managed file (not the descriptor's placeholder).
int managed_fd_alias(const char* abs) noexcept;

// True when absolute path `abs`, once made lexically clean, is under no prefix (and names no
// managed descriptor); false when it may be (candidate() decides). Never allocates.
inline bool surely_outside(const char* abs) noexcept {
  return preload::surely_outside(abs, runtime().config().prefixes) && managed_fd_alias(abs) < 0;
}
// `path` made absolute and lexically clean, when it lies under a prefix and this process did not
// write it; nullopt (without allocating, for most absolute paths) when it does not.
std::optional<std::string> candidate(const char* path);
// The same for a path relative to directory descriptor `dirfd` (AT_FDCWD or a real one).
std::optional<std::string> candidate_at(int dirfd, const char* path);
// `path` relative to `dirfd`, made absolute and lexically clean, managed or not (nullopt: it
// cannot be, e.g. a descriptor that names no directory).
std::optional<std::string> absolute_at(int dirfd, const char* path);

// Turns managed descriptor `fd` into a real descriptor of the same file at the same position
// (when nothing can serve it any more). False when it cannot.
bool detach(int fd) noexcept;

// False in a vfork()ed child, which shares the parent's memory: it must not change the table.
bool owns_table() noexcept;

// The library constructor's work (called once).
void initialize() noexcept;
// atexit, _exit and _Exit: what this process must do before it leaves.
void on_exit() noexcept;

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_PROCESS_HPP_
