#include "runtime/common/sys.hpp"

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define LARDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LARDER_ASAN 1
#endif
#endif
#if defined(LARDER_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace larder::sys {
namespace {

// The kernel returns -errno; syscall(2) already maps that to -1 and errno.
template <class T>
T as(long rc) noexcept {
  return static_cast<T>(rc);
}

}  // namespace

int open(const char* path, int flags, mode_t mode) noexcept {
  return openat(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, mode_t mode) noexcept {
  long rc;
  do {
    rc = ::syscall(SYS_openat, dirfd, path, flags | O_LARGEFILE, mode);
  } while (rc < 0 && errno == EINTR);
  return as<int>(rc);
}

int close(int fd) noexcept {
  return as<int>(::syscall(SYS_close, fd));
}

ssize_t pread(int fd, void* buf, std::size_t count, off_t offset) noexcept {
  return as<ssize_t>(::syscall(SYS_pread64, fd, buf, count, offset));
}

ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset) noexcept {
  return as<ssize_t>(::syscall(SYS_pwrite64, fd, buf, count, offset));
}

ssize_t read(int fd, void* buf, std::size_t count) noexcept {
  return as<ssize_t>(::syscall(SYS_read, fd, buf, count));
}

ssize_t write(int fd, const void* buf, std::size_t count) noexcept {
  return as<ssize_t>(::syscall(SYS_write, fd, buf, count));
}

ssize_t pread_full(int fd, void* buf, std::size_t count, off_t offset) noexcept {
  auto* out = static_cast<char*>(buf);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t n = pread(fd, out + done, count - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

ssize_t write_full(int fd, const void* buf, std::size_t count) noexcept {
  const auto* in = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t n = write(fd, in + done, count - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

int fstat(int fd, struct stat* st) noexcept {
  return as<int>(::syscall(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH));
}

int stat(const char* path, struct stat* st) noexcept {
  return as<int>(::syscall(SYS_newfstatat, AT_FDCWD, path, st, 0));
}

int lstat(const char* path, struct stat* st) noexcept {
  return as<int>(::syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW));
}

int fallocate(int fd, int mode, off_t offset, off_t len) noexcept {
  long rc;
  do {
    rc = ::syscall(SYS_fallocate, fd, mode, offset, len);
  } while (rc < 0 && errno == EINTR);
  return as<int>(rc);
}

int ftruncate(int fd, off_t len) noexcept {
  return as<int>(::syscall(SYS_ftruncate, fd, len));
}
int mkdir(const char* path, mode_t mode) noexcept {
  return as<int>(::syscall(SYS_mkdirat, AT_FDCWD, path, mode));
}
int unlink(const char* path) noexcept {
  return as<int>(::syscall(SYS_unlinkat, AT_FDCWD, path, 0));
}
int unlinkat(int dirfd, const char* path, int flags) noexcept {
  return as<int>(::syscall(SYS_unlinkat, dirfd, path, flags));
}
int rmdir(const char* path) noexcept {
  return as<int>(::syscall(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR));
}
int flock(int fd, int op) noexcept {
  long rc;
  do {
    rc = ::syscall(SYS_flock, fd, op);
  } while (rc < 0 && errno == EINTR);
  return as<int>(rc);
}
int dup(int fd) noexcept {
  return as<int>(::syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0));
}

void* mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t offset) noexcept {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the system call returns the address as a long
  void* p = reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
  if (p != MAP_FAILED) forget_shadow(p, len);
  return p;
}

void forget_shadow([[maybe_unused]] void* addr, [[maybe_unused]] std::size_t len) noexcept {
#if defined(LARDER_ASAN)
  // Zeroed without touching the shadow page by page (reading it alone made each rank's
  // anonymous memory grow by an eighth of its arenas): the shadow pages wholly inside the range
  // are given back (MADV_DONTNEED: they read as zero, and cost nothing until written; ASan does
  // the same for large regions), the partial ones at the edges cleared by ASan.
  std::size_t scale = 0;
  std::size_t offset = 0;
  __asan_get_shadow_mapping(&scale, &offset);
  const auto page = static_cast<std::uintptr_t>(::getpagesize());
  const std::uintptr_t unit = page << scale;  // the bytes one shadow page describes
  const auto beg = reinterpret_cast<std::uintptr_t>(addr);
  const std::uintptr_t end = beg + len;
  const std::uintptr_t inner_beg = (beg + unit - 1) / unit * unit;
  const std::uintptr_t inner_end = end / unit * unit;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the shadow's address is computed
  auto* shadow = reinterpret_cast<void*>((inner_beg >> scale) + offset);
  if (inner_beg >= inner_end ||
      madvise(shadow, (inner_end - inner_beg) >> scale, MADV_DONTNEED) != 0) {
    __asan_unpoison_memory_region(addr, len);
    return;
  }
  __asan_unpoison_memory_region(addr, inner_beg - beg);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the end of the inner part
  __asan_unpoison_memory_region(reinterpret_cast<void*>(inner_end), end - inner_end);
#endif
}

int munmap(void* addr, std::size_t len) noexcept {
  return as<int>(::syscall(SYS_munmap, addr, len));
}

int madvise(void* addr, std::size_t len, int advice) noexcept {
  long rc;
  do {
    rc = ::syscall(SYS_madvise, addr, len, advice);
  } while (rc < 0 && errno == EINTR);
  return as<int>(rc);
}

int mincore(void* addr, std::size_t len, unsigned char* vec) noexcept {
  long rc;
  do {
    rc = ::syscall(SYS_mincore, addr, len, vec);
  } while (rc < 0 && errno == EAGAIN);
  return as<int>(rc);
}

long getdents64(int fd, void* buf, std::size_t len) noexcept {
  return ::syscall(SYS_getdents64, fd, buf, len);
}

int access(const char* path, int mode) noexcept {
  return as<int>(::syscall(SYS_faccessat, AT_FDCWD, path, mode));
}

int rename(const char* from, const char* to) noexcept {
  return as<int>(::syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to));
}

int link(const char* from, const char* to) noexcept {
  return as<int>(::syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0));
}

int chmod(const char* path, mode_t mode) noexcept {
  return as<int>(::syscall(SYS_fchmodat, AT_FDCWD, path, mode));
}

int fchmod(int fd, mode_t mode) noexcept {
  return as<int>(::syscall(SYS_fchmod, fd, mode));
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, std::size_t count) noexcept {
  return as<ssize_t>(::syscall(SYS_sendfile, out_fd, in_fd, offset, count));
}

}  // namespace larder::sys
