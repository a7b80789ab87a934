#include "runtime/api/produce_ops.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"
#include "runtime/pfs/file_copy.hpp"

namespace larder::produce {
namespace {

std::atomic<unsigned> g_serial{0};  // distinct staging names within one process

// This process's umask, read without changing it (umask(2) would race with other threads).
mode_t current_umask() {
  mode_t mask = 022;
  UniqueFd fd(sys::open("/proc/self/status", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return mask;
  char buf[4096];
  const ssize_t n = sys::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return mask;
  buf[n] = '\0';
  if (const char* at = std::strstr(buf, "\nUmask:"); at != nullptr) {
    unsigned v = 0;
    if (std::sscanf(at + 7, "%o", &v) == 1) mask = static_cast<mode_t>(v);
  }
  return mask;
}

// -1 with errno from a failed service call (its errno, or EIO).
int fail_with(const Status& s) {
  errno = s.native_code() != 0 ? s.native_code() : EIO;
  return -1;
}

// Copies the bytes of descriptor `in` into descriptor `out` (from offset 0).
bool copy_bytes(int in, int out) {
  off_t at = 0;
  for (;;) {
    const ssize_t n = sys::sendfile(out, in, &at, 1 << 30);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
  }
}

}  // namespace

bool writes(int flags) noexcept {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

std::optional<int> open(FileService& svc, ProduceTable& table, const std::string& abs, int flags,
                        mode_t mode) {
  if ((flags & O_PATH) != 0 || (flags & O_DIRECTORY) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    return std::nullopt;
  }
  // The application's descriptor: the staging file, with its access mode and status flags.
  const int keep = flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW | O_NOCTTY);
  if (auto own = table.writing(abs)) {  // this process writes it already: another descriptor
    if ((flags & O_CREAT) != 0 && (flags & O_EXCL) != 0) {
      errno = EEXIST;
      return -1;
    }
    const int fd = sys::open(own->staging.c_str(), keep);
    if (fd < 0) return -1;
    if ((flags & O_TRUNC) != 0 && writes(flags) && sys::ftruncate(fd, 0) != 0) {
      const int err = errno;
      sys::close(fd);
      errno = err;
      return -1;
    }
    if (!table.add(fd, own)) {
      sys::close(fd);
      errno = EMFILE;
      return -1;
    }
    return fd;
  }
  if (!writes(flags)) return std::nullopt;  // a reader: the cache serves it (waiting if need be)
  const std::string dir = svc.produce_dir();
  if (dir.empty()) return std::nullopt;
  // What the file system would say about the name itself comes first, before anything is
  // claimed (a failed open must not keep the name from being produced later: HDF5 opens a file
  // without O_CREAT to see whether it exists before it creates it): a file of an earlier job is
  // there (O_EXCL: EEXIST; no O_TRUNC: its bytes come first), or nothing is (no O_CREAT: ENOENT).
  struct stat pfs {};
  const bool exists = sys::stat(abs.c_str(), &pfs) == 0;
  if (exists && S_ISDIR(pfs.st_mode)) {
    errno = EISDIR;
    return -1;
  }
  if (exists && (flags & O_CREAT) != 0 && (flags & O_EXCL) != 0) {
    errno = EEXIST;
    return -1;
  }
  if (!exists && (flags & O_CREAT) == 0) {
    errno = ENOENT;
    return -1;
  }
  auto canonical = svc.produce_claim(abs);
  if (!canonical.ok()) {
    if (canonical.status().code() == Errc::kUnavailable) {
      LARDER_LOG_LIMITED(kWarn,
                         "{} cannot be produced through the cache ({}); it is written to "
                         "the file system directly",
                         abs, canonical.status().message());
      return std::nullopt;
    }
    return fail_with(canonical.status());
  }
  auto give_up = [&](int err) {
    svc.produce_abandon(abs, *canonical);
    errno = err;
    return -1;
  };
  const std::string staging = dir + "/new-" + std::to_string(::getpid()) + "-" +
                              std::to_string(g_serial.fetch_add(1, std::memory_order_relaxed));
  {
    UniqueFd made(sys::open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!made.valid()) return give_up(errno);
    if (exists && (flags & O_TRUNC) == 0 && S_ISREG(pfs.st_mode)) {
      UniqueFd old(sys::open(abs.c_str(), O_RDONLY | O_CLOEXEC));
      if (!old.valid() || !copy_bytes(old.get(), made.get())) {
        const int err = errno;
        sys::unlink(staging.c_str());
        return give_up(err);
      }
    }
  }
  const int fd = sys::open(staging.c_str(), keep);
  if (fd < 0) {
    const int err = errno;
    sys::unlink(staging.c_str());
    return give_up(err);
  }
  auto file = std::make_shared<Produced>();
  file->path = abs;
  file->canonical = *canonical;
  file->staging = staging;
  file->mode = (mode & 07777 & ~current_umask());
  file->owner = ::getpid();
  if (!table.add(fd, file)) {
    sys::close(fd);
    sys::unlink(staging.c_str());
    return give_up(EMFILE);
  }
  return fd;
}

std::optional<int> stat_own(ProduceTable& table, const std::string& abs, struct stat* st) {
  auto own = table.writing(abs);
  if (!own) return std::nullopt;
  if (sys::stat(own->staging.c_str(), st) != 0) return -1;
  st->st_mode = S_IFREG | own->mode;
  return 0;
}

void publish(FileService* svc, ProduceTable& table, const std::shared_ptr<Produced>& file) {
  if (!table.finish(file)) return;
  if (svc != nullptr) {
    auto r = svc->produce_publish(file->path, file->canonical, file->staging, file->mode);
    if (r.ok()) {
      table.remember_published(file->path);
      return;
    }
    LARDER_LOG_LIMITED(kWarn, "{} could not be published: {}", file->path, r.status().message());
  }
  // Nothing can publish it (Larder stopped, the rank is gone): the PFS gets it, whole.
  struct stat st {};
  if (sys::stat(file->staging.c_str(), &st) != 0) return;  // taken by a failed publication
  if (Status s = copy_file_atomically(file->staging, file->path, file->mode, nullptr); s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "{} was written to the file system instead", file->path);
  } else {
    LARDER_LOG_LIMITED(kError, "{} is lost: {}", file->path, s.message());
  }
  sys::unlink(file->staging.c_str());
}

int close(FileService* svc, ProduceTable& table, int fd) {
  std::shared_ptr<Produced> due = table.release(fd);
  const int rc = sys::close(fd);
  const int err = errno;
  if (due) publish(svc, table, due);
  errno = err;
  return rc;
}

void publish_unfinished(FileService* svc, ProduceTable& table) {
  for (const auto& file : table.take_unfinished(::getpid())) {
    file->done = false;  // take_unfinished marked it: publish() marks it again
    publish(svc, table, file);
  }
}

std::optional<int> rename(FileService& svc, ProduceTable& table, const std::string& from,
                          const std::string& to) {
  if (auto own = table.writing(from)) {
    // Not published yet: it will be, under its new name.
    auto canonical = svc.produce_claim(to);
    if (!canonical.ok()) return fail_with(canonical.status());
    svc.produce_abandon(own->path, own->canonical);
    table.rename(own, to, *canonical);
    return 0;
  }
  if (svc.config().produced(from)) {
    auto r = svc.produce_alias(from, to);
    if (r.ok()) {
      table.remember_published(to);
      return 0;
    }
    if (r.status().code() == Errc::kUnavailable) return std::nullopt;
    if (r.status().code() != Errc::kInvalidArgument) return fail_with(r.status());
    // Not a produced file (an earlier job's, for one): produced from its bytes below.
  }
  struct stat st {};
  if (sys::stat(from.c_str(), &st) != 0) return -1;
  if (!S_ISREG(st.st_mode)) return std::nullopt;  // a directory: the file system's rename
  UniqueFd in(sys::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return -1;
  auto out = open(svc, table, to, O_WRONLY | O_CREAT | O_TRUNC, st.st_mode & 07777);
  if (!out) return std::nullopt;
  if (*out < 0) return -1;
  const bool copied = copy_bytes(in.get(), *out);
  const int err = errno;
  if (!copied) {
    if (auto own = table.writing(to)) {
      table.finish(own);
      svc.produce_abandon(own->path, own->canonical);
      sys::unlink(own->staging.c_str());
    }
    (void)table.release(*out);
    sys::close(*out);
    errno = err;
    return -1;
  }
  (void)close(&svc, table, *out);
  if (sys::unlink(from.c_str()) != 0) return -1;  // a rename moves the file
  return 0;
}

std::optional<int> unlink(FileService& svc, ProduceTable& table, const std::string& abs) {
  if (auto own = table.writing(abs)) {
    if (table.finish(own)) {
      svc.produce_abandon(own->path, own->canonical);
      sys::unlink(own->staging.c_str());
    }
    return 0;
  }
  // Published files stay readable by the job; in `local` mode the PFS has no copy to remove.
  if (svc.config().produce_mode == ProduceMode::kLocal && table.published_here(abs)) return 0;
  return std::nullopt;
}

}  // namespace larder::produce
