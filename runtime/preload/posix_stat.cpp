// The stat family (stat, lstat, fstat, fstatat and their 64-bit names, glibc's __xstat
// compatibility entry points, statx) and access/faccessat/euidaccess on managed paths and
// descriptors: served from the job's metadata cache.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "runtime/api/produce_ops.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

static_assert(sizeof(struct stat) == sizeof(struct stat64), "stat and stat64 differ here");

std::optional<int> serve_path_stat(FileService& svc, const std::string& abs, struct stat* st,
                                   bool follow) {
  // A file this process is producing: its own view of it (readers elsewhere wait for it).
  if (svc.config().produced(abs)) {
    if (auto rc = produce::stat_own(runtime().produced(), abs, st)) return rc;
  }
  return ops::stat_path(svc, abs, st, follow);
}

// fstat() of a descriptor of a file being produced: the staging file, with the mode asked for.
std::optional<int> produced_fstat(int fd, struct stat* st) {
  auto produced = runtime().produced().find(fd);
  if (!produced) return std::nullopt;
  if (sys::fstat(fd, st) != 0) return -1;
  st->st_mode = S_IFREG | produced->mode;
  return 0;
}

template <class Stat>
std::optional<int> as_stat64(std::optional<int> rc, const struct stat& st, Stat* out) {
  if (rc && *rc == 0) std::memcpy(out, &st, sizeof st);
  return rc;
}

// stat()/lstat() of a path relative to `dirfd`, or fstat() of `dirfd` for AT_EMPTY_PATH.
template <class Stat, class Real>
int stat_at(int dirfd, const char* path, Stat* out, int flags, Real&& real_call) noexcept {
  if ((flags & AT_EMPTY_PATH) != 0 && path != nullptr && *path == '\0') {
    return on_fd(dirfd, real_call, [&](FileService&) {
      struct stat st {};
      return as_stat64(ops::try_fstat(files(), dirfd, &st), st, out);
    });
  }
  return on_path(dirfd, path, real_call, [&](FileService& svc, const std::string& abs) {
    struct stat st {};
    return as_stat64(serve_path_stat(svc, abs, &st, (flags & AT_SYMLINK_NOFOLLOW) == 0), st, out);
  });
}

template <class Stat, class Real>
int fstat_fd(int fd, Stat* out, Real&& real_call) noexcept {
  return on_fd(fd, real_call, [&](FileService&) {
    struct stat st {};
    if (auto rc = produced_fstat(fd, &st)) return as_stat64(rc, st, out);
    return as_stat64(ops::try_fstat(files(), fd, &st), st, out);
  });
}

struct statx_timestamp to_statx_time(const struct timespec& ts) {
  struct statx_timestamp t {};
  t.tv_sec = ts.tv_sec;
  t.tv_nsec = static_cast<std::uint32_t>(ts.tv_nsec);
  return t;
}

void to_statx(const struct stat& st, struct statx* out) {
  std::memset(out, 0, sizeof *out);
  out->stx_mask = STATX_BASIC_STATS;
  out->stx_blksize = static_cast<std::uint32_t>(st.st_blksize);
  out->stx_nlink = static_cast<std::uint32_t>(st.st_nlink);
  out->stx_uid = st.st_uid;
  out->stx_gid = st.st_gid;
  out->stx_mode = static_cast<std::uint16_t>(st.st_mode);
  out->stx_ino = st.st_ino;
  out->stx_size = static_cast<std::uint64_t>(st.st_size);
  out->stx_blocks = static_cast<std::uint64_t>(st.st_blocks);
  out->stx_atime = to_statx_time(st.st_atim);
  out->stx_mtime = to_statx_time(st.st_mtim);
  out->stx_ctime = to_statx_time(st.st_ctim);
  out->stx_dev_major = major(st.st_dev);
  out->stx_dev_minor = minor(st.st_dev);
}

bool in_groups(gid_t gid) {
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i) {
    if (groups[static_cast<std::size_t>(i)] == gid) return true;
  }
  return false;
}

// access(2)'s verdict from the cached mode bits, for the real or effective ids.
int access_from(const struct stat& st, int mode, bool effective) {
  if (mode == F_OK) return 0;
  const uid_t uid = effective ? ::geteuid() : ::getuid();
  const gid_t gid = effective ? ::getegid() : ::getgid();
  if (uid == 0) {
    if ((mode & X_OK) != 0 && !S_ISDIR(st.st_mode) && (st.st_mode & 0111) == 0) {
      errno = EACCES;
      return -1;
    }
    return 0;
  }
  unsigned shift = 0;  // other
  if (st.st_uid == uid) {
    shift = 6;
  } else if (st.st_gid == gid || in_groups(st.st_gid)) {
    shift = 3;
  }
  const unsigned granted = (static_cast<unsigned>(st.st_mode) >> shift) & 7u;
  const unsigned wanted = static_cast<unsigned>(mode) & 7u;
  if ((granted & wanted) != wanted) {
    errno = EACCES;
    return -1;
  }
  return 0;
}

template <class Real>
int access_at(int dirfd, const char* path, int mode, int flags, bool effective,
              Real&& real_call) noexcept {
  return on_path(dirfd, path, real_call, [&](FileService& svc, const std::string& abs) {
    struct stat st {};
    auto rc = serve_path_stat(svc, abs, &st, (flags & AT_SYMLINK_NOFOLLOW) == 0);
    if (!rc || *rc != 0) return rc;
    return std::optional<int>(access_from(st, mode, effective || (flags & AT_EACCESS) != 0));
  });
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;

extern "C" {

// glibc's compatibility entry points have no prototypes in its current headers.
int __xstat(int ver, const char* path, struct stat* st);
int __xstat64(int ver, const char* path, struct stat64* st);
int __lxstat(int ver, const char* path, struct stat* st);
int __lxstat64(int ver, const char* path, struct stat64* st);
int __fxstat(int ver, int fd, struct stat* st);
int __fxstat64(int ver, int fd, struct stat64* st);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags);

int stat(const char* path, struct stat* st) noexcept {
  if (passes_through(path)) return call(real::stat, path, st);
  return out_of_line(
      [&] { return stat_at(AT_FDCWD, path, st, 0, [&] { return call(real::stat, path, st); }); });
}
int stat64(const char* path, struct stat64* st) noexcept {
  if (passes_through(path)) return call(real::stat64, path, st);
  return out_of_line(
      [&] { return stat_at(AT_FDCWD, path, st, 0, [&] { return call(real::stat64, path, st); }); });
}
int lstat(const char* path, struct stat* st) noexcept {
  if (passes_through(path)) return call(real::lstat, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW,
                   [&] { return call(real::lstat, path, st); });
  });
}
int lstat64(const char* path, struct stat64* st) noexcept {
  if (passes_through(path)) return call(real::lstat64, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW,
                   [&] { return call(real::lstat64, path, st); });
  });
}
int fstat(int fd, struct stat* st) noexcept {
  if (fd_passes_through(fd)) return call(real::fstat, fd, st);
  return fstat_fd(fd, st, [&] { return call(real::fstat, fd, st); });
}
int fstat64(int fd, struct stat64* st) noexcept {
  if (fd_passes_through(fd)) return call(real::fstat64, fd, st);
  return fstat_fd(fd, st, [&] { return call(real::fstat64, fd, st); });
}
int fstatat(int dirfd, const char* path, struct stat* st, int flags) noexcept {
  if (passes_through(path)) return call(real::fstatat, dirfd, path, st, flags);
  return out_of_line([&] {
    return stat_at(dirfd, path, st, flags,
                   [&] { return call(real::fstatat, dirfd, path, st, flags); });
  });
}
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) noexcept {
  if (passes_through(path)) return call(real::fstatat64, dirfd, path, st, flags);
  return out_of_line([&] {
    return stat_at(dirfd, path, st, flags,
                   [&] { return call(real::fstatat64, dirfd, path, st, flags); });
  });
}
int __xstat(int ver, const char* path, struct stat* st) {
  if (passes_through(path)) return call(real::__xstat, ver, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, 0, [&] { return call(real::__xstat, ver, path, st); });
  });
}
int __xstat64(int ver, const char* path, struct stat64* st) {
  if (passes_through(path)) return call(real::__xstat64, ver, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, 0, [&] { return call(real::__xstat64, ver, path, st); });
  });
}
int __lxstat(int ver, const char* path, struct stat* st) {
  if (passes_through(path)) return call(real::__lxstat, ver, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW,
                   [&] { return call(real::__lxstat, ver, path, st); });
  });
}
int __lxstat64(int ver, const char* path, struct stat64* st) {
  if (passes_through(path)) return call(real::__lxstat64, ver, path, st);
  return out_of_line([&] {
    return stat_at(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW,
                   [&] { return call(real::__lxstat64, ver, path, st); });
  });
}
int __fxstat(int ver, int fd, struct stat* st) {
  if (fd_passes_through(fd)) return call(real::__fxstat, ver, fd, st);
  return fstat_fd(fd, st, [&] { return call(real::__fxstat, ver, fd, st); });
}
int __fxstat64(int ver, int fd, struct stat64* st) {
  if (fd_passes_through(fd)) return call(real::__fxstat64, ver, fd, st);
  return fstat_fd(fd, st, [&] { return call(real::__fxstat64, ver, fd, st); });
}
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  if (passes_through(path)) return call(real::__fxstatat, ver, dirfd, path, st, flags);
  return out_of_line([&] {
    return stat_at(dirfd, path, st, flags,
                   [&] { return call(real::__fxstatat, ver, dirfd, path, st, flags); });
  });
}
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  if (passes_through(path)) return call(real::__fxstatat64, ver, dirfd, path, st, flags);
  return out_of_line([&] {
    return stat_at(dirfd, path, st, flags,
                   [&] { return call(real::__fxstatat64, ver, dirfd, path, st, flags); });
  });
}

int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* out) noexcept {
  if (passes_through(path)) return call(real::statx, dirfd, path, flags, mask, out);
  auto real_call = [&] { return call(real::statx, dirfd, path, flags, mask, out); };
  auto fill = [&](std::optional<int> rc, const struct stat& st) {
    if (rc && *rc == 0) to_statx(st, out);
    return rc;
  };
  // glibc declares `path` nonnull, yet Linux (6.11 on) accepts NULL with AT_EMPTY_PATH.
  // NOLINTNEXTLINE(clang-diagnostic-tautological-pointer-compare): see the line above
  if ((flags & AT_EMPTY_PATH) != 0 && path != nullptr && *path == '\0') {
    return on_fd(dirfd, real_call, [&](FileService&) {
      struct stat st {};
      return fill(larder::ops::try_fstat(files(), dirfd, &st), st);
    });
  }
  return on_path(dirfd, path, real_call, [&](FileService& svc, const std::string& abs) {
    struct stat st {};
    return fill(serve_path_stat(svc, abs, &st, (flags & AT_SYMLINK_NOFOLLOW) == 0), st);
  });
}

int access(const char* path, int mode) noexcept {
  if (passes_through(path)) return call(real::access, path, mode);
  return out_of_line([&] {
    return access_at(AT_FDCWD, path, mode, 0, false,
                     [&] { return call(real::access, path, mode); });
  });
}
int faccessat(int dirfd, const char* path, int mode, int flags) noexcept {
  if (passes_through(path)) return call(real::faccessat, dirfd, path, mode, flags);
  return out_of_line([&] {
    return access_at(dirfd, path, mode, flags, false,
                     [&] { return call(real::faccessat, dirfd, path, mode, flags); });
  });
}
int euidaccess(const char* path, int mode) noexcept {
  if (passes_through(path)) return call(real::euidaccess, path, mode);
  return out_of_line([&] {
    return access_at(AT_FDCWD, path, mode, 0, true,
                     [&] { return call(real::euidaccess, path, mode); });
  });
}
int eaccess(const char* path, int mode) noexcept {
  if (passes_through(path)) return call(real::eaccess, path, mode);
  return out_of_line([&] {
    return access_at(AT_FDCWD, path, mode, 0, true,
                     [&] { return call(real::eaccess, path, mode); });
  });
}

}  // extern "C"
