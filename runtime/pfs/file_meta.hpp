// FileMeta: the part of struct stat that Larder caches for a path, in a fixed binary layout
// that fits a directory slot.
#ifndef LARDER_RUNTIME_PFS_FILE_META_HPP_
#define LARDER_RUNTIME_PFS_FILE_META_HPP_

#include <sys/stat.h>

#include <cstdint>

namespace larder {

struct FileMeta {
  std::uint64_t size = 0;
  std::uint64_t ino = 0;
  std::uint64_t dev = 0;
  std::uint64_t blocks = 0;
  std::int64_t atime_ns = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint32_t mode = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t nlink = 0;
  std::uint32_t blksize = 0;

  static FileMeta from_stat(const struct stat& st) noexcept;
  void to_stat(struct stat* st) const noexcept;
  bool is_regular() const noexcept { return S_ISREG(mode); }
  bool is_directory() const noexcept { return S_ISDIR(mode); }
  // Whether this process may open the file for reading, by its mode bits and our credentials
  // (root may always read, as the kernel allows). POSIX ACLs are not consulted.
  bool readable_by_me() const noexcept;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_PFS_FILE_META_HPP_
