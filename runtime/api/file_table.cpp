#include "runtime/api/file_table.hpp"

#include <cerrno>
#include <mutex>

#include "runtime/common/sys.hpp"

namespace larder {

FileTable::FileTable() : flags_(new std::atomic<std::uint8_t>[kMaxTracked]) {
  for (int i = 0; i < kMaxTracked; ++i) flags_[i].store(0, std::memory_order_relaxed);
}

FileTable::~FileTable() {
  for (const auto& [fd, file] : files_) sys::close(fd);
}

int FileTable::add(std::shared_ptr<OpenFile> file, bool cloexec) {
  const int fd = sys::open("/dev/null", O_PATH | (cloexec ? O_CLOEXEC : 0));
  if (fd < 0) return -1;
  if (fd >= kMaxTracked) {
    sys::close(fd);
    errno = EMFILE;
    return -1;
  }
  std::unique_lock lock(mu_);
  files_[fd] = std::move(file);
  flags_[fd].store(1, std::memory_order_relaxed);
  count_.store(files_.size(), std::memory_order_relaxed);
  return fd;
}

bool FileTable::adopt(int fd, std::shared_ptr<OpenFile> file) {
  if (fd < 0 || fd >= kMaxTracked) return false;
  std::unique_lock lock(mu_);
  files_[fd] = std::move(file);
  flags_[fd].store(1, std::memory_order_relaxed);
  count_.store(files_.size(), std::memory_order_relaxed);
  return true;
}

std::shared_ptr<OpenFile> FileTable::find(int fd) const {
  if (!maybe_managed(fd)) return nullptr;
  std::shared_lock lock(mu_);
  auto it = files_.find(fd);
  return it == files_.end() ? nullptr : it->second;
}

std::shared_ptr<OpenFile> FileTable::forget(int fd) {
  if (!maybe_managed(fd)) return nullptr;
  std::unique_lock lock(mu_);
  auto it = files_.find(fd);
  if (it == files_.end()) return nullptr;
  std::shared_ptr<OpenFile> file = std::move(it->second);
  files_.erase(it);
  flags_[fd].store(0, std::memory_order_relaxed);
  count_.store(files_.size(), std::memory_order_relaxed);
  return file;
}

bool FileTable::remove(int fd) {
  // Forget before closing: once the number is free the kernel may hand it to another open().
  if (forget(fd) == nullptr) return false;
  sys::close(fd);
  return true;
}

std::size_t FileTable::size() const {
  std::shared_lock lock(mu_);
  return files_.size();
}

void FileTable::for_each(
    const std::function<void(int, const std::shared_ptr<OpenFile>&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [fd, file] : files_) fn(fd, file);
}

void FileTable::clear_without_closing() {
  std::unique_lock lock(mu_);
  for (const auto& [fd, file] : files_) flags_[fd].store(0, std::memory_order_relaxed);
  files_.clear();
  count_.store(0, std::memory_order_relaxed);
}

}  // namespace larder
