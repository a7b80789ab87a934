// rename, renameat, renameat2, unlink and unlinkat where a name lies under LARDER_PRODUCE
// (produce_ops.hpp, docs/user-guide.md "Producing files"): a file renamed into the produce
// directory is published under its new name (the atomic-save pattern: write a temporary file,
// rename it into place), and unlink cannot take back a published file. readlink and readlinkat
// of /proc/self/fd/N (or /dev/fd/N) for a managed descriptor N give the managed file's path, as
// without Larder (the descriptor itself is a placeholder of /dev/null). Every other call is the
// file system's.
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/api/produce_ops.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/pfs/file_copy.hpp"
#include "runtime/preload/wrap.hpp"

namespace larder::preload {
namespace {

// A file this process produces, renamed out of LARDER_PRODUCE before it was published: it goes
// to its new name on the file system, unpublished (readers of the old name read the PFS).
std::optional<int> rename_out(FileService& svc, const std::string& from, const std::string& to) {
  auto own = runtime().produced().writing(from);
  if (!own || !runtime().produced().finish(own)) return std::nullopt;
  svc.produce_abandon(own->path, own->canonical);
  if (Status s = copy_file_atomically(own->staging, to, own->mode, nullptr); !s.ok()) {
    errno = s.native_code() != 0 ? s.native_code() : EIO;
    return -1;
  }
  sys::unlink(own->staging.c_str());
  return 0;
}

template <class Real>
int rename_at(int fromfd, const char* from, int tofd, const char* to, unsigned flags,
              Real&& real_call) noexcept {
  real::ensure();
  // RENAME_NOREPLACE, RENAME_EXCHANGE...: the file system's.
  if (!enabled() || larder::t_reentry_depth != 0 || flags != 0) return real_call();
  if (passes_through(from) && passes_through(to)) return real_call();
  ReentryGuard guard;
  try {
    const Config& config = runtime().config();
    auto abs_from = absolute_at(fromfd, from);
    auto abs_to = absolute_at(tofd, to);
    if (!abs_from || !abs_to) return real_call();
    const bool into = config.produced(*abs_to);
    if (!into && !config.produced(*abs_from)) return real_call();
    Service svc = service();
    if (!svc) return real_call();
    std::optional<int> r = into
                               ? produce::rename(*svc.svc, runtime().produced(), *abs_from, *abs_to)
                               : rename_out(*svc.svc, *abs_from, *abs_to);
    if (r) return *r;
  } catch (...) {
  }
  return real_call();
}

template <class Real>
int unlink_at(int dirfd, const char* path, int flags, Real&& real_call) noexcept {
  if ((flags & AT_REMOVEDIR) != 0) return real_call();
  return on_path(dirfd, path, real_call, [&](FileService& svc, const std::string& abs) {
    if (!svc.config().produced(abs)) return std::optional<int>();
    return produce::unlink(svc, runtime().produced(), abs);
  });
}

// readlink of a managed descriptor's alias: the file's path (truncated to `size`, unterminated,
// as readlink does); nullopt for any other path.
std::optional<ssize_t> managed_link(const char* path, char* buf, size_t size) noexcept {
  if (path == nullptr || !enabled() || larder::t_reentry_depth != 0) return std::nullopt;
  const int fd = managed_fd_alias(path);
  if (fd < 0) return std::nullopt;
  ReentryGuard guard;
  try {
    auto file = files().find(fd);
    if (!file) return std::nullopt;
    const std::string& name = file->file.path;
    const std::size_t n = std::min(size, name.size());
    std::copy_n(name.data(), n, buf);  // readlink does not terminate what it writes
    return static_cast<ssize_t>(n);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file

extern "C" {

int rename(const char* from, const char* to) noexcept {
  return rename_at(AT_FDCWD, from, AT_FDCWD, to, 0, [&] { return call(real::rename, from, to); });
}

int renameat(int fromfd, const char* from, int tofd, const char* to) noexcept {
  return rename_at(fromfd, from, tofd, to, 0,
                   [&] { return call(real::renameat, fromfd, from, tofd, to); });
}

int renameat2(int fromfd, const char* from, int tofd, const char* to, unsigned int flags) noexcept {
  return rename_at(fromfd, from, tofd, to, flags,
                   [&] { return call(real::renameat2, fromfd, from, tofd, to, flags); });
}

int unlink(const char* path) noexcept {
  return unlink_at(AT_FDCWD, path, 0, [&] { return call(real::unlink, path); });
}

int unlinkat(int dirfd, const char* path, int flags) noexcept {
  return unlink_at(dirfd, path, flags, [&] { return call(real::unlinkat, dirfd, path, flags); });
}

ssize_t readlink(const char* path, char* buf, size_t size) noexcept {
  real::ensure();
  if (auto n = managed_link(path, buf, size)) return *n;
  return call(real::readlink, path, buf, size);
}

ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t size) noexcept {
  real::ensure();
  if (auto n = managed_link(path, buf, size)) return *n;  // absolute aliases only
  return call(real::readlinkat, dirfd, path, buf, size);
}

}  // extern "C"
