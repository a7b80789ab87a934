#include "hdf5_vol/cached_file.hpp"

#include <fcntl.h>
#include <larder/larder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace larder::vol {

std::unique_ptr<CachedFile> CachedFile::open(const char* path) {
  std::unique_ptr<CachedFile> file(new CachedFile(path));
  struct stat st {};
  if (larder_initialized() && larder_is_managed(path)) {
    file->larder_fd_ = larder_open(path, O_RDONLY);
    if (file->larder_fd_ < 0) return nullptr;
    if (larder_fstat(file->larder_fd_, &st) != 0) {
      const int saved = errno;
      larder_close(file->larder_fd_);
      file->larder_fd_ = -1;
      errno = saved;
      return nullptr;
    }
  } else {
    file->posix_fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
    if (file->posix_fd_ < 0) return nullptr;
    if (::fstat(file->posix_fd_, &st) != 0) return nullptr;
  }
  file->dev_ = st.st_dev;
  file->ino_ = st.st_ino;
  file->size_ = static_cast<std::uint64_t>(st.st_size);
  return file;
}

CachedFile::~CachedFile() {
  const int saved = errno;
  if (larder_fd_valid()) larder_close(larder_fd_);
  if (posix_fd_ >= 0) ::close(posix_fd_);
  errno = saved;
}

bool CachedFile::larder_fd_valid() const noexcept {
  if (larder_fd_ < 0 || !larder_initialized()) return false;
  // After larder_finalize the number may name something else: check it is still this file.
  struct stat st {};
  return larder_fstat(larder_fd_, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

int* CachedFile::posix_handle() {
  if (posix_fd_ < 0) posix_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  return posix_fd_ >= 0 ? &posix_fd_ : nullptr;
}

ssize_t CachedFile::read_at(void* buf, std::size_t size, std::uint64_t offset) {
  const auto off = static_cast<off_t>(offset);
  if (larder_fd_ >= 0) {
    if (larder_fd_valid()) return larder_pread(larder_fd_, buf, size, off);
    larder_fd_ = -1;  // Larder stopped under us: the file itself from now on
  }
  if (posix_handle() == nullptr) return -1;
  return ::pread(posix_fd_, buf, size, off);
}

int CachedFile::compare(const CachedFile& other) const noexcept {
  if (dev_ != other.dev_) return dev_ < other.dev_ ? -1 : 1;
  if (ino_ != other.ino_) return ino_ < other.ino_ ? -1 : 1;
  return 0;
}

}  // namespace larder::vol
