#include "runtime/api/file_ops.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "runtime/path/path.hpp"

namespace larder::ops {

bool cacheable_flags(int flags) noexcept {
  if ((flags & O_ACCMODE) != O_RDONLY) return false;
  constexpr int kRefused =
      O_CREAT | O_TRUNC | O_APPEND | O_PATH | O_DIRECTORY | O_NOFOLLOW | O_TMPFILE | O_EXCL;
  return (flags & kRefused) == 0;
}

std::optional<std::string> candidate(const Config& c, const char* path, bool any_when_unset) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  std::string abs = path::absolute(path);
  if (abs.empty()) return std::nullopt;
  if (c.any_path() ? any_when_unset : c.lexically_managed(abs)) return abs;
  return std::nullopt;
}

std::optional<int> open_path(FileService& svc, FileTable& table, const std::string& abs,
                             int flags) {
  if (!cacheable_flags(flags)) return std::nullopt;
  auto record = svc.lookup_for_open(abs);
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
  file->file = CachedFile::of(abs, *record);
  file->meta = record->meta;
  file->flags = flags;
  return table.add(std::move(file), (flags & O_CLOEXEC) != 0);
}

std::optional<int> stat_path(FileService& svc, const std::string& abs, struct stat* st,
                             bool follow) {
  auto record = follow ? svc.lookup(abs) : svc.lookup_link(abs);
  if (!record.ok()) return std::nullopt;
  if (record->error != 0) {  // a cached answer: the path does not exist (or cannot be reached)
    errno = record->error;
    return -1;
  }
  if (!record->managed()) return std::nullopt;
  record->meta.to_stat(st);
  return 0;
}

std::optional<int> try_close(FileTable& table, int fd) {
  if (!table.remove(fd)) return std::nullopt;
  return 0;
}

ssize_t read_at(FileService& svc, const OpenFile& file, void* buf, size_t count,
                std::uint64_t offset) {
  if (file.directory) {
    errno = EISDIR;
    return -1;
  }
  count = std::min<size_t>(count, static_cast<size_t>(std::numeric_limits<ssize_t>::max()));
  auto n = svc.read(file.file, {static_cast<std::byte*>(buf), count}, offset);
  if (!n.ok()) {
    errno = n.status().native_code() != 0 ? n.status().native_code() : EIO;
    return -1;
  }
  return static_cast<ssize_t>(*n);
}

std::optional<ssize_t> try_pread(FileService& svc, FileTable& table, int fd, void* buf,
                                 size_t count, off_t offset) {
  auto file = table.find(fd);
  if (!file) return std::nullopt;
  if (offset < 0) {
    errno = EINVAL;
    return -1;
  }
  return read_at(svc, *file, buf, count, static_cast<std::uint64_t>(offset));
}

std::optional<ssize_t> try_read(FileService& svc, FileTable& table, int fd, void* buf,
                                size_t count) {
  auto file = table.find(fd);
  if (!file) return std::nullopt;
  // Optimistic: read at the position, then advance it if nobody moved it meanwhile (a lock
  // held across fork() by another thread would deadlock a child; this has none).
  for (;;) {
    std::uint64_t pos = file->position.load(std::memory_order_acquire);
    const ssize_t n = read_at(svc, *file, buf, count, pos);
    if (n < 0) return n;
    if (file->position.compare_exchange_strong(pos, pos + static_cast<std::uint64_t>(n),
                                               std::memory_order_acq_rel)) {
      return n;
    }
  }
}

std::optional<off_t> try_lseek(FileTable& table, int fd, off_t offset, int whence) {
  auto file = table.find(fd);
  if (!file) return std::nullopt;
  if (file->directory) {
    // lseek on a directory descriptor rewinds its listing; only 0 is meaningful here.
    if (whence != SEEK_SET || offset != 0) {
      errno = EINVAL;
      return -1;
    }
    file->position.store(0, std::memory_order_release);
    return 0;
  }
  const auto size = static_cast<off_t>(file->file.size);
  for (;;) {
    std::uint64_t current = file->position.load(std::memory_order_acquire);
    off_t base = 0;
    switch (whence) {
      case SEEK_SET:
        base = 0;
        break;
      case SEEK_CUR:
        base = static_cast<off_t>(current);
        break;
      case SEEK_END:
        base = size;
        break;
      case SEEK_DATA:
      case SEEK_HOLE:
        if (offset < 0 || offset >= size) {
          errno = ENXIO;
          return -1;
        }
        base = 0;
        if (whence == SEEK_HOLE) offset = size;
        break;
      default:
        errno = EINVAL;
        return -1;
    }
    if ((offset > 0 && base > std::numeric_limits<off_t>::max() - offset) || base + offset < 0) {
      errno = offset > 0 ? EOVERFLOW : EINVAL;
      return -1;
    }
    const auto target = static_cast<std::uint64_t>(base + offset);
    if (file->position.compare_exchange_strong(current, target, std::memory_order_acq_rel)) {
      return base + offset;
    }
  }
}

std::optional<int> try_fstat(FileTable& table, int fd, struct stat* st) {
  auto file = table.find(fd);
  if (!file) return std::nullopt;
  file->meta.to_stat(st);
  return 0;
}

std::optional<int> try_open(Session& s, const char* path, int flags, bool any_when_unset) {
  if (!cacheable_flags(flags)) return std::nullopt;
  auto abs = candidate(s.config(), path, any_when_unset);
  if (!abs) return std::nullopt;
  return open_path(s, s.files(), *abs, flags);
}

std::optional<int> try_stat(Session& s, const char* path, struct stat* st, bool any_when_unset) {
  auto abs = candidate(s.config(), path, any_when_unset);
  if (!abs) return std::nullopt;
  return stat_path(s, *abs, st, true);
}

}  // namespace larder::ops
