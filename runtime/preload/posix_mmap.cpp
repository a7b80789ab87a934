// mmap of a managed descriptor. First choice: the node file (Cache::node_file), a whole copy of
// the file on this node that every process of the node maps, so the kernel's page cache holds it
// once; the mapping is made exactly as asked (MAP_SHARED or MAP_PRIVATE, copy-on-write for
// private writes, any length: past the end of the file the kernel behaves as for the PFS's file).
// When there is no node file (a worker process, no room, any failure): a private anonymous
// mapping filled through the cache, then given the protection asked for. A writable shared
// mapping needs a writable descriptor (EACCES, as the kernel says for a read-only one).
// A writable shared mapping of a file being produced (LARDER_PRODUCE) is the kernel's, counted:
// the file is published once its last descriptor and mapping are gone (munmap).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/common/sys.hpp"

#include "runtime/api/produce_ops.hpp"
#include "runtime/preload/ucx_hooks.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

// Every mapping the preload makes or passes on: through UCX when Larder took mmap back from
// UCX's hook (ucx_hooks.hpp), so UCX still sees it; else libc's.
void* pass_mmap(void* addr, size_t len, int prot, int flags, int fd, off64_t offset) noexcept {
  if (MmapFn ucm = ucm_mmap()) {
    return ucm(addr, len, prot, flags, fd, static_cast<off_t>(offset));
  }
  real::ensure();  // mmap may be called by other libraries' constructors before ours
  return call(real::mmap64, addr, len, prot, flags, fd, offset);
}

// A mapping of a produced file's descriptor: the kernel's; a writable shared one is counted.
// munmap, to UCX when Larder took it back from UCX's hook, else libc's.
int pass_munmap(void* addr, size_t len) noexcept {
  if (MunmapFn ucm = ucm_munmap()) return ucm(addr, len);
  real::ensure();
  return call(real::munmap, addr, len);
}

std::optional<void*> produced_mmap(void* addr, size_t len, int prot, int flags, int fd,
                                   off64_t offset) {
  auto produced = runtime().produced().find(fd);
  if (!produced) return std::nullopt;
  void* map = pass_mmap(addr, len, prot, flags, fd, offset);
  const int type = flags & MAP_TYPE;
  if (map != MAP_FAILED && (prot & PROT_WRITE) != 0 &&
      (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && owns_table()) {
    const int err = errno;
    runtime().produced().add_map(map, len, std::move(produced));
    errno = err;
  }
  return map;
}

std::optional<void*> serve_mmap(FileService& svc, void* addr, size_t len, int prot, int flags,
                                int fd, off64_t offset) {
  if (auto p = produced_mmap(addr, len, prot, flags, fd, offset)) return p;
  auto file = files().find(fd);
  if (!file) return std::nullopt;
  const auto page = static_cast<off64_t>(::sysconf(_SC_PAGESIZE));
  if (len == 0 || offset < 0 || offset % page != 0) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  const int type = flags & MAP_TYPE;
  if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) != 0) {
    errno = EACCES;
    return MAP_FAILED;
  }
  if (auto name = svc.node_file(file->file); name.ok()) {
    const int node_fd = sys::open(name->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (node_fd >= 0) {
      void* map = pass_mmap(addr, len, prot, flags, node_fd, offset);
      const int err = errno;
      sys::close(node_fd);
      if (map != MAP_FAILED) return map;
      errno = err;
      if ((flags & MAP_FIXED) != 0) return MAP_FAILED;  // the kernel's answer for that address
    }
  }
  const int anon_flags = (flags & ~MAP_TYPE) | MAP_PRIVATE | MAP_ANONYMOUS;
  void* map = pass_mmap(addr, len, PROT_READ | PROT_WRITE, anon_flags, -1, 0);
  if (map == MAP_FAILED) return MAP_FAILED;
  sys::forget_shadow(map, len);  // filled by the (in sanitizer builds, checked) copies below
  const auto start = static_cast<std::uint64_t>(offset);
  if (start < file->file.size) {
    const std::size_t want = std::min<std::uint64_t>(len, file->file.size - start);
    std::size_t done = 0;
    while (done < want) {
      const ssize_t n =
          ops::read_at(svc, *file, static_cast<char*>(map) + done, want - done, start + done);
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        pass_munmap(map, len);
        errno = err;
        return MAP_FAILED;
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (prot != (PROT_READ | PROT_WRITE) && ::mprotect(map, len, prot) != 0) {
    const int err = errno;
    pass_munmap(map, len);
    errno = err;
    return MAP_FAILED;
  }
  return map;
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file
using larder::FileService;

extern "C" {

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) noexcept {
  if (fd < 0 || (flags & MAP_ANONYMOUS) != 0) return pass_mmap(addr, len, prot, flags, fd, offset);
  return on_fd(
      fd, [&] { return pass_mmap(addr, len, prot, flags, fd, offset); },
      [&](FileService& svc) { return serve_mmap(svc, addr, len, prot, flags, fd, offset); });
}

void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t offset) noexcept {
  if (fd < 0 || (flags & MAP_ANONYMOUS) != 0) return pass_mmap(addr, len, prot, flags, fd, offset);
  return on_fd(
      fd, [&] { return pass_mmap(addr, len, prot, flags, fd, offset); },
      [&](FileService& svc) { return serve_mmap(svc, addr, len, prot, flags, fd, offset); });
}

int munmap(void* addr, size_t len) noexcept {
  // The end of a writable mapping of a file being produced may publish it.
  const larder::Runtime* rt = larder::Runtime::existing();
  if (rt == nullptr || !enabled() || !runtime().produced().any_maps() || !owns_table()) {
    return pass_munmap(addr, len);
  }
  ReentryGuard guard;
  auto due = runtime().produced().release_maps(addr, len);
  const int rc = pass_munmap(addr, len);
  const int err = errno;
  for (const auto& file : due) {
    Service svc = service();
    larder::produce::publish(svc.svc, runtime().produced(), file);
  }
  errno = err;
  return rc;
}

}  // extern "C"
