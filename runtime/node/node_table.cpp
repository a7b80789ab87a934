#include "runtime/node/node_table.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <new>
#include <thread>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {

// One entry: three cache lines. The file starts zeroed: every entry empty.
//
// The payload of a READY entry can be rewritten (renew(): an answer revalidated in place), so
// it is read and written word by word under a sequence lock: `generation` is odd while a write
// is under way, and a reader that saw it change copies again.
struct NodeTable::Entry {
  static constexpr std::size_t kWords = kPayloadSize / sizeof(std::uint64_t);

  std::atomic<std::uint64_t> word;        // 0 empty; claimed by compare-and-swap
  std::uint64_t check;                    // written before the state leaves kClaiming
  std::atomic<std::uint32_t> state;       // the futex word (below)
  std::atomic<std::int32_t> resolver;     // pid of the resolving process
  std::atomic<std::int64_t> resolved_ns;  // when the answer was published
  std::atomic<std::uint32_t> generation;
  std::uint32_t reserved[11];
  std::atomic<std::uint64_t> payload[kWords];
};
static_assert(kPayloadSize % sizeof(std::uint64_t) == 0);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
              std::atomic<std::int64_t>::is_always_lock_free &&
              std::atomic<std::int32_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && sizeof(std::atomic<std::uint32_t>) == 4);

namespace {

// The table is mapped with its page tables filled: a key lands on any of its pages, so a process
// would otherwise fault once per page it touches (measured: 17 % of the page faults of the 8-rank
// tree run's cold pass, each process faulting on the same pages). Filling them at attach costs one
// system call per process, and the table is a fixed size (LARDER_NODE_SLOTS), 12 MiB by default.
constexpr int kNodeTableMapping = MAP_SHARED | MAP_POPULATE;

constexpr std::uint32_t kClaiming = 0;  // the word is set, the rest not yet
constexpr std::uint32_t kResolving = 1;
constexpr std::uint32_t kReady = 2;
constexpr std::uint32_t kFailed = 3;
// RESOLVING with a process asleep on it: only then do publish() and fail() make the futex wake
// call (a system call per answer otherwise, 24,000 in the 8-rank tree run, mostly for nobody).
constexpr std::uint32_t kResolvingWaited = 4;

bool resolving(std::uint32_t state) noexcept {
  return state == kResolving || state == kResolvingWaited;
}

constexpr auto kSlice = std::chrono::milliseconds(100);

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Shared (not private) futex operations: the waiters are in other processes of the node.
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                std::chrono::milliseconds timeout) noexcept {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec ts{static_cast<time_t>(secs.count()),
                    static_cast<long>((timeout - secs).count() * 1'000'000)};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr,
            0);
}

void futex_wake_all(std::atomic<std::uint32_t>* word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr,
            nullptr, 0);
}

bool process_gone(std::int32_t pid) noexcept {
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

void NodeTable::store_payload(Entry& e, const Payload& payload) noexcept {
  std::uint64_t words[Entry::kWords];
  std::memcpy(words, payload.data(), sizeof(words));
  const std::uint32_t g = e.generation.load(std::memory_order_relaxed);
  e.generation.store(g + 1, std::memory_order_relaxed);
  // Release stores, not a release fence: a reader whose acquire load sees any new word also
  // sees the odd generation stored before it. (The same code on x86; and ThreadSanitizer, which
  // does not model fences, checks it.)
  for (std::size_t i = 0; i < Entry::kWords; ++i) {
    e.payload[i].store(words[i], std::memory_order_release);
  }
  e.resolved_ns.store(monotonic_ns(), std::memory_order_release);
  e.generation.store(g + 2, std::memory_order_release);
}

bool NodeTable::load_payload(const Entry& e, Found* f) noexcept {
  const std::uint32_t before = e.generation.load(std::memory_order_acquire);
  if ((before & 1u) != 0) return false;
  std::uint64_t words[Entry::kWords];
  // Acquire loads, not an acquire fence: the generation is read again after every word.
  for (std::size_t i = 0; i < Entry::kWords; ++i) {
    words[i] = e.payload[i].load(std::memory_order_acquire);
  }
  const std::int64_t ns = e.resolved_ns.load(std::memory_order_acquire);
  if (e.generation.load(std::memory_order_relaxed) != before) return false;
  std::memcpy(f->payload.data(), words, sizeof(words));
  f->resolved_ns = ns;
  return true;
}

std::uint32_t NodeTable::wait_resolved(Entry& e, std::chrono::steady_clock::time_point deadline,
                                       bool* timed_out) noexcept {
  std::uint32_t st = e.state.load(std::memory_order_acquire);
  while (resolving(st)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      *timed_out = true;
      return st;
    }
    // Marked before sleeping: the resolver's exchange in publish() or fail() then sees the mark
    // and wakes us, or our compare-and-swap sees its answer and we do not sleep.
    if (st == kResolving &&
        !e.state.compare_exchange_strong(st, kResolvingWaited, std::memory_order_acq_rel)) {
      continue;  // st is the state now
    }
    futex_wait(&e.state, kResolvingWaited,
               std::min(kSlice, std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - now + std::chrono::milliseconds(1))));
    st = e.state.load(std::memory_order_acquire);
    if (resolving(st) && process_gone(e.resolver.load(std::memory_order_relaxed))) {
      if (e.state.compare_exchange_strong(st, kFailed, std::memory_order_acq_rel)) {
        futex_wake_all(&e.state);
      }
      st = e.state.load(std::memory_order_acquire);
    }
  }
  return st;
}

NodeTable::Entry* NodeTable::entry_of(const Key& key, std::uint32_t* slot) const noexcept {
  const auto start = static_cast<std::uint32_t>(key.check % entries_);
  for (int probe = 0; probe < kMaxProbe; ++probe) {
    const std::uint32_t i = (start + static_cast<std::uint32_t>(probe)) % entries_;
    Entry& e = table_[i];
    const std::uint64_t w = e.word.load(std::memory_order_acquire);
    if (w == 0) return nullptr;
    if (w != key.word) continue;
    if (e.state.load(std::memory_order_acquire) == kClaiming) return nullptr;
    if (e.check != key.check) continue;
    *slot = i;
    return &e;
  }
  return nullptr;
}

std::size_t NodeTable::bytes_for(std::uint32_t entries) noexcept {
  return static_cast<std::size_t>(entries) * sizeof(Entry);
}

NodeTable::NodeTable(std::string path, Entry* entries, std::uint32_t count, std::size_t bytes)
    : path_(std::move(path)), table_(entries), entries_(count), bytes_(bytes) {}

NodeTable::~NodeTable() {
  if (table_ != nullptr) sys::munmap(table_, bytes_);
}

Result<std::unique_ptr<NodeTable>> NodeTable::create(const std::string& path,
                                                     std::uint32_t entries) {
  if (entries == 0) return invalid_argument("a node table needs at least one entry");
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create node table " + path);
  const std::size_t bytes = bytes_for(entries);
  // Backed now: a full /dev/shm fails here, never as SIGBUS on a store later.
  if (sys::fallocate(fd.get(), 0, 0, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    sys::unlink(path.c_str());
    return from_errno(err, "cannot allocate node table " + path);
  }
  void* p = sys::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kNodeTableMapping, fd.get(), 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    sys::unlink(path.c_str());
    return from_errno(err, "cannot map node table " + path);
  }
  return std::unique_ptr<NodeTable>(new NodeTable(path, static_cast<Entry*>(p), entries, bytes));
}

Result<std::unique_ptr<NodeTable>> NodeTable::attach(const std::string& path) {
  UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return from_errno(errno, "cannot open node table " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(Entry) != 0) {
    return Status(Errc::kInvalidArgument, EINVAL, "node table " + path + " has a bad size");
  }
  void* p = sys::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, kNodeTableMapping, fd.get(), 0);
  if (p == MAP_FAILED) return from_errno(errno, "cannot map node table " + path);
  return std::unique_ptr<NodeTable>(new NodeTable(
      path, static_cast<Entry*>(p), static_cast<std::uint32_t>(bytes / sizeof(Entry)), bytes));
}

NodeTable::Found NodeTable::find(const Key& key) const {
  std::uint32_t slot = 0;
  const Entry* e = entry_of(key, &slot);
  Found f;
  if (e == nullptr) return f;
  for (;;) {
    if (e->state.load(std::memory_order_acquire) != kReady) return Found{};
    if (load_payload(*e, &f)) break;
  }
  f.outcome = Found::Outcome::kReady;
  f.slot = slot;
  return f;
}

NodeTable::Found NodeTable::acquire(const Key& key, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto start = static_cast<std::uint32_t>(key.check % entries_);
  for (int probe = 0; probe < kMaxProbe; ++probe) {
    const std::uint32_t slot = (start + static_cast<std::uint32_t>(probe)) % entries_;
    Entry& e = table_[slot];
    std::uint64_t w = e.word.load(std::memory_order_acquire);
    if (w == 0) {
      std::uint64_t expected = 0;
      if (e.word.compare_exchange_strong(expected, key.word, std::memory_order_acq_rel)) {
        e.check = key.check;
        e.resolver.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
        e.state.store(kResolving, std::memory_order_release);
        Found f;
        f.outcome = Found::Outcome::kClaimed;
        f.slot = slot;
        return f;
      }
      w = expected;
    }
    if (w != key.word) continue;
    // Our word: wait out the few instructions between another claimer's CAS and its state.
    std::uint32_t st = e.state.load(std::memory_order_acquire);
    while (st == kClaiming) {
      std::this_thread::yield();
      st = e.state.load(std::memory_order_acquire);
    }
    if (e.check != key.check) continue;
    Found f;
    f.slot = slot;
    for (;;) {
      bool timed_out = false;
      st = wait_resolved(e, deadline, &timed_out);
      if (timed_out) return Found{Found::Outcome::kTimeout};
      if (st == kFailed) {
        f.outcome = Found::Outcome::kFailed;
        return f;
      }
      if (load_payload(e, &f)) break;  // else a renewal began while we copied: wait for it
    }
    f.outcome = Found::Outcome::kReady;
    return f;
  }
  return Found{Found::Outcome::kFull};
}

NodeTable::Found NodeTable::renew(const Key& key, const Payload& seen,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint32_t slot = 0;
  Entry* e = entry_of(key, &slot);
  if (e == nullptr) return Found{Found::Outcome::kFull};
  Found f;
  f.slot = slot;
  for (;;) {
    bool timed_out = false;
    const std::uint32_t st = wait_resolved(*e, deadline, &timed_out);
    if (timed_out) return Found{Found::Outcome::kTimeout};
    if (st == kFailed) {
      f.outcome = Found::Outcome::kFailed;
      return f;
    }
    if (!load_payload(*e, &f)) continue;
    if (f.payload != seen) {  // another rank of the node renewed it already
      f.outcome = Found::Outcome::kReady;
      return f;
    }
    std::uint32_t ready = kReady;
    if (e->state.compare_exchange_strong(ready, kResolving, std::memory_order_acq_rel)) {
      e->resolver.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
      f.outcome = Found::Outcome::kClaimed;
      return f;
    }
  }
}

void NodeTable::publish(std::uint32_t slot, const Payload& payload) {
  if (slot >= entries_) return;
  Entry& e = table_[slot];
  store_payload(e, payload);
  if (e.state.exchange(kReady, std::memory_order_acq_rel) == kResolvingWaited) {
    futex_wake_all(&e.state);
  }
}

void NodeTable::fail(std::uint32_t slot) {
  if (slot >= entries_) return;
  Entry& e = table_[slot];
  if (e.state.exchange(kFailed, std::memory_order_acq_rel) == kResolvingWaited) {
    futex_wake_all(&e.state);
  }
}

}  // namespace larder
