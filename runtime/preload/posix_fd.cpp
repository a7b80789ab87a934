// dup, dup2, dup3 and fcntl(F_DUPFD...) keep managed descriptors managed (the copies share one
// position, as in the kernel); fcntl's flag and lock commands, flock, posix_fadvise, readahead,
// fsync and fdatasync answer for a managed descriptor the way they would for a read-only file.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdarg>

#include "runtime/api/produce_ops.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

// After a real dup of managed `from` into `to`: `to` shares `from`'s entry.
int adopt_copy(int from, int to) noexcept {
  if (to < 0 || !owns_table()) return to;
  try {
    if (auto file = files().find(from)) {
      files().adopt(to, std::move(file));
    } else if (auto produced = runtime().produced().find(from)) {
      runtime().produced().add(to, std::move(produced));  // one more descriptor to close
    }
  } catch (...) {
  }
  return to;
}

bool produced_fd(int fd) noexcept {
  return runtime().produced().maybe_produced(fd);
}

// dup2/dup3 onto `to`: `to` stops being whatever managed file it was.
template <class Real>
int dup_onto(int from, int to, Real&& real_call) noexcept {
  ReentryGuard guard;
  real::ensure();
  if (!guard.outermost() || !enabled()) return real_call();
  const bool from_managed = files().maybe_managed(from) || produced_fd(from);
  const bool to_managed = files().maybe_managed(to) || produced_fd(to);
  if (!from_managed && !to_managed) return real_call();
  if (from == to) return real_call();
  const int rc = real_call();
  if (rc < 0 || !owns_table()) return rc;
  if (to_managed) {
    files().forget(to);
    // `to` was a descriptor of a file being produced, closed by the dup: perhaps its last.
    if (auto due = runtime().produced().release(to)) {
      Service svc = service();
      produce::publish(svc.svc, runtime().produced(), due);
    }
  }
  return from_managed ? adopt_copy(from, rc) : rc;
}

std::optional<int> serve_fcntl(int fd, int cmd, void* arg, int (*real_fcntl)(int, int, ...)) {
  if (produced_fd(fd) && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) {
    return adopt_copy(fd, call(real_fcntl, fd, cmd, reinterpret_cast<long>(arg)));
  }
  auto file = files().find(fd);
  if (!file) return std::nullopt;
  switch (cmd) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return adopt_copy(fd, call(real_fcntl, fd, cmd, reinterpret_cast<long>(arg)));
    case F_GETFL:
      return O_RDONLY | O_LARGEFILE | (file->flags & (O_NONBLOCK | O_DIRECT | O_NOATIME));
    case F_SETFL:
      return 0;
    case F_GETLK:
    case F_OFD_GETLK:
      if (arg != nullptr) static_cast<struct flock*>(arg)->l_type = F_UNLCK;
      return 0;
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
      // Read locks on immutable data are always granted; a write lock needs a writable file.
      if (arg != nullptr && static_cast<struct flock*>(arg)->l_type == F_WRLCK) {
        errno = EBADF;
        return -1;
      }
      return 0;
    default:
      return std::nullopt;  // F_GETFD, F_SETFD and the rest work on the placeholder itself
  }
}

int fcntl_common(int fd, int cmd, void* arg, int (*real_fcntl)(int, int, ...)) noexcept {
  return on_fd(
      fd, [&] { return call(real_fcntl, fd, cmd, arg); },
      [&](FileService&) { return serve_fcntl(fd, cmd, arg, real_fcntl); });
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;

extern "C" {

int dup(int fd) noexcept {
  ReentryGuard guard;
  real::ensure();
  const int rc = call(real::dup, fd);
  if (rc < 0 || !guard.outermost() || !fd_is_managed(fd)) return rc;
  return adopt_copy(fd, rc);
}

int dup2(int from, int to) noexcept {
  return dup_onto(from, to, [&] { return call(real::dup2, from, to); });
}

int dup3(int from, int to, int flags) noexcept {
  return dup_onto(from, to, [&] { return call(real::dup3, from, to, flags); });
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(fd, cmd, arg, real::fcntl);
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntl_common(fd, cmd, arg, real::fcntl64);
}

int flock(int fd, int op) noexcept {
  return on_fd(
      fd, [&] { return call(real::flock, fd, op); },
      [&](FileService&) { return std::optional<int>(0); });
}

int posix_fadvise(int fd, off_t off, off_t len, int advice) noexcept {
  return on_fd(
      fd, [&] { return call(real::posix_fadvise, fd, off, len, advice); },
      [&](FileService&) { return std::optional<int>(0); });
}

int posix_fadvise64(int fd, off64_t off, off64_t len, int advice) noexcept {
  return on_fd(
      fd, [&] { return call(real::posix_fadvise64, fd, off, len, advice); },
      [&](FileService&) { return std::optional<int>(0); });
}

ssize_t readahead(int fd, off64_t off, size_t count) noexcept {
  return on_fd(
      fd, [&] { return call(real::readahead, fd, off, count); },
      [&](FileService&) { return std::optional<ssize_t>(0); });
}

int fsync(int fd) {
  return on_fd(
      fd, [&] { return call(real::fsync, fd); },
      [&](FileService&) { return std::optional<int>(0); });
}

int fdatasync(int fd) {
  return on_fd(
      fd, [&] { return call(real::fdatasync, fd); },
      [&](FileService&) { return std::optional<int>(0); });
}

}  // extern "C"
