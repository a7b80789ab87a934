// PosixFileSystem: the real parallel file system, through raw system calls, counting every
// operation and byte in Stats (pfs.*). Keeps a small cache of open descriptors so loading many
// chunks of one file costs one open.
#ifndef LARDER_RUNTIME_PFS_POSIX_FILE_SYSTEM_HPP_
#define LARDER_RUNTIME_PFS_POSIX_FILE_SYSTEM_HPP_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "runtime/common/unique_fd.hpp"
#include "runtime/pfs/file_system.hpp"
#include "runtime/stats/stats.hpp"

namespace larder {

class PosixFileSystem final : public FileSystem {
 public:
  explicit PosixFileSystem(Stats& stats, std::size_t max_open_files = 64);

  Result<ResolvedPath> resolve(const std::string& path) override;
  Result<std::size_t> read(const std::string& path, std::uint64_t version, std::uint64_t offset,
                           std::span<std::byte> into) override;
  Result<FileMeta> lstat(const std::string& path) override;
  Result<std::vector<std::byte>> list(const std::string& path) override;

 private:
  // A descriptor of `path` opened for `version`, from the cache or opened now.
  Result<std::shared_ptr<UniqueFd>> open_cached(const std::string& path, std::uint64_t version);

  Stats& stats_;
  const std::size_t max_open_files_;
  std::mutex mu_;
  std::list<std::string> lru_;  // most recent first; guarded by mu_
  struct Entry {
    std::shared_ptr<UniqueFd> fd;
    std::list<std::string>::iterator position;
  };
  std::unordered_map<std::string, Entry> open_;  // by path and version; guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_PFS_POSIX_FILE_SYSTEM_HPP_
