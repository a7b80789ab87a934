// FileTable: the descriptors of managed files opened through Larder.
//
// Each descriptor number is reserved by an O_PATH descriptor of /dev/null (the placeholder), so
// it can never collide with a descriptor the application or a library opens, and anything that
// reaches it without going through Larder (an un-intercepted system call, glibc's internal read
// of a FILE made by fdopen) fails with EBADF instead of returning wrong bytes. The entry keeps
// the file's identity and the read position; dup'd descriptors share one entry (one position),
// as dup'd descriptors share one open file description in the kernel.
//
// maybe_managed() is one relaxed load, so the interposed calls on other descriptors pay nothing.
// The table is safe to use in a child after fork (see lock_for_fork).
#ifndef LARDER_RUNTIME_API_FILE_TABLE_HPP_
#define LARDER_RUNTIME_API_FILE_TABLE_HPP_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/records.hpp"

namespace larder {

struct OpenFile {
  CachedFile file;
  FileMeta meta;
  int flags = 0;
  bool directory = false;                  // an O_DIRECTORY descriptor of a managed directory
  std::atomic<std::uint64_t> position{0};  // read()/lseek(): compare-and-swap, no lock (fork-safe)
};

class FileTable {
 public:
  static constexpr int kMaxTracked = 1 << 16;  // descriptors above are never managed

  FileTable();
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;
  ~FileTable();

  // Reserves a descriptor number for `file` (close-on-exec when `cloexec`); -1 with errno.
  int add(std::shared_ptr<OpenFile> file, bool cloexec);
  // Records that descriptor `fd` (made by dup of a managed one) refers to `file`.
  bool adopt(int fd, std::shared_ptr<OpenFile> file);
  bool maybe_managed(int fd) const noexcept {
    return fd >= 0 && fd < kMaxTracked && flags_[fd].load(std::memory_order_relaxed) != 0;
  }
  std::shared_ptr<OpenFile> find(int fd) const;
  // Forgets `fd` without closing it; returns its entry (null when it was not ours).
  std::shared_ptr<OpenFile> forget(int fd);
  // Forgets and closes `fd`; false when it is not ours.
  bool remove(int fd);
  std::size_t size() const;
  // size() without the lock (relaxed): for a cheap "are there any" test on a hot path.
  std::size_t size_hint() const noexcept { return count_.load(std::memory_order_relaxed); }
  // Calls fn(fd, file) for every entry (under the lock: fn must not call back into the table).
  void for_each(const std::function<void(int, const std::shared_ptr<OpenFile>&)>& fn) const;
  // Closes nothing: forgets every entry (a child after fork that will not serve them).
  void clear_without_closing();

  // pthread_atfork: the forking thread holds the lock across fork(), so the child's copy of the
  // table is consistent. The child, alone with its copy, makes a fresh lock (a rwlock records its
  // writer's thread id, which the child's thread does not have).
  void lock_for_fork() noexcept { mu_.lock(); }
  void unlock_after_fork() noexcept { mu_.unlock(); }
  void reset_lock_in_child() noexcept { new (&mu_) std::shared_mutex(); }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<int, std::shared_ptr<OpenFile>> files_;  // guarded by mu_
  std::unique_ptr<std::atomic<std::uint8_t>[]> flags_;        // relaxed: set under mu_
  std::atomic<std::size_t> count_{0};                         // relaxed: files_.size()
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_FILE_TABLE_HPP_
