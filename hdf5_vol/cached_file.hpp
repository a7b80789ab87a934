// CachedFile: one file opened read-only by the cache driver (cache_driver.hpp).
//
// Reads go through Larder (larder_pread) while the file is managed and the Larder session that
// opened it is still the running one; otherwise (the file is not managed, Larder is not
// running, or it was finalized while HDF5 still held the file, as happens at exit) they go to
// the file itself with pread. Either way the bytes are the file's.
#ifndef LARDER_HDF5_VOL_CACHED_FILE_HPP_
#define LARDER_HDF5_VOL_CACHED_FILE_HPP_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace larder::vol {

class CachedFile {
 public:
  // Opens `path` read-only; null with errno set on failure.
  static std::unique_ptr<CachedFile> open(const char* path);

  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
  ~CachedFile();

  // Reads up to `size` bytes at `offset`: the count, 0 at end of file, -1 with errno.
  ssize_t read_at(void* buf, std::size_t size, std::uint64_t offset);
  // A POSIX descriptor of the file (opened on first use, owned here); -1 with errno.
  int* posix_handle();

  const std::string& path() const noexcept { return path_; }
  std::uint64_t size() const noexcept { return size_; }
  bool through_larder() const noexcept { return larder_fd_ >= 0; }
  // Orders files by identity (device, inode), as HDF5 needs to find a file opened twice.
  int compare(const CachedFile& other) const noexcept;

 private:
  explicit CachedFile(std::string path) : path_(std::move(path)) {}
  // True while larder_fd_ still names this file in the running Larder session.
  bool larder_fd_valid() const noexcept;

  std::string path_;
  int larder_fd_ = -1;  // a Larder descriptor, or -1
  int posix_fd_ = -1;   // a descriptor of our own, or -1
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_CACHED_FILE_HPP_
