// Every chunk checked (cache.hpp): content hashes made where bytes enter the cache, checked where
// they enter a node. docs/architecture.md, "Content hashes", has the hops and the boundary.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "runtime/cache/cache.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/node/node_table.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

namespace {

// The chunk this thread is locating (for the warning of a mismatch): trivially destructible, so
// no thread_local destructor is registered (the loader thread must not register one).
thread_local const CachedFile* t_file = nullptr;
thread_local std::uint64_t t_index = 0;

std::uint64_t ns_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

// Maps the pages of `bytes` into this process before they are hashed: one call (Linux 5.14's
// MADV_POPULATE_READ) instead of a page fault every 16 pages. Bytes checked are mostly read for
// the first time here (a kept file adopted in this step, a peer's arena); checking a kept step's
// 490 MB of shared objects took 1.4 s with the faults and 0.4 s populated first on this machine.
// Advice only: where the kernel refuses (EINVAL before 5.14), the hash takes the faults instead.
void populate(std::span<const std::byte> bytes) {
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (bytes.empty() || page == 0) return;
  const auto first = reinterpret_cast<std::uintptr_t>(bytes.data()) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(bytes.data()) + bytes.size();
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the page-aligned start of `bytes`
  if (sys::madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_READ) != 0) {
    return;  // advice refused: nothing lost but the time
  }
}

}  // namespace

Cache::ChunkContext::ChunkContext(const CachedFile& file, std::uint64_t index) noexcept
    : file_(t_file), index_(t_index) {
  t_file = &file;
  t_index = index;
}

Cache::ChunkContext::ChunkContext(std::nullptr_t) noexcept : file_(t_file), index_(t_index) {
  t_file = nullptr;
}

Cache::ChunkContext::~ChunkContext() {
  t_file = file_;
  t_index = index_;
}

std::uint64_t Cache::hash_of(std::span<const std::byte> bytes) {
  if (!config_.verify) return 0;
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t h = content_hash(bytes.data(), bytes.size());
  stats_.add(Counter::integrity_bytes_hashed, bytes.size());
  stats_.add(Counter::integrity_ns, ns_since(start));
  return h;
}

bool Cache::verified(std::span<const std::byte> bytes, std::uint64_t expected, int holder,
                     const char* hop, const Transport::Hashed* arrived) {
  if (!config_.verify || expected == 0) return true;
  std::uint64_t h = 0;
  if (arrived != nullptr && arrived->hash != 0) {
    h = arrived->hash;  // hashed by the transport as the bytes arrived
    stats_.add(Counter::integrity_ns, arrived->ns);
  } else {
    const auto start = std::chrono::steady_clock::now();
    populate(bytes);
    h = content_hash(bytes.data(), bytes.size());
    stats_.add(Counter::integrity_ns, ns_since(start));
  }
  stats_.add(Counter::integrity_checked);
  stats_.add(Counter::integrity_bytes_hashed, bytes.size());
  if (h == expected) return true;
  stats_.add(Counter::integrity_mismatches);
  const int node = holder >= 0 && holder < topology_.size ? topology_.node_of(holder) : -1;
  if (t_file != nullptr) {
    LARDER_LOG_LIMITED(kWarn,
                       "integrity: chunk {} of {} ({} bytes) from {} (rank {}, node {}) does not "
                       "match its hash; discarded, read from another copy or the file system",
                       t_index, t_file->path, bytes.size(), hop, holder, node);
  } else {
    LARDER_LOG_LIMITED(kWarn,
                       "integrity: {} bytes from {} (rank {}, node {}) do not match their hash; "
                       "discarded, read from another copy or the file system",
                       bytes.size(), hop, holder, node);
  }
  return false;
}

std::atomic<std::uint32_t>& Cache::disk_word(int i) noexcept {
  return node_ != nullptr ? node_->node_word(i) : disk_words_[i];
}

// The kernel loads a disk-tier chunk's pages from the device when they are not in memory: that
// is the hop into the node's memory checked here. Pages in memory were checked when they came in
// (or were written by the chunk's origin, which hashed them), as any node memory is trusted.
//
// The order closes the gap between a check and its verdict: a checker counts itself in before
// it touches the pages, and a reader asks about the pages before it reads the count. A reader
// that finds pages in memory because a check brought them in therefore sees that check (and
// checks too), or sees its verdict: a failed check marks the node suspect for the rest of the
// job, and every disk-tier chunk read on it is checked from then on (a device that changed one
// chunk's bytes is not trusted with the others).
bool Cache::disk_checked(const ChunkRecord& record, std::span<const std::byte> bytes) {
  if (!disk_backed(record.tier, record.segment) || !config_.verify || record.hash == 0) return true;
  std::atomic<std::uint32_t>& checking = disk_word(NodeTable::kDiskChecking);
  std::atomic<std::uint32_t>& suspect = disk_word(NodeTable::kDiskSuspect);
  const bool in_memory = resident_ ? resident_(bytes) : pages_resident(bytes);
  if (in_memory && checking.load() == 0 && suspect.load() == 0) return true;
  checking.fetch_add(1);
  const bool good = verified(bytes, record.hash, record.owner, "the disk tier");
  if (!good) suspect.store(1);
  checking.fetch_sub(1);
  if (!good) stats_.add(Counter::integrity_refetched);  // the caller reads the PFS instead
  return good;
}

// A holder about to serve a piece of its own chunk to another node (remote reads as messages):
// the same check as a read on its own node, so pages a transport brings in from the device are
// checked before anyone is served from them (and, a mismatch marking the node suspect, before
// this node's own ranks read them as pages in memory). Runs on the thread that serves the read,
// perhaps inside another read of this thread: that read's chunk is not the one warned about.
bool Cache::serve_check(Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk) {
  if (!disk_backed(tier, segment) || !config_.verify || chunk.hash == 0 || chunk.length == 0 ||
      closing()) {
    return true;  // a memory-tier piece is served as it is
  }
  ChunkRecord record;
  record.owner = topology_.rank;
  record.tier = tier;
  record.segment = segment;
  record.offset = chunk.offset;
  record.length = chunk.length;
  record.hash = chunk.hash;
  if (chunk.offset > std::numeric_limits<std::uint64_t>::max() - chunk.length)
    return true;  // served_bytes refuses the range
  const std::span<const std::byte> bytes = node_bytes(record);
  if (bytes.size() != chunk.length) return true;  // not this rank's: served_bytes decides
  const ChunkContext none(nullptr);
  return disk_checked(record, bytes);
}

}  // namespace larder
