// The open family, creat, close, close_range and closefrom.
#include <fcntl.h>
#include <linux/close_range.h>
#include <unistd.h>

#include <cstdarg>

#include "runtime/api/produce_ops.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

// Serves an open of a managed path; a write (or flags the cache cannot honour) goes to the
// file system, and a path this process writes is left to the file system from then on. Under
// LARDER_PRODUCE a write produces the file (produce_ops.hpp) and a read waits for it.
std::optional<int> serve_open(FileService& svc, const std::string& abs, int flags, mode_t mode) {
  if (svc.config().produced(abs)) {
    if (auto fd = produce::open(svc, runtime().produced(), abs, flags, mode)) return fd;
    if (produce::writes(flags)) return std::nullopt;  // the cache cannot: the file system
  }
  if (!ops::cacheable_flags(flags)) {
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0) {
      runtime().mark_written(abs);
    }
    return std::nullopt;
  }
  return ops::open_path(svc, files(), abs, flags);
}

int open_at(int dirfd, const char* path, int flags, mode_t mode,
            int (*real_open)(const char*, int, ...),
            int (*real_openat)(int, const char*, int, ...)) noexcept {
  if (passes_through(path)) {
    return dirfd == AT_FDCWD && real_open != nullptr ? call(real_open, path, flags, mode)
                                                     : call(real_openat, dirfd, path, flags, mode);
  }
  return on_path(
      dirfd, path,
      [&] {
        return dirfd == AT_FDCWD && real_open != nullptr
                   ? call(real_open, path, flags, mode)
                   : call(real_openat, dirfd, path, flags, mode);
      },
      [&](FileService& svc, const std::string& abs) { return serve_open(svc, abs, flags, mode); });
}

mode_t mode_arg(int flags, va_list ap) noexcept {
  return needs_mode(flags) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

bool close_managed(int fd) noexcept {
  if (!owns_table()) return false;  // a vfork()ed child: leave the table alone
  return ops::try_close(files(), fd).has_value();
}

// close() of a descriptor of a file being produced: its last close publishes it.
int close_produced(int fd) noexcept {
  try {
    Service svc = service();
    return produce::close(svc.svc, runtime().produced(), fd);
  } catch (...) {
    return call(real::close, fd);
  }
}

// Forgets the managed descriptors in [first, last] before a range close.
void forget_range(unsigned first, unsigned last) noexcept {
  if (!enabled() || !owns_table()) return;
  const unsigned end = std::min<unsigned>(last, FileTable::kMaxTracked - 1);
  for (unsigned fd = first; fd <= end; ++fd) {
    if (files().maybe_managed(static_cast<int>(fd))) files().forget(static_cast<int>(fd));
    if (runtime().produced().maybe_produced(static_cast<int>(fd))) {
      // Closed with the range: its last close publishes it, as close() would.
      if (auto due = runtime().produced().release(static_cast<int>(fd))) {
        Service svc = service();
        produce::publish(svc.svc, runtime().produced(), due);
      }
    }
  }
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file

extern "C" {

int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (passes_through(path)) return call(real::open, path, flags, mode);
  return open_at(AT_FDCWD, path, flags, mode, real::open, real::openat);
}

int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (passes_through(path)) return call(real::open64, path, flags, mode);
  return open_at(AT_FDCWD, path, flags, mode, real::open64, real::openat64);
}

int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (passes_through(path)) return call(real::openat, dirfd, path, flags, mode);
  return open_at(dirfd, path, flags, mode, nullptr, real::openat);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (passes_through(path)) return call(real::openat64, dirfd, path, flags, mode);
  return open_at(dirfd, path, flags, mode, nullptr, real::openat64);
}

int __open_2(const char* path, int flags) {
  if (passes_through(path)) return call(real::open, path, flags, 0);
  return open_at(AT_FDCWD, path, flags, 0, real::open, real::openat);
}

int __open64_2(const char* path, int flags) {
  if (passes_through(path)) return call(real::open64, path, flags, 0);
  return open_at(AT_FDCWD, path, flags, 0, real::open64, real::openat64);
}

int __openat_2(int dirfd, const char* path, int flags) {
  if (passes_through(path)) return call(real::openat, dirfd, path, flags, 0);
  return open_at(dirfd, path, flags, 0, nullptr, real::openat);
}

int __openat64_2(int dirfd, const char* path, int flags) {
  if (passes_through(path)) return call(real::openat64, dirfd, path, flags, 0);
  return open_at(dirfd, path, flags, 0, nullptr, real::openat64);
}

int creat(const char* path, mode_t mode) {
  if (passes_through(path)) return call(real::open, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  return open_at(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, real::open, real::openat);
}

int creat64(const char* path, mode_t mode) {
  if (passes_through(path)) return call(real::open64, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  return open_at(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, real::open64, real::openat64);
}

int close(int fd) {
  if (fd_passes_through(fd)) return call(real::close, fd);
  ReentryGuard guard;
  real::ensure();
  if (guard.outermost() && runtime().produced().maybe_produced(fd) && owns_table()) {
    return close_produced(fd);
  }
  if (guard.outermost() && fd_is_managed(fd) && close_managed(fd)) return 0;
  return call(real::close, fd);
}

int close_range(unsigned int first, unsigned int last, int flags) noexcept {
  ReentryGuard guard;
  real::ensure();
  if (guard.outermost() && (flags & CLOSE_RANGE_CLOEXEC) == 0) forget_range(first, last);
  return call(real::close_range, first, last, flags);
}

void closefrom(int lowfd) noexcept {
  ReentryGuard guard;
  real::ensure();
  if (guard.outermost() && lowfd >= 0) forget_range(static_cast<unsigned>(lowfd), ~0u);
  if (real::closefrom != nullptr) real::closefrom(lowfd);
}

}  // extern "C"
