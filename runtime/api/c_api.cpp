// larder.h: the C API. Every entry point is a noexcept boundary (docs/style.md, rule 10).
#include <larder/larder.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/api/file_ops.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/sys.hpp"

namespace {

using larder::Errc;
using larder::Runtime;
using larder::Status;

thread_local std::string t_last_error;

larder_status_t to_c_status(const Status& s) noexcept {
  switch (s.code()) {
    case Errc::kOk:
      return LARDER_OK;
    case Errc::kInvalidArgument:
      return s.native_code() == EALREADY ? LARDER_ERR_ALREADY_INITIALIZED
                                         : LARDER_ERR_INVALID_ARGUMENT;
    case Errc::kNotFound:
    case Errc::kIoError:
      return LARDER_ERR_IO;
    case Errc::kNoSpace:
      return LARDER_ERR_NO_SPACE;
    case Errc::kTimeout:
      return LARDER_ERR_TIMEOUT;
    case Errc::kTransport:
      return LARDER_ERR_TRANSPORT;
    case Errc::kMpi:
      return LARDER_ERR_MPI;
    case Errc::kUnavailable:
      return LARDER_ERR_NOT_INITIALIZED;
    case Errc::kHdf5:
    case Errc::kInternal:
      return LARDER_ERR_INTERNAL;
  }
  return LARDER_ERR_INTERNAL;
}

template <class Fn>
larder_status_t status_boundary(Fn&& fn) noexcept {
  try {
    const Status s = fn();
    if (!s.ok()) t_last_error = s.message();
    return to_c_status(s);
  } catch (const std::bad_alloc&) {
    return LARDER_ERR_NO_MEMORY;
  } catch (...) {
    return LARDER_ERR_INTERNAL;
  }
}

// POSIX-style boundary: `fn` returns the result or -1 with errno set; exceptions become ENOMEM/EIO.
template <class T, class Fn>
T posix_boundary(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
  } catch (...) {
    errno = EIO;
  }
  return static_cast<T>(-1);
}

}  // namespace

extern "C" {

larder_status_t larder_init(MPI_Comm comm) {
  return status_boundary([&] { return Runtime::instance().init(comm); });
}

larder_status_t larder_finalize(void) {
  return status_boundary([] { return Runtime::instance().finalize(); });
}

int larder_initialized(void) {
  return Runtime::instance().active() ? 1 : 0;
}

const char* larder_last_error(void) {
  return t_last_error.c_str();
}

int larder_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return posix_boundary<int>([&]() -> int {
    if (auto s = Runtime::instance().session()) {
      if (auto fd = larder::ops::try_open(*s, path, flags, true)) return *fd;
    }
    return larder::sys::open(path, flags, mode);
  });
}

int larder_close(int fd) {
  return posix_boundary<int>([&]() -> int {
    if (auto s = Runtime::instance().session()) {
      if (auto rc = larder::ops::try_close(s->files(), fd)) return *rc;
    }
    return larder::sys::close(fd);
  });
}

ssize_t larder_pread(int fd, void* buf, size_t count, off_t offset) {
  return posix_boundary<ssize_t>([&]() -> ssize_t {
    if (auto s = Runtime::instance().session()) {
      if (auto n = larder::ops::try_pread(*s, s->files(), fd, buf, count, offset)) return *n;
    }
    return larder::sys::pread(fd, buf, count, offset);
  });
}

ssize_t larder_read(int fd, void* buf, size_t count) {
  return posix_boundary<ssize_t>([&]() -> ssize_t {
    if (auto s = Runtime::instance().session()) {
      if (auto n = larder::ops::try_read(*s, s->files(), fd, buf, count)) return *n;
    }
    return larder::sys::read(fd, buf, count);
  });
}

off_t larder_lseek(int fd, off_t offset, int whence) {
  return posix_boundary<off_t>([&]() -> off_t {
    if (auto s = Runtime::instance().session()) {
      if (auto pos = larder::ops::try_lseek(s->files(), fd, offset, whence)) return *pos;
    }
    return ::lseek(fd, offset, whence);
  });
}

int larder_fstat(int fd, struct stat* st) {
  return posix_boundary<int>([&]() -> int {
    if (auto s = Runtime::instance().session()) {
      if (auto rc = larder::ops::try_fstat(s->files(), fd, st)) return *rc;
    }
    return larder::sys::fstat(fd, st);
  });
}

int larder_stat(const char* path, struct stat* st) {
  return posix_boundary<int>([&]() -> int {
    if (auto s = Runtime::instance().session()) {
      if (auto rc = larder::ops::try_stat(*s, path, st, true)) return *rc;
    }
    return larder::sys::stat(path, st);
  });
}

int larder_is_managed(const char* path) {
  try {
    auto s = Runtime::instance().session();
    if (!s) return 0;
    auto abs = larder::ops::candidate(s->config(), path, true);
    if (!abs) return 0;
    auto record = s->lookup(*abs);
    return record.ok() && record->error == 0 && record->managed() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

larder_status_t larder_stage(const char* const* paths, size_t npaths,
                             larder_stage_result_t* result_p) {
  return status_boundary([&]() -> Status {
    auto s = Runtime::instance().session();
    if (!s) return Status(Errc::kUnavailable, 0, "larder is not initialized");
    if (paths == nullptr && npaths > 0) return larder::invalid_argument("paths is null");
    std::vector<std::string> roots;
    roots.reserve(npaths);
    for (size_t i = 0; i < npaths; ++i) {
      // Resolved like larder_open's paths; one that cannot be (null, empty, outside
      // LARDER_PREFIX) stays in the list, so that every rank walks the same roots, and is
      // counted as skipped.
      auto abs = larder::ops::candidate(s->config(), paths[i], true);
      roots.push_back(abs ? *abs : std::string());
    }
    auto totals = s->stage(roots);
    if (!totals.ok()) return totals.status();
    if (result_p != nullptr) {
      *result_p = larder_stage_result_t{totals->files, totals->bytes, totals->chunks,
                                        totals->not_cached, totals->skipped};
    }
    return {};
  });
}

larder_status_t larder_stats_get(larder_stats_t* stats_p) {
  return status_boundary([&]() -> Status {
    auto s = Runtime::instance().session();
    if (!s) return Status(Errc::kUnavailable, 0, "larder is not initialized");
    if (stats_p == nullptr) return larder::invalid_argument("stats_p is null");
    using larder::Counter;
    const larder::StatsSnapshot snap = s->stats().snapshot();
    larder_stats_t out{};
    out.pfs_bytes_read = snap.get(Counter::pfs_bytes_read);
    out.pfs_read_ops = snap.get(Counter::pfs_read_ops);
    out.pfs_stat_ops = snap.get(Counter::pfs_stat_ops);
    out.pfs_list_ops = snap.get(Counter::pfs_list_ops);
    out.hits_self = snap.get(Counter::hits_self);
    out.hits_node = snap.get(Counter::hits_node);
    out.hits_remote = snap.get(Counter::hits_remote);
    out.misses = snap.get(Counter::misses);
    out.fallbacks = snap.get(Counter::fallbacks);
    out.transport_bytes = snap.get(Counter::transport_bytes);
    *stats_p = out;
    return {};
  });
}

larder_status_t larder_stats_json(char* buf, size_t size, size_t* needed_p) {
  return status_boundary([&]() -> Status {
    auto s = Runtime::instance().session();
    if (!s) return Status(Errc::kUnavailable, 0, "larder is not initialized");
    const std::string json = s->stats().snapshot().to_json();
    if (buf != nullptr && size > 0) {
      const size_t n = std::min(size - 1, json.size());
      std::memcpy(buf, json.data(), n);
      buf[n] = '\0';
    }
    if (needed_p != nullptr) *needed_p = json.size() + 1;
    return {};
  });
}

}  // extern "C"
