#include "runtime/tier/arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kSmallAlign = 64;

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

Arena::Arena(std::string path, UniqueFd fd, std::byte* base, std::uint64_t capacity, bool writable)
    : path_(std::move(path)),
      fd_(std::move(fd)),
      base_(base),
      capacity_(capacity),
      writable_(writable),
      limit_(capacity) {}

Arena::~Arena() {
  if (base_ != nullptr && capacity_ > 0 && sys::munmap(base_, capacity_) != 0) {
    LARDER_LOG_WARN("munmap of arena {} failed: {}", path_, log::errno_text(errno));
  }
  if (view_ != nullptr && sys::munmap(view_, capacity_) != 0) {
    LARDER_LOG_WARN("munmap of arena {} failed: {}", path_, log::errno_text(errno));
  }
}

Result<std::unique_ptr<Arena>> Arena::create(const std::string& path, std::uint64_t capacity) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create arena " + path);
  capacity = capacity / kPage * kPage;
  if (capacity > 0 && sys::ftruncate(fd.get(), static_cast<off_t>(capacity)) != 0) {
    const int err = errno;
    sys::unlink(path.c_str());
    return from_errno(err, "cannot size arena " + path);
  }
  std::byte* base = nullptr;
  if (capacity > 0) {
    void* p = sys::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      sys::unlink(path.c_str());
      return from_errno(err, "cannot map arena " + path);
    }
    base = static_cast<std::byte*>(p);
  }
  return std::unique_ptr<Arena>(new Arena(path, std::move(fd), base, capacity, true));
}

Result<std::unique_ptr<Arena>> Arena::attach(const std::string& path) {
  UniqueFd fd(sys::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return from_errno(errno, "cannot open arena " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat arena " + path);
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status(Errc::kInvalidArgument, EPERM,
                  "arena " + path + " is not private to this user (owner or mode differ)");
  }
  const auto capacity = static_cast<std::uint64_t>(st.st_size);
  std::byte* base = nullptr;
  if (capacity > 0) {
    void* p = sys::mmap(nullptr, capacity, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return from_errno(errno, "cannot map arena " + path);
    base = static_cast<std::byte*>(p);
  }
  return std::unique_ptr<Arena>(new Arena(path, std::move(fd), base, capacity, false));
}

Result<std::unique_ptr<Arena>> Arena::create_file(const std::string& path, std::uint64_t size) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create " + path);
  auto fail = [&path](int err, const char* what) {
    sys::unlink(path.c_str());
    return from_errno(err, std::string(what) + path);
  };
  if (size > 0 && sys::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return fail(errno, "cannot size ");
  }
  // Backed now: a full /dev/shm is an error here, never SIGBUS in a process that maps it.
  if (size > 0 && sys::fallocate(fd.get(), 0, 0, static_cast<off_t>(size)) != 0 &&
      errno != EOPNOTSUPP) {
    return fail(errno, "cannot allocate ");
  }
  std::byte* base = nullptr;
  if (size > 0) {
    void* p = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return fail(errno, "cannot map ");
    base = static_cast<std::byte*>(p);
  }
  auto arena = std::unique_ptr<Arena>(new Arena(path, std::move(fd), base, size, true));
  arena->next_.store(size, std::memory_order_relaxed);  // written whole by its owner
  return arena;
}

Result<std::unique_ptr<Arena>> Arena::adopt_file(const std::string& path, bool read_view) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return from_errno(errno, "cannot open " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status(Errc::kInvalidArgument, EPERM,
                  path + " is not a regular file private to this user");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::byte* base = nullptr;
  if (size > 0) {
    void* p = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return from_errno(errno, "cannot map " + path);
    base = static_cast<std::byte*>(p);
  }
  auto arena = std::unique_ptr<Arena>(new Arena(path, std::move(fd), base, size, true));
  arena->next_.store(size, std::memory_order_relaxed);
  if (read_view && size > 0) {
    void* p = sys::mmap(nullptr, size, PROT_READ, MAP_SHARED, arena->fd_.get(), 0);
    if (p == MAP_FAILED) return from_errno(errno, "cannot map " + path);
    arena->view_ = static_cast<std::byte*>(p);
  }
  return arena;
}

Result<std::uint64_t> Arena::allocate(std::uint64_t length) {
  return take(length, true);
}

void Arena::raise_limit(std::uint64_t by) noexcept {
  std::uint64_t now = limit_.load(std::memory_order_relaxed);
  while (!limit_.compare_exchange_weak(now, now + by > capacity_ ? capacity_ : now + by,
                                       std::memory_order_relaxed)) {
  }
}

Result<std::uint64_t> Arena::reserve(std::uint64_t length) {
  return take(length, false);
}

// Backs [start, start + length) with real pages now, because a store into an unbacked page of a
// full tmpfs raises SIGBUS where this returns an error. MADV_POPULATE_WRITE (Linux 5.14) allocates
// the pages and fills this process's page tables in one call: the copy that follows, by this
// process's reader or its progress thread receiving from another node, then takes no page fault.
// Faulting page by page was the largest single cost of a cold pass (a fault per 4 KiB written,
// docs/benchmarks.md). Where MADV_POPULATE_WRITE is unknown, fallocate backs the range and the
// copy faults as before.
Status Arena::back_range(std::uint64_t start, std::uint64_t length) {
  const std::uint64_t first = start / kPage * kPage;
  const std::uint64_t end = align_up(start + length, kPage);
  if (populate_.load(std::memory_order_relaxed)) {
    if (sys::madvise(base_ + first, end - first, MADV_POPULATE_WRITE) == 0) return {};
    const int err = errno;
    // EFAULT is what a full tmpfs gives here (the store would have raised SIGBUS).
    if (err == EFAULT) return {Errc::kNoSpace, ENOSPC, "no space left for arena " + path_};
    if (err != EINVAL) return from_errno(err, "cannot back arena " + path_);
    populate_.store(false, std::memory_order_relaxed);
  }
  if (sys::fallocate(fd_.get(), 0, static_cast<off_t>(start), static_cast<off_t>(length)) != 0 &&
      errno != EOPNOTSUPP) {
    return from_errno(errno, "cannot back arena " + path_);
  }
  return {};
}

Result<std::uint64_t> Arena::take(std::uint64_t length, bool back) {
  if (!writable_) return Status(Errc::kInvalidArgument, EBADF, "arena is read-only");
  if (length == 0) length = 1;
  const std::uint64_t align = length >= kPage ? kPage : kSmallAlign;
  if (full_.load(std::memory_order_relaxed)) {
    return Status(Errc::kNoSpace, ENOSPC, "arena " + path_ + " is full");
  }
  std::uint64_t offset = next_.load(std::memory_order_relaxed);
  std::uint64_t start = 0;
  do {
    start = align_up(offset, align);
    if (start + length > limit_.load(std::memory_order_relaxed)) {
      return Status(Errc::kNoSpace, ENOSPC, "arena " + path_ + " budget is used up");
    }
  } while (!next_.compare_exchange_weak(offset, start + length, std::memory_order_relaxed));
  if (!back) return start;
  if (const Status st = back_range(start, length); !st.ok()) {
    full_.store(true, std::memory_order_relaxed);
    LARDER_LOG_LIMITED(kWarn, "arena {} cannot grow by {} bytes ({}); reads go to the file system",
                       path_, length, st.message());
    return st;
  }
  return start;
}

bool pages_resident(std::span<const std::byte> bytes) noexcept {
  if (bytes.empty()) return true;
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (page == 0) return false;
  const auto start = reinterpret_cast<std::uintptr_t>(bytes.data());
  const std::uintptr_t first = start & ~(page - 1);
  const std::uintptr_t end = start + bytes.size();
  // A byte per page, asked for in windows of 1,024 pages (4 MiB): one call for a chunk of 4 MiB.
  constexpr std::size_t kWindow = 1024;
  unsigned char vec[kWindow];
  for (std::uintptr_t at = first; at < end; at += kWindow * page) {
    const std::uintptr_t len = std::min<std::uintptr_t>(end - at, kWindow * page);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a page-aligned address inside `bytes`' mapping
    if (sys::mincore(reinterpret_cast<void*>(at), len, vec) != 0) return false;
    const std::size_t pages = (len + page - 1) / page;
    for (std::size_t i = 0; i < pages; ++i) {
      if ((vec[i] & 1u) == 0) return false;
    }
  }
  return true;
}

}  // namespace larder
