// ProduceTable: the files under LARDER_PRODUCE that this process writes, until they are published
// (docs/user-guide.md, "Producing files"; produce_ops.hpp does the work).
//
// A produced file is written in a staging file in the node's files directory: the descriptors the
// application gets are real descriptors of it, so writes, seeks, pwrite, ftruncate, mmap and
// fsync are the kernel's. The table counts, per file, the descriptors open on it (dup'd ones
// too) and its writable shared mappings; when both reach zero in the process that created it,
// the file is published. A forked child shares the descriptors but never publishes.
//
// maybe_produced() is one relaxed load, so the descriptor wrappers pay nothing for other
// descriptors. Thread-safe; safe to use in a child after fork (lock_for_fork).
#ifndef LARDER_RUNTIME_API_PRODUCE_TABLE_HPP_
#define LARDER_RUNTIME_API_PRODUCE_TABLE_HPP_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace larder {

struct Produced {
  std::string path;       // as opened for writing (absolute, lexically clean)
  std::string canonical;  // its canonical name, claimed in the directory
  std::string staging;    // the file the descriptors write (the node's files directory)
  std::uint32_t mode = 0644;
  pid_t owner = 0;    // the process that publishes it
  int fds = 0;        // descriptors open on it                       (guarded by the table)
  int maps = 0;       // writable shared mappings of it               (guarded by the table)
  bool done = false;  // published, or given up                     (guarded by the table)
};

class ProduceTable {
 public:
  static constexpr int kMaxTracked = 1 << 16;  // descriptors above are never produced files

  ProduceTable();
  ProduceTable(const ProduceTable&) = delete;
  ProduceTable& operator=(const ProduceTable&) = delete;
  ~ProduceTable() = default;

  bool maybe_produced(int fd) const noexcept {
    return fd >= 0 && fd < kMaxTracked && flags_[fd].load(std::memory_order_relaxed) != 0;
  }
  // Descriptor `fd` now refers to `file` (an open, a dup); false when fd cannot be tracked.
  bool add(int fd, std::shared_ptr<Produced> file);
  std::shared_ptr<Produced> find(int fd) const;
  // Forgets `fd`. Returns its file when that was the file's last descriptor and mapping in the
  // process that publishes it (and it is not done): the caller publishes it.
  std::shared_ptr<Produced> release(int fd);
  // A writable shared mapping [addr, addr + len) of `file`.
  void add_map(void* addr, std::size_t len, std::shared_ptr<Produced> file);
  bool any_maps() const noexcept { return maps_count_.load(std::memory_order_relaxed) != 0; }
  // Forgets the mappings whose start [addr, addr + len) covers; the files now due to publish.
  std::vector<std::shared_ptr<Produced>> release_maps(void* addr, std::size_t len);
  // The file this process writes at `path` and has not published yet (null: none).
  std::shared_ptr<Produced> writing(const std::string& path) const;
  // The file is known by a new name (a rename before it was published).
  void rename(const std::shared_ptr<Produced>& file, std::string path, std::string canonical);
  // Marks `file` done (published or given up); false when it was already.
  bool finish(const std::shared_ptr<Produced>& file);
  // The paths this process published (unlink of one in `local` mode succeeds, changing nothing).
  void remember_published(const std::string& path);
  bool published_here(const std::string& path) const;
  // Every file of this process not done yet (exit, finalize): marked done, for the caller.
  std::vector<std::shared_ptr<Produced>> take_unfinished(pid_t self);

  // pthread_atfork, as FileTable's.
  void lock_for_fork() noexcept { mu_.lock(); }
  void unlock_after_fork() noexcept { mu_.unlock(); }
  void reset_lock_in_child() noexcept { new (&mu_) std::mutex(); }

 private:
  bool due(const Produced& f) const noexcept;

  mutable std::mutex mu_;
  std::unordered_map<int, std::shared_ptr<Produced>> fds_;              // guarded by mu_
  std::unordered_map<std::string, std::shared_ptr<Produced>> by_path_;  // guarded by mu_
  std::map<std::uintptr_t, std::pair<std::size_t, std::shared_ptr<Produced>>> maps_;  // mu_
  std::unordered_set<std::string> published_;           // guarded by mu_
  std::atomic<std::size_t> maps_count_{0};              // relaxed: a hint for munmap
  std::unique_ptr<std::atomic<std::uint8_t>[]> flags_;  // relaxed: set under mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_PRODUCE_TABLE_HPP_
