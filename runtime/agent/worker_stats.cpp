#include "runtime/agent/worker_stats.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <new>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder::agent {

// One worker's counters. Stats is a block of lock-free atomics (address-free: usable across
// processes); the file starts zeroed, which is a valid empty Stats.
struct WorkerStatsFile::Slot {
  std::atomic<std::uint32_t> taken;  // 0 free, 1 taken (changed under the rank's mutex)
  std::uint32_t reserved;
  Stats stats;
};

WorkerStatsFile::WorkerStatsFile(std::string path, Slot* slots)
    : path_(std::move(path)), slots_(slots) {}

WorkerStatsFile::~WorkerStatsFile() {
  if (slots_ != nullptr) sys::munmap(slots_, sizeof(Slot) * kSlots);
}

Result<std::unique_ptr<WorkerStatsFile>> WorkerStatsFile::create(const std::string& path) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create worker stats file " + path);
  const auto bytes = static_cast<off_t>(sizeof(Slot) * kSlots);
  if (sys::fallocate(fd.get(), 0, 0, bytes) != 0 && sys::ftruncate(fd.get(), bytes) != 0) {
    const int err = errno;
    sys::unlink(path.c_str());
    return from_errno(err, "cannot size worker stats file " + path);
  }
  void* p =
      sys::mmap(nullptr, sizeof(Slot) * kSlots, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    sys::unlink(path.c_str());
    return from_errno(err, "cannot map worker stats file " + path);
  }
  auto* slots = static_cast<Slot*>(p);
  for (int i = 0; i < kSlots; ++i) new (&slots[i]) Slot();  // zeroed counters, every slot free
  return std::unique_ptr<WorkerStatsFile>(new WorkerStatsFile(path, slots));
}

Result<std::unique_ptr<WorkerStatsFile>> WorkerStatsFile::attach(const std::string& path) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return from_errno(errno, "cannot open worker stats file " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0 ||
      static_cast<std::size_t>(st.st_size) < sizeof(Slot) * kSlots) {
    return Status(Errc::kInvalidArgument, EINVAL, "worker stats file " + path + " is too short");
  }
  void* p =
      sys::mmap(nullptr, sizeof(Slot) * kSlots, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return from_errno(errno, "cannot map worker stats file " + path);
  return std::unique_ptr<WorkerStatsFile>(new WorkerStatsFile(path, static_cast<Slot*>(p)));
}

int WorkerStatsFile::claim() noexcept {
  std::lock_guard lock(mu_);
  for (int i = 0; i < kSlots; ++i) {
    if (slots_[i].taken.load(std::memory_order_relaxed) == 0) {
      slots_[i].taken.store(1, std::memory_order_relaxed);
      return i;
    }
  }
  return -1;
}

void WorkerStatsFile::release(int index, Stats& into) noexcept {
  if (index < 0 || index >= kSlots) return;
  std::lock_guard lock(mu_);
  Slot& s = slots_[index];
  if (s.taken.load(std::memory_order_relaxed) == 0) return;
  into.add(s.stats.snapshot());
  new (&s.stats) Stats();  // cleared for the next worker
  s.taken.store(0, std::memory_order_relaxed);
}

void WorkerStatsFile::release_all(Stats& into) noexcept {
  for (int i = 0; i < kSlots; ++i) release(i, into);
}

StatsSnapshot WorkerStatsFile::with_live(const Stats& rank) noexcept {
  std::lock_guard lock(mu_);  // release() moves a slot into `rank` under it
  StatsSnapshot total = rank.snapshot();
  for (int i = 0; i < kSlots; ++i) {
    if (slots_[i].taken.load(std::memory_order_relaxed) != 0) total.add(slots_[i].stats.snapshot());
  }
  return total;
}

Stats* WorkerStatsFile::slot(int index) noexcept {
  if (index < 0 || index >= kSlots) return nullptr;
  return &slots_[index].stats;
}

}  // namespace larder::agent
