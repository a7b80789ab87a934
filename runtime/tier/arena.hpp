// Arena: one rank's node-local store of chunks, a file mapped shared (in /dev/shm for the
// memory tier, in LARDER_DIR for the disk tier).
//
// The owner creates the file (mode 0600, inside a 0700 per-user directory) and maps it read-write;
// the node's other ranks and worker processes attach it read-only. Space is handed out by a
// lock-free bump pointer and backed with fallocate() before use, so a full file system shows up
// as a failed allocation (the read falls back to the PFS) and never as SIGBUS on a store.
// Chunks are immutable once written; there is no eviction yet.
#ifndef LARDER_RUNTIME_TIER_ARENA_HPP_
#define LARDER_RUNTIME_TIER_ARENA_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {

// Where a rank keeps bytes: its two arenas (memory, disk), or one of its segments (kFile: a whole
// file of its own in the node's files directory, runtime/tier/segments.hpp). kTierCount counts
// the arenas only.
enum class Tier : std::uint8_t { kMem = 0, kDisk = 1, kFile = 2 };
inline constexpr int kTierCount = 2;

class Arena {
 public:
  // Creates and maps a new arena file of `capacity` bytes (sparse until allocated).
  static Result<std::unique_ptr<Arena>> create(const std::string& path, std::uint64_t capacity);
  // Maps another rank's arena read-only.
  static Result<std::unique_ptr<Arena>> attach(const std::string& path);
  // A file of exactly `size` bytes, created (mode 0600), backed with fallocate and mapped
  // read-write: a segment (segments.hpp). Nothing is allocated from it: its owner writes it whole.
  static Result<std::unique_ptr<Arena>> create_file(const std::string& path, std::uint64_t size);
  // An existing file of this user (mode 0600 or stricter), mapped read-write at its size now.
  // With `read_view`, also mapped read-only for this process's own reads (view()): a file taken
  // over whole, which nobody writes again (a kept file).
  static Result<std::unique_ptr<Arena>> adopt_file(const std::string& path, bool read_view = false);

  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  Arena(Arena&&) = delete;  // owned through unique_ptr: never moved
  Arena& operator=(Arena&&) = delete;
  ~Arena();

  // Reserves `length` bytes and backs them with storage; kNoSpace when the budget or the file
  // system is full. Thread-safe. Returns the offset of the reserved bytes.
  Result<std::uint64_t> allocate(std::uint64_t length);
  // Takes `length` bytes off the budget without backing them (node files, which live in files
  // of their own, count against the tier's budget this way). kNoSpace when the budget is used.
  Result<std::uint64_t> reserve(std::uint64_t length);

  // The budget within the capacity (the capacity until set): a kept store's bytes count against
  // the node's budget (runtime/tier/kept_store.hpp), and evicting them gives the room back.
  void set_limit(std::uint64_t limit) noexcept {
    limit_.store(limit < capacity_ ? limit : capacity_, std::memory_order_relaxed);
  }
  void raise_limit(std::uint64_t by) noexcept;
  std::uint64_t limit() const noexcept { return limit_.load(std::memory_order_relaxed); }

  std::byte* data() const noexcept { return base_; }
  // Where this process reads the bytes: the read-only mapping of a file adopted with
  // `read_view`, otherwise data(). Reading pages for the first time through a read-only mapping
  // lets the kernel map them 16 at a time (fault-around); through a shared writable mapping it
  // maps one page per fault. Checking a kept step's 490 MB of shared objects took 2.6 s through
  // the writable mapping here and 0.4 s through a read-only one. The writable mapping stays for
  // the transport, whose RDMA registration needs it (ibv_reg_mr fails on read-only pages).
  const std::byte* view() const noexcept { return view_ != nullptr ? view_ : base_; }
  std::uint64_t capacity() const noexcept { return capacity_; }
  // The arena file's descriptor (read-only when attached): a process that reads a range once
  // copies it with pread, without first faulting the mapping's pages in (AgentClient).
  int fd() const noexcept { return fd_.get(); }
  std::uint64_t used() const noexcept { return next_.load(std::memory_order_relaxed); }
  const std::string& path() const noexcept { return path_; }
  bool writable() const noexcept { return writable_; }

 private:
  Arena(std::string path, UniqueFd fd, std::byte* base, std::uint64_t capacity, bool writable);
  Result<std::uint64_t> take(std::uint64_t length, bool back);
  Status back_range(std::uint64_t start, std::uint64_t length);

  std::string path_;
  UniqueFd fd_;
  std::byte* base_ = nullptr;
  std::byte* view_ = nullptr;  // adopt_file's read-only mapping (PROT_READ), or none
  std::uint64_t capacity_ = 0;
  bool writable_ = false;
  std::atomic<std::uint64_t> limit_{0};  // relaxed: a budget, read before each reservation
  std::atomic<std::uint64_t> next_{0};   // relaxed: the CAS itself orders the reservation
  std::atomic<bool> full_{false};        // relaxed: a hint to stop trying
  std::atomic<bool> populate_{true};  // relaxed: false once the kernel refused MADV_POPULATE_WRITE
};

// Whether every page under `bytes` (inside a mapping) is in memory now (mincore): false when
// one is not, or when the kernel cannot say. A disk-tier chunk whose pages are not all in memory
// is about to be read from the device, and is checked first (Cache::disk_checked).
bool pages_resident(std::span<const std::byte> bytes) noexcept;

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_ARENA_HPP_
