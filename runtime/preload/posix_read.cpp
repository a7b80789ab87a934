// read, pread, readv, preadv (and their 64-bit and fortified names), lseek, sendfile and
// copy_file_range on managed descriptors.
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include <vector>

#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

// Reads the iovecs at `offset`, stopping at the first short piece; -1 with errno.
ssize_t read_vector(FileService& svc, const OpenFile& file, const iovec* iov, int count,
                    std::uint64_t offset) {
  if (count < 0 || count > IOV_MAX) {
    errno = EINVAL;
    return -1;
  }
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (iov[i].iov_len == 0) continue;
    const ssize_t n = ops::read_at(svc, file, iov[i].iov_base, iov[i].iov_len,
                                   offset + static_cast<std::uint64_t>(total));
    if (n < 0) return total > 0 ? total : -1;
    total += n;
    if (static_cast<size_t>(n) < iov[i].iov_len) break;
  }
  return total;
}

std::optional<ssize_t> serve_preadv(FileService& svc, int fd, const iovec* iov, int count,
                                    off64_t offset) {
  auto file = files().find(fd);
  if (!file) return std::nullopt;
  if (offset == -1) {  // preadv2: the current position, advanced
    for (;;) {
      std::uint64_t pos = file->position.load();
      const ssize_t n = read_vector(svc, *file, iov, count, pos);
      if (n < 0 || file->position.compare_exchange_strong(pos, pos + static_cast<std::uint64_t>(n)))
        return n;
    }
  }
  if (offset < 0) {
    errno = EINVAL;
    return -1;
  }
  return read_vector(svc, *file, iov, count, static_cast<std::uint64_t>(offset));
}

// sendfile from a managed descriptor: read through the cache, write with the real write().
std::optional<ssize_t> serve_sendfile(FileService& svc, int out, int in, off64_t* offset,
                                      size_t count) {
  auto file = files().find(in);
  if (!file) return std::nullopt;
  std::vector<char> buf(std::min<size_t>(count, 1 << 20));
  ssize_t total = 0;
  std::uint64_t pos =
      offset != nullptr ? static_cast<std::uint64_t>(*offset) : file->position.load();
  while (static_cast<size_t>(total) < count) {
    const size_t want = std::min(buf.size(), count - static_cast<size_t>(total));
    const ssize_t n = ops::read_at(svc, *file, buf.data(), want, pos);
    if (n <= 0) {
      if (n < 0 && total == 0) return -1;
      break;
    }
    ssize_t written = 0;
    while (written < n) {
      const ssize_t w = ::write(out, buf.data() + written, static_cast<size_t>(n - written));
      if (w < 0) {
        if (errno == EINTR) continue;
        if (total + written == 0) return -1;
        break;
      }
      written += w;
    }
    total += written;
    pos += static_cast<std::uint64_t>(written);
    if (written < n) break;
  }
  if (offset != nullptr) {
    *offset = static_cast<off64_t>(pos);
  } else {
    file->position.store(pos);
  }
  return total;
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;
namespace ops = larder::ops;

extern "C" {

ssize_t read(int fd, void* buf, size_t n) {
  if (fd_passes_through(fd)) return call(real::read, fd, buf, n);
  return on_fd(
      fd, [&] { return call(real::read, fd, buf, n); },
      [&](FileService& svc) { return ops::try_read(svc, files(), fd, buf, n); });
}

ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  if (fd_passes_through(fd)) return call(real::__read_chk, fd, buf, n, buflen);
  return on_fd(
      fd, [&] { return call(real::__read_chk, fd, buf, n, buflen); },
      [&](FileService& svc) { return ops::try_read(svc, files(), fd, buf, std::min(n, buflen)); });
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  if (fd_passes_through(fd)) return call(real::pread, fd, buf, n, off);
  return on_fd(
      fd, [&] { return call(real::pread, fd, buf, n, off); },
      [&](FileService& svc) { return ops::try_pread(svc, files(), fd, buf, n, off); });
}

ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  if (fd_passes_through(fd)) return call(real::pread64, fd, buf, n, off);
  return on_fd(
      fd, [&] { return call(real::pread64, fd, buf, n, off); },
      [&](FileService& svc) { return ops::try_pread(svc, files(), fd, buf, n, off); });
}

ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  if (fd_passes_through(fd)) return call(real::__pread_chk, fd, buf, n, off, buflen);
  return on_fd(
      fd, [&] { return call(real::__pread_chk, fd, buf, n, off, buflen); },
      [&](FileService& svc) {
        return ops::try_pread(svc, files(), fd, buf, std::min(n, buflen), off);
      });
}

ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  if (fd_passes_through(fd)) return call(real::__pread64_chk, fd, buf, n, off, buflen);
  return on_fd(
      fd, [&] { return call(real::__pread64_chk, fd, buf, n, off, buflen); },
      [&](FileService& svc) {
        return ops::try_pread(svc, files(), fd, buf, std::min(n, buflen), off);
      });
}

ssize_t readv(int fd, const struct iovec* iov, int count) {
  if (fd_passes_through(fd)) return call(real::readv, fd, iov, count);
  return on_fd(
      fd, [&] { return call(real::readv, fd, iov, count); },
      [&](FileService& svc) { return serve_preadv(svc, fd, iov, count, -1); });
}

ssize_t preadv(int fd, const struct iovec* iov, int count, off_t off) {
  if (fd_passes_through(fd)) return call(real::preadv, fd, iov, count, off);
  return on_fd(
      fd, [&] { return call(real::preadv, fd, iov, count, off); },
      [&](FileService& svc) {
        if (off == -1) {
          errno = EINVAL;
          return std::optional<ssize_t>(-1);
        }
        return serve_preadv(svc, fd, iov, count, off);
      });
}

ssize_t preadv64(int fd, const struct iovec* iov, int count, off64_t off) {
  if (fd_passes_through(fd)) return call(real::preadv64, fd, iov, count, off);
  return on_fd(
      fd, [&] { return call(real::preadv64, fd, iov, count, off); },
      [&](FileService& svc) {
        if (off == -1) {
          errno = EINVAL;
          return std::optional<ssize_t>(-1);
        }
        return serve_preadv(svc, fd, iov, count, off);
      });
}

ssize_t preadv2(int fd, const struct iovec* iov, int count, off_t off, int flags) {
  if (fd_passes_through(fd)) return call(real::preadv2, fd, iov, count, off, flags);
  return on_fd(
      fd, [&] { return call(real::preadv2, fd, iov, count, off, flags); },
      [&](FileService& svc) { return serve_preadv(svc, fd, iov, count, off); });
}

ssize_t preadv64v2(int fd, const struct iovec* iov, int count, off64_t off, int flags) {
  if (fd_passes_through(fd)) return call(real::preadv64v2, fd, iov, count, off, flags);
  return on_fd(
      fd, [&] { return call(real::preadv64v2, fd, iov, count, off, flags); },
      [&](FileService& svc) { return serve_preadv(svc, fd, iov, count, off); });
}

off_t lseek(int fd, off_t off, int whence) noexcept {
  if (fd_passes_through(fd)) return call(real::lseek, fd, off, whence);
  return on_fd(
      fd, [&] { return call(real::lseek, fd, off, whence); },
      [&](FileService&) { return ops::try_lseek(files(), fd, off, whence); });
}

off64_t lseek64(int fd, off64_t off, int whence) noexcept {
  if (fd_passes_through(fd)) return call(real::lseek64, fd, off, whence);
  return on_fd(
      fd, [&] { return call(real::lseek64, fd, off, whence); },
      [&](FileService&) { return ops::try_lseek(files(), fd, off, whence); });
}

ssize_t sendfile(int out, int in, off_t* offset, size_t count) noexcept {
  if (fd_passes_through(in)) return call(real::sendfile, out, in, offset, count);
  return on_fd(
      in, [&] { return call(real::sendfile, out, in, offset, count); },
      [&](FileService& svc) { return serve_sendfile(svc, out, in, offset, count); });
}

ssize_t sendfile64(int out, int in, off64_t* offset, size_t count) noexcept {
  if (fd_passes_through(in)) return call(real::sendfile64, out, in, offset, count);
  return on_fd(
      in, [&] { return call(real::sendfile64, out, in, offset, count); },
      [&](FileService& svc) { return serve_sendfile(svc, out, in, offset, count); });
}

ssize_t copy_file_range(int in, off64_t* in_off, int out, off64_t* out_off, size_t len,
                        unsigned int flags) {
  // A managed source is not a file the kernel can copy from: say so the way the kernel does for
  // files on different file systems, so callers fall back to read() and write().
  if (fd_is_managed(in) || fd_is_managed(out)) {
    errno = EXDEV;
    return -1;
  }
  return call(real::copy_file_range, in, in_off, out, out_off, len, flags);
}

}  // extern "C"
