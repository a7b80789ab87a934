#include "runtime/node/prefetch_marks.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"
#include "runtime/common/whole_file.hpp"

namespace larder {

namespace {

constexpr std::uint32_t kUsed = 1u << 31;
constexpr std::uint32_t kLengthMask = kUsed - 1;

}  // namespace

// The file: a count of marks given, then one word per mark (the chunk's length, and kUsed once
// a read found it). Zeroed memory is an empty file.
struct PrefetchMarks::Layout {
  std::atomic<std::uint32_t> next;  // marks given (may pass kCapacity: those are refused)
  std::uint32_t reserved;
  std::atomic<std::uint32_t> words[kCapacity];
};

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

Result<std::unique_ptr<PrefetchMarks>> PrefetchMarks::open(const std::string& path, bool create) {
  constexpr std::size_t kBytes = sizeof(Layout);
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid() && errno == ENOENT && create) {
    // Backed whole before any process can open it: a full /dev/shm fails here, never as SIGBUS
    // on a mark (whole_file.hpp).
    if (Status made = create_whole_file(path, kBytes, "prefetch marks"); !made.ok()) return made;
    fd = UniqueFd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  }
  if (!fd.valid()) {
    if (errno == ENOENT) return Status(Errc::kNotFound, ENOENT, "no prefetch marks " + path);
    return from_errno(errno, "cannot open prefetch marks " + path);
  }
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  if (static_cast<std::size_t>(st.st_size) != kBytes) {
    return Status(Errc::kInvalidArgument, EINVAL, "prefetch marks " + path + " have a bad size");
  }
  void* p = sys::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return from_errno(errno, "cannot map prefetch marks " + path);
  return std::unique_ptr<PrefetchMarks>(new PrefetchMarks(static_cast<Layout*>(p)));
}

PrefetchMarks::~PrefetchMarks() {
  sys::munmap(layout_, sizeof(Layout));
}

std::uint32_t PrefetchMarks::add(std::uint64_t length) noexcept {
  const std::uint32_t i = layout_->next.fetch_add(1, std::memory_order_relaxed);
  if (i >= kCapacity) {
    layout_->next.store(kCapacity, std::memory_order_relaxed);  // never wraps
    return 0;
  }
  // Published to readers with the chunk's record (the node table's release store).
  layout_->words[i].store(static_cast<std::uint32_t>(std::min<std::uint64_t>(length, kLengthMask)),
                          std::memory_order_relaxed);
  return i + 1;
}

void PrefetchMarks::use(std::uint32_t mark) noexcept {
  if (mark == 0 || mark > kCapacity) return;
  std::atomic<std::uint32_t>& w = layout_->words[mark - 1];
  // Every read of a chunk in every epoch comes here: the line is written once.
  if ((w.load(std::memory_order_relaxed) & kUsed) == 0)
    w.fetch_or(kUsed, std::memory_order_relaxed);
}

std::uint32_t PrefetchMarks::marked() const noexcept {
  return std::min(layout_->next.load(std::memory_order_relaxed), kCapacity);
}

PrefetchMarks::Unused PrefetchMarks::unused() const noexcept {
  Unused u;
  const std::uint32_t n = marked();
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t w = layout_->words[i].load(std::memory_order_relaxed);
    if ((w & kUsed) != 0) continue;
    ++u.chunks;
    u.bytes += w & kLengthMask;
  }
  return u;
}

}  // namespace larder
