#include "runtime/api/file_ops.hpp"

#include <fcntl.h>

#include <cerrno>
#include <limits>

#include "runtime/path/path.hpp"

namespace larder::ops {
namespace {

// Flags the cache serves: read-only access plus flags that do not change what a read returns.
bool cacheable_flags(int flags) noexcept {
  if ((flags & O_ACCMODE) != O_RDONLY) return false;
  constexpr int kRefused =
      O_CREAT | O_TRUNC | O_APPEND | O_PATH | O_DIRECTORY | O_NOFOLLOW | O_TMPFILE | O_EXCL;
  return (flags & kRefused) == 0;
}

}  // namespace

std::optional<std::string> candidate(const Session& s, const char* path, bool any_when_unset) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  std::string abs = path::absolute(path);
  if (abs.empty()) return std::nullopt;
  const Config& c = s.config();
  if (c.prefixes.empty() ? any_when_unset : c.lexically_managed(abs)) return abs;
  return std::nullopt;
}

std::optional<int> try_open(Session& s, const char* path, int flags, bool any_when_unset) {
  if (!cacheable_flags(flags)) return std::nullopt;
  auto abs = candidate(s, path, any_when_unset);
  if (!abs) return std::nullopt;
  auto record = s.cache().lookup(*abs);
  if (!record.ok()) return std::nullopt;  // the cache cannot answer: the real call will
  if (record->error != 0) {
    errno = record->error;
    return -1;
  }
  if (!record->managed() || !record->meta.is_regular()) return std::nullopt;
  if (!record->meta.readable_by_me()) {
    errno = EACCES;
    return -1;
  }
  auto file = std::make_shared<OpenFile>();
  file->file = CachedFile{*abs, record->file, record->meta.size};
  file->meta = record->meta;
  file->flags = flags;
  return s.files().add(std::move(file));
}

std::optional<int> try_close(Session& s, int fd) {
  if (!s.files().remove(fd)) return std::nullopt;
  return 0;
}

std::optional<ssize_t> try_pread(Session& s, int fd, void* buf, size_t count, off_t offset) {
  auto file = s.files().find(fd);
  if (!file) return std::nullopt;
  if (offset < 0) {
    errno = EINVAL;
    return -1;
  }
  count = std::min<size_t>(count, static_cast<size_t>(std::numeric_limits<ssize_t>::max()));
  auto n = s.cache().read(file->file, {static_cast<std::byte*>(buf), count},
                          static_cast<std::uint64_t>(offset));
  if (!n.ok()) {
    errno = n.status().native_code() != 0 ? n.status().native_code() : EIO;
    return -1;
  }
  return static_cast<ssize_t>(*n);
}

std::optional<ssize_t> try_read(Session& s, int fd, void* buf, size_t count) {
  auto file = s.files().find(fd);
  if (!file) return std::nullopt;
  count = std::min<size_t>(count, static_cast<size_t>(std::numeric_limits<ssize_t>::max()));
  std::lock_guard lock(file->position_mu);
  auto n = s.cache().read(file->file, {static_cast<std::byte*>(buf), count}, file->position);
  if (!n.ok()) {
    errno = n.status().native_code() != 0 ? n.status().native_code() : EIO;
    return -1;
  }
  file->position += *n;
  return static_cast<ssize_t>(*n);
}

std::optional<off_t> try_lseek(Session& s, int fd, off_t offset, int whence) {
  auto file = s.files().find(fd);
  if (!file) return std::nullopt;
  std::lock_guard lock(file->position_mu);
  const auto size = static_cast<off_t>(file->file.size);
  off_t base = 0;
  switch (whence) {
    case SEEK_SET:
      base = 0;
      break;
    case SEEK_CUR:
      base = static_cast<off_t>(file->position);
      break;
    case SEEK_END:
      base = size;
      break;
    case SEEK_DATA:
      if (offset < 0 || offset >= size) {
        errno = ENXIO;
        return -1;
      }
      file->position = static_cast<std::uint64_t>(offset);
      return offset;
    case SEEK_HOLE:
      if (offset < 0 || offset >= size) {
        errno = ENXIO;
        return -1;
      }
      file->position = static_cast<std::uint64_t>(size);
      return size;
    default:
      errno = EINVAL;
      return -1;
  }
  if ((offset > 0 && base > std::numeric_limits<off_t>::max() - offset) || base + offset < 0) {
    errno = offset > 0 ? EOVERFLOW : EINVAL;
    return -1;
  }
  file->position = static_cast<std::uint64_t>(base + offset);
  return base + offset;
}

std::optional<int> try_fstat(Session& s, int fd, struct stat* st) {
  auto file = s.files().find(fd);
  if (!file) return std::nullopt;
  file->meta.to_stat(st);
  return 0;
}

std::optional<int> try_stat(Session& s, const char* path, struct stat* st, bool any_when_unset) {
  auto abs = candidate(s, path, any_when_unset);
  if (!abs) return std::nullopt;
  auto record = s.cache().lookup(*abs);
  if (!record.ok()) return std::nullopt;
  if (record->error != 0) {  // a cached answer: the path does not exist (or cannot be reached)
    errno = record->error;
    return -1;
  }
  if (!record->managed()) return std::nullopt;
  record->meta.to_stat(st);
  return 0;
}

}  // namespace larder::ops
