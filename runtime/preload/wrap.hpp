// Helpers shared by the wrapper files: the dispatch every interposed call makes.
//
//   extern "C" ssize_t pread(int fd, void* buf, size_t n, off_t off) {
//     return on_fd(fd, [&] { return real::pread(fd, buf, n, off); },
//                  [&](FileService& svc) { return ops::try_pread(svc, files(), fd, buf, n, off);
//                  });
//   }
//
// on_fd/on_path take the pass-through first: when Larder is off, the call is re-entrant (made by
// the runtime itself), or the descriptor or path is not managed, the real function runs and
// nothing else happens. Otherwise the serving function runs; nullopt from it, or an exception,
// means "not ours after all" and the real function runs.
#ifndef LARDER_RUNTIME_PRELOAD_WRAP_HPP_
#define LARDER_RUNTIME_PRELOAD_WRAP_HPP_

#include <sys/mman.h>

#include <cerrno>
#include <optional>
#include <string>
#include <type_traits>

#include "runtime/api/file_ops.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/preload/process.hpp"
#include "runtime/preload/real.hpp"

namespace larder::preload {

// A descriptor Larder serves (a managed file's placeholder) or watches (a file being produced).
inline bool fd_is_managed(int fd) noexcept {
  return enabled() && (files().maybe_managed(fd) || runtime().produced().maybe_produced(fd));
}

using larder::FileService;
using larder::ReentryGuard;

// The real function's ENOSYS when it could not be resolved.
template <class T>
T no_symbol() noexcept {
  errno = ENOSYS;
  if constexpr (std::is_same_v<T, void*>) {
    return MAP_FAILED;  // mmap
  } else if constexpr (std::is_pointer_v<T>) {
    return nullptr;
  } else {
    return static_cast<T>(-1);
  }
}

// Calls the real function, or fails with ENOSYS when it could not be resolved.
template <class R, class... P, class... A>
R call(R (*f)(P...), A... a) noexcept {
  if (f == nullptr) return no_symbol<R>();
  return f(a...);
}
template <class R, class... P, class... A>
R call(R (*f)(P..., ...), A... a) noexcept {
  if (f == nullptr) return no_symbol<R>();
  return f(a...);
}

// The mode argument of open-like calls (present only when the flags need one).
inline bool needs_mode(int flags) noexcept {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

// True when a call on `path` goes straight to the real function: Larder is off in this process,
// the call comes from Larder itself, or the path is absolute and under no prefix. Path wrappers
// test it first, before they build anything: it is all an unmanaged stat or open pays.
inline bool passes_through(const char* path) noexcept {
  real::ensure();
  if (!enabled() || larder::t_reentry_depth != 0) return true;
  return path != nullptr && path[0] == '/' && surely_outside(path);
}

// Runs `f` out of line: keeps the serving code's stack frame out of a wrapper's pass-through.
template <class F>
[[gnu::noinline]] auto out_of_line(F&& f) noexcept -> decltype(f()) {
  return f();
}

// True when a call on descriptor `fd` goes straight to the real function (not a managed
// descriptor, or the call comes from Larder itself): descriptor wrappers test it first.
inline bool fd_passes_through(int fd) noexcept {
  real::ensure();
  return larder::t_reentry_depth != 0 || !fd_is_managed(fd);
}

// The part of on_fd for a managed descriptor: out of line (see serve_path below).
template <class Real, class Serve>
[[gnu::noinline]] auto serve_fd(int fd, Real& real_call, Serve& serve) noexcept
    -> decltype(real_call()) {
  ReentryGuard guard;
  try {
    Service svc = service();
    if (!svc) {
      // Nothing can serve it any more (the runtime finished, the agent is gone): make it a
      // real descriptor of the same file and let the real call have it.
      detach(fd);
      return real_call();
    }
    if (auto r = serve(*svc.svc)) return *r;
  } catch (...) {
  }
  return real_call();
}

// A call on descriptor `fd`. Out of line: the wrappers test fd_passes_through() first.
template <class Real, class Serve>
[[gnu::noinline]] auto on_fd(int fd, Real&& real_call, Serve&& serve) noexcept
    -> decltype(real_call()) {
  if (fd_passes_through(fd)) return real_call();
  return serve_fd(fd, real_call, serve);
}

// The part of on_path after the cheap checks: out of line, so that the pass-through of an
// unmanaged path stays a few instructions with a small stack frame.
template <class Real, class Serve>
[[gnu::noinline]] auto serve_path(int dirfd, const char* path, Real& real_call,
                                  Serve& serve) noexcept -> decltype(real_call()) {
  ReentryGuard guard;
  try {
    auto abs = candidate_at(dirfd, path);
    if (!abs) return real_call();
    Service svc = service();
    if (!svc) return real_call();
    if (auto r = serve(*svc.svc, *abs)) return *r;
  } catch (...) {
  }
  return real_call();
}

// A call on a path (relative to `dirfd`). Out of line: the wrappers test passes_through() first.
template <class Real, class Serve>
[[gnu::noinline]] auto on_path(int dirfd, const char* path, Real&& real_call,
                               Serve&& serve) noexcept -> decltype(real_call()) {
  if (passes_through(path)) return real_call();
  return serve_path(dirfd, path, real_call, serve);
}

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_WRAP_HPP_
