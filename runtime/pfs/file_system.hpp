// FileSystem: the parallel file system as the read path sees it. An interface, so tests can
// inject faults (tests/unit/support/faulty_file_system.hpp); PosixFileSystem is the real one.
#ifndef LARDER_RUNTIME_PFS_FILE_SYSTEM_HPP_
#define LARDER_RUNTIME_PFS_FILE_SYSTEM_HPP_

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/pfs/file_meta.hpp"

namespace larder {

struct ResolvedPath {
  std::string canonical;  // symlink-free absolute name
  FileMeta meta;          // stat() of the path (symlinks followed)
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // One path walk: the canonical name and stat() of `path`. On failure the Status carries the
  // errno stat() would have set (ENOENT, ENOTDIR, EACCES, ELOOP...).
  virtual Result<ResolvedPath> resolve(const std::string& path) = 0;
  // Reads up to into.size() bytes at `offset` of the regular file `path`; fewer only at EOF.
  // `version` is the file's version the caller knows (file_version(): inode, size, times; 0:
  // none): an implementation that keeps files open reuses a descriptor only for the same
  // version, so a file replaced under its name is opened again. Failures carry the errno of
  // open() or pread().
  virtual Result<std::size_t> read(const std::string& path, std::uint64_t version,
                                   std::uint64_t offset, std::span<std::byte> into) = 0;
  // lstat() of `path` (the link itself when the last component is a symlink). Implementations
  // that cannot answer return kUnavailable; callers then ask the file system themselves.
  virtual Result<FileMeta> lstat(const std::string& path) {
    return Status(Errc::kUnavailable, ENOSYS, "lstat is not supported for " + path);
  }
  // The entries of directory `path` in getdents64 layout (struct dirent64 records, in the order
  // the file system returns them). Failures carry the errno of open(O_DIRECTORY) or getdents64.
  virtual Result<std::vector<std::byte>> list(const std::string& path) {
    return Status(Errc::kUnavailable, ENOSYS, "listing is not supported for " + path);
  }
};

}  // namespace larder

#endif  // LARDER_RUNTIME_PFS_FILE_SYSTEM_HPP_
