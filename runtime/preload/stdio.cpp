// fopen/fopen64/fdopen of managed files: a stdio stream made with fopencookie whose reads, seeks
// and close go through the managed descriptor, so glibc's own stdio (fread, fgets, fseek, ftell,
// getc, fscanf, fclose...) runs on top of the cache. fileno() of the stream is the managed
// descriptor, so code that mixes the FILE and its descriptor (libstdc++'s filebuf reads with
// read(fileno(f))) is served too. Writable modes go to the file system, except under
// LARDER_PRODUCE: there the stream writes the file being produced (its staging file, through
// its descriptor), and its fclose, which glibc makes without calling close(), is the close that
// publishes it (produce_ops.hpp).
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "runtime/api/produce_ops.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

int fd_of(void* cookie) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(cookie));
}

ssize_t cookie_read(void* cookie, char* buf, size_t n) {
  return ::read(fd_of(cookie), buf, n);
}

int cookie_seek(void* cookie, off64_t* pos, int whence) {
  const off64_t r = ::lseek64(fd_of(cookie), *pos, whence);
  if (r < 0) return -1;
  *pos = r;
  return 0;
}

int cookie_close(void* cookie) {
  return ::close(fd_of(cookie));
}

ssize_t cookie_write(void* cookie, const char* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_of(cookie), buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return done > 0 ? static_cast<ssize_t>(done) : -1;
    done += static_cast<size_t>(w);
  }
  return static_cast<ssize_t>(n);
}

// The open(2) flags of a stdio mode ("r", "w+", "ab", "wxe"...).
int stdio_flags(const char* mode) {
  int flags = 0;
  switch (mode != nullptr ? mode[0] : 'r') {
    case 'w':
      flags = O_WRONLY | O_CREAT | O_TRUNC;
      break;
    case 'a':
      flags = O_WRONLY | O_CREAT | O_APPEND;
      break;
    default:
      flags = O_RDONLY;
      break;
  }
  for (const char* m = mode != nullptr ? mode + 1 : ""; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*m == 'x') flags |= O_EXCL;
    if (*m == 'e') flags |= O_CLOEXEC;
  }
  return flags;
}

// The open(2) flags of a read-only stdio mode; nullopt for modes that write.
std::optional<int> read_only_flags(const char* mode) {
  if (mode == nullptr || mode[0] != 'r') return std::nullopt;
  int flags = O_RDONLY;
  for (const char* m = mode + 1; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') return std::nullopt;
    if (*m == 'e') flags |= O_CLOEXEC;
  }
  return flags;
}

// A stream over managed descriptor `fd` (or, with `mode` that writes, a produced file's
// descriptor); closes `fd` when it cannot be made.
FILE* stream_over(int fd, const char* mode = "r") {
  cookie_io_functions_t io{};
  io.read = cookie_read;
  io.seek = cookie_seek;
  io.close = cookie_close;
  if ((stdio_flags(mode) & O_ACCMODE) != O_RDONLY) io.write = cookie_write;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the cookie carries the descriptor, not an address
  FILE* f = ::fopencookie(reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)), mode, io);
  if (f == nullptr) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return nullptr;
  }
  f->_fileno = fd;  // fileno() names the managed descriptor (glibc keeps -2 for cookie streams)
  return f;
}

template <class Real>
FILE* open_stream(const char* path, const char* mode, Real&& real_call) noexcept {
  return on_path(AT_FDCWD, path, real_call,
                 [&](FileService& svc, const std::string& abs) -> std::optional<FILE*> {
                   if (svc.config().produced(abs)) {
                     const int pflags = stdio_flags(mode);
                     auto fd = produce::open(svc, runtime().produced(), abs, pflags, 0666);
                     if (fd && *fd < 0) return static_cast<FILE*>(nullptr);
                     if (fd) return stream_over(*fd, mode);
                     if (produce::writes(pflags)) return std::nullopt;
                   }
                   auto flags = read_only_flags(mode);
                   if (!flags) {
                     runtime().mark_written(abs);
                     return std::nullopt;
                   }
                   auto fd = ops::open_path(svc, files(), abs, *flags);
                   if (!fd) return std::nullopt;
                   if (*fd < 0) return static_cast<FILE*>(nullptr);
                   return stream_over(*fd);
                 });
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;

extern "C" {

FILE* fopen(const char* path, const char* mode) {
  return open_stream(path, mode, [&] { return call(real::fopen, path, mode); });
}

FILE* fopen64(const char* path, const char* mode) {
  return open_stream(path, mode, [&] { return call(real::fopen64, path, mode); });
}

FILE* fdopen(int fd, const char* mode) noexcept {
  return on_fd(
      fd, [&] { return call(real::fdopen, fd, mode); },
      [&](FileService&) -> std::optional<FILE*> {
        if (runtime().produced().maybe_produced(fd)) return stream_over(fd, mode);
        if (!read_only_flags(mode)) {
          errno = EINVAL;  // the descriptor is read-only
          return static_cast<FILE*>(nullptr);
        }
        return stream_over(fd);
      });
}

}  // extern "C"
