#include "runtime/pfs/posix_file_system.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>

#include "runtime/common/sys.hpp"

namespace larder {

PosixFileSystem::PosixFileSystem(Stats& stats, std::size_t max_open_files)
    : stats_(stats), max_open_files_(max_open_files) {}

Result<ResolvedPath> PosixFileSystem::resolve(const std::string& path) {
  stats_.pfs_op(Counter::pfs_stat_ops, path);
  // O_PATH walks the path once, as stat() would, and fails with the same errno.
  UniqueFd fd(sys::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd.valid()) return from_errno(errno, "cannot resolve " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd.get());
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link, buf, sizeof buf - 1);
  ResolvedPath out;
  if (n > 0) {
    out.canonical.assign(buf, static_cast<std::size_t>(n));
  } else {
    // No /proc: fall back to realpath(3), which walks the path component by component.
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) return from_errno(errno, "cannot resolve " + path);
    out.canonical = real;
    std::free(real);
  }
  out.meta = FileMeta::from_stat(st);
  return out;
}

Result<std::shared_ptr<UniqueFd>> PosixFileSystem::open_cached(const std::string& path,
                                                               std::uint64_t version) {
  std::string name = path;
  name += '\0';
  name += std::to_string(version);
  {
    std::lock_guard lock(mu_);
    if (auto it = open_.find(name); it != open_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.position);
      return it->second.fd;
    }
  }
  // Opened outside the lock: an open is a PFS round trip, and the loads of a batch are made
  // several at a time (Cache::load_all). Closes too (a descriptor pushed out of the table).
  stats_.pfs_op(Counter::pfs_open_ops, path);
  auto fd = std::make_shared<UniqueFd>(sys::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd->valid()) return from_errno(errno, "cannot open " + path);
  std::shared_ptr<UniqueFd> pushed_out;  // closed after the unlock
  std::lock_guard lock(mu_);
  if (auto it = open_.find(name); it != open_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.position);
    pushed_out = std::move(fd);  // another thread opened it meanwhile: one descriptor kept
    return it->second.fd;
  }
  if (open_.size() >= max_open_files_) {
    auto last = open_.find(lru_.back());
    pushed_out = std::move(last->second.fd);  // readers still holding it keep it open
    open_.erase(last);
    lru_.pop_back();
  }
  lru_.push_front(name);
  open_.emplace(name, Entry{fd, lru_.begin()});
  return fd;
}

Result<std::size_t> PosixFileSystem::read(const std::string& path, std::uint64_t version,
                                          std::uint64_t offset, std::span<std::byte> into) {
  auto fd = open_cached(path, version);
  if (!fd.ok()) return fd.status();
  const ssize_t n =
      sys::pread_full((*fd)->get(), into.data(), into.size(), static_cast<off_t>(offset));
  const int err = errno;
  stats_.pfs_op(Counter::pfs_read_ops, path, n < 0 ? 0 : static_cast<std::uint64_t>(n));
  if (n < 0) return from_errno(err, "cannot read " + path);
  return static_cast<std::size_t>(n);
}

Result<FileMeta> PosixFileSystem::lstat(const std::string& path) {
  stats_.pfs_op(Counter::pfs_stat_ops, path);
  struct stat st {};
  if (sys::lstat(path.c_str(), &st) != 0) return from_errno(errno, "cannot lstat " + path);
  return FileMeta::from_stat(st);
}

Result<std::vector<std::byte>> PosixFileSystem::list(const std::string& path) {
  stats_.pfs_op(Counter::pfs_list_ops, path);
  UniqueFd fd(sys::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return from_errno(errno, "cannot open directory " + path);
  std::vector<std::byte> records;
  std::vector<std::byte> buf(64 << 10);
  for (;;) {
    const long n = sys::getdents64(fd.get(), buf.data(), buf.size());
    if (n < 0) return from_errno(errno, "cannot list " + path);
    if (n == 0) break;
    records.insert(records.end(), buf.begin(), buf.begin() + n);
  }
  return records;
}

}  // namespace larder
