#include "runtime/api/file_table.hpp"

#include <cerrno>

#include "runtime/common/sys.hpp"

namespace larder {

FileTable::~FileTable() {
  for (const auto& [fd, file] : files_) sys::close(fd);
}

int FileTable::add(std::shared_ptr<OpenFile> file) {
  const int fd = sys::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::unique_lock lock(mu_);
  files_[fd] = std::move(file);
  return fd;
}

std::shared_ptr<OpenFile> FileTable::find(int fd) const {
  std::shared_lock lock(mu_);
  auto it = files_.find(fd);
  return it == files_.end() ? nullptr : it->second;
}

bool FileTable::remove(int fd) {
  {
    std::unique_lock lock(mu_);
    if (files_.erase(fd) == 0) return false;
  }
  sys::close(fd);
  return true;
}

std::size_t FileTable::size() const {
  std::shared_lock lock(mu_);
  return files_.size();
}

}  // namespace larder
