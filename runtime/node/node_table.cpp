#include "runtime/node/node_table.hpp"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <ctime>
#include <new>
#include <thread>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"
#include "runtime/common/whole_file.hpp"

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
  std::atomic<std::uint32_t> spare[11];  // level 0's first entry: the node words (node_word)
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
// system call per process and level; level 0 is 12 MiB by default, and a level is mapped by a
// process only once it needs it.
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

std::uint32_t NodeTable::level_entries(int l) const noexcept {
  std::uint64_t before = 0;
  std::uint64_t size = first_.entries;
  for (int i = 0; i < l; ++i) {
    before += size;
    size *= 2;
  }
  if (before >= max_ || l >= kMaxLevels) return 0;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>({size, max_ - before, std::uint64_t{1} << kIndexBits}));
}

Result<NodeTable::Level> NodeTable::map_level(int l, bool create) const {
  const std::uint32_t entries = level_entries(l);
  const std::size_t bytes = bytes_for(entries);
  const std::string path = path_ + "." + std::to_string(l);
  UniqueFd fd(sys::open(path.c_str(), (read_only_ ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid() && errno == ENOENT && create && !read_only_) {
    // A process that opens the level's name finds it at its full size (whole_file.hpp).
    if (Status made = create_whole_file(path, bytes, "node table level"); !made.ok()) return made;
    fd = UniqueFd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  }
  if (!fd.valid()) return from_errno(errno, "cannot open node table level " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  if (static_cast<std::size_t>(st.st_size) != bytes) {
    return Status(Errc::kInvalidArgument, EINVAL, "node table level " + path + " has a bad size");
  }
  void* p = sys::mmap(nullptr, bytes, read_only_ ? PROT_READ : PROT_READ | PROT_WRITE,
                      kNodeTableMapping, fd.get(), 0);
  if (p == MAP_FAILED) return from_errno(errno, "cannot map node table level " + path);
  return Level{static_cast<Entry*>(p), entries};
}

const NodeTable::Level* NodeTable::level(int l, bool create) const {
  if (l >= kMaxLevels) return nullptr;
  if (const Level* lv = levels_[l].load(std::memory_order_acquire); lv != nullptr) return lv;
  if (level_entries(l) == 0 || exhausted_.load(std::memory_order_relaxed)) return nullptr;
  const std::lock_guard lock(grow_);
  if (const Level* lv = levels_[l].load(std::memory_order_acquire); lv != nullptr) return lv;
  auto mapped = map_level(l, create && !read_only_);
  if (!mapped.ok()) {
    if (create && !read_only_) {
      exhausted_.store(true, std::memory_order_relaxed);
      LARDER_LOG_INFO("the node table stays at {} levels: {}", l, mapped.status().message());
    }
    return nullptr;
  }
  owned_[l] = std::make_unique<Level>(*mapped);
  levels_[l].store(owned_[l].get(), std::memory_order_release);
  return owned_[l].get();
}

std::atomic<std::uint32_t>& NodeTable::node_word(int i) const noexcept {
  static_assert(kNodeWords * sizeof(std::uint32_t) <= sizeof(Entry::spare));
  return first_.table[0].spare[i];
}

std::uint32_t NodeTable::node_word_now(int i) const noexcept {
  // A plain load: read-only memory allows it (a view's mapping).
  return first_.table[0].spare[i].load();
}

NodeTable::Entry* NodeTable::entry_at(std::uint32_t slot) const noexcept {
  const int l = static_cast<int>(slot >> kIndexBits);
  const std::uint32_t i = slot & ((1u << kIndexBits) - 1);
  if (l >= kMaxLevels) return nullptr;
  const Level* lv = levels_[l].load(std::memory_order_acquire);
  if (lv == nullptr || i >= lv->entries) return nullptr;
  return &lv->table[i];
}

NodeTable::Entry* NodeTable::entry_of(const Key& key, std::uint32_t* slot,
                                      int* first_room) const noexcept {
  // From the newest level mapped down: each level is as large as all before it, so most keys
  // are in the newest levels, and a lookup from level 0 up would scan every full window below
  // them first (16 entries of 192 bytes, memory misses each: most of the cost of a node-table
  // hit in a table of a million keys). A key is in one level only, so any order finds it. A
  // level above the newest mapped is looked for (an open) only when the key's window in the
  // level below it is full: a key goes on to level L + 1 only then.
  int top = 0;
  while (top < kMaxLevels && levels_[top].load(std::memory_order_acquire) != nullptr) ++top;
  enum class Seen { kFound, kAbsent, kFull };
  Entry* found = nullptr;
  auto scan = [&](int l) {
    const Level* lv = levels_[l].load(std::memory_order_acquire);
    const auto start = static_cast<std::uint32_t>(key.check % lv->entries);
    for (int probe = 0; probe < kMaxProbe; ++probe) {
      const std::uint32_t i = (start + static_cast<std::uint32_t>(probe)) % lv->entries;
      Entry& e = lv->table[i];
      const std::uint64_t w = e.word.load(std::memory_order_acquire);
      if (w == 0) return Seen::kAbsent;
      if (w != key.word) continue;
      if (e.state.load(std::memory_order_acquire) == kClaiming) return Seen::kAbsent;
      if (e.check != key.check) continue;
      *slot = (static_cast<std::uint32_t>(l) << kIndexBits) | i;
      found = &e;
      return Seen::kFound;
    }
    return Seen::kFull;
  };
  // The newest level mapped, and the levels above it while the key's window is full.
  int room = -1;
  int l = top - 1;
  for (; l < kMaxLevels; ++l) {
    if (l >= top && level(l, false) == nullptr) break;
    const Seen seen = scan(l);
    if (seen == Seen::kFound) return found;
    if (seen == Seen::kAbsent) {
      room = l;
      break;
    }
  }
  if (room < 0) room = l;  // every window full: the next level
  for (l = top - 2; l >= 0; --l) {
    const Seen seen = scan(l);
    if (seen == Seen::kFound) return found;
    if (seen == Seen::kAbsent) room = l;
  }
  if (first_room != nullptr) *first_room = room;
  return nullptr;
}

std::size_t NodeTable::bytes_for(std::uint32_t entries) noexcept {
  return static_cast<std::size_t>(entries) * sizeof(Entry);
}

NodeTable::NodeTable(std::string path, Level first, std::uint64_t max, bool read_only)
    : path_(std::move(path)), max_(max), read_only_(read_only), first_(first) {
  levels_[0].store(&first_, std::memory_order_release);
}

NodeTable::~NodeTable() {
  for (const auto& level : levels_) {
    const Level* lv = level.load(std::memory_order_acquire);
    if (lv != nullptr) sys::munmap(lv->table, bytes_for(lv->entries));
  }
}

std::uint64_t NodeTable::entries() const noexcept {
  std::uint64_t n = 0;
  for (const auto& lv : levels_) {
    const Level* p = lv.load(std::memory_order_acquire);
    if (p != nullptr) n += p->entries;
  }
  return n;
}

std::uint64_t NodeTable::bytes() const noexcept {
  return entries() * sizeof(Entry);
}

int NodeTable::levels() const noexcept {
  int n = 0;
  for (const auto& lv : levels_) n += lv.load(std::memory_order_acquire) != nullptr ? 1 : 0;
  return n;
}

Result<std::unique_ptr<NodeTable>> NodeTable::create(const std::string& path, std::uint32_t first,
                                                     std::uint64_t max) {
  const auto entries = static_cast<std::uint32_t>(std::min<std::uint64_t>(first, max));
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
  return std::unique_ptr<NodeTable>(
      new NodeTable(path, Level{static_cast<Entry*>(p), entries}, max));
}

Result<std::unique_ptr<NodeTable>> NodeTable::map_first(const std::string& path, std::uint64_t max,
                                                        bool read_only) {
  UniqueFd fd(sys::open(path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return from_errno(errno, "cannot open node table " + path);
  struct stat st {};
  if (sys::fstat(fd.get(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes == 0 || bytes % sizeof(Entry) != 0 || bytes / sizeof(Entry) > (1u << kIndexBits)) {
    return Status(Errc::kInvalidArgument, EINVAL, "node table " + path + " has a bad size");
  }
  void* p = sys::mmap(nullptr, bytes, read_only ? PROT_READ : PROT_READ | PROT_WRITE,
                      kNodeTableMapping, fd.get(), 0);
  if (p == MAP_FAILED) return from_errno(errno, "cannot map node table " + path);
  return std::unique_ptr<NodeTable>(new NodeTable(
      path, Level{static_cast<Entry*>(p), static_cast<std::uint32_t>(bytes / sizeof(Entry))}, max,
      read_only));
}

Result<std::unique_ptr<NodeTable>> NodeTable::attach(const std::string& path, std::uint64_t max) {
  return map_first(path, max, false);
}

Result<std::unique_ptr<NodeTable>> NodeTable::view(const std::string& path, std::uint64_t max) {
  return map_first(path, max, true);
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
  if (read_only_) return Found{Found::Outcome::kFull};
  // Most lookups are of keys the node has answered: found without a claim, newest level first.
  // Otherwise the claim starts at the lowest level whose window had room (the full windows below
  // it stay full: no second scan of them).
  int first = 0;
  {
    std::uint32_t slot = 0;
    if (const Entry* e = entry_of(key, &slot, &first); e != nullptr) {
      Found f;
      if (e->state.load(std::memory_order_acquire) == kReady && load_payload(*e, &f)) {
        f.outcome = Found::Outcome::kReady;
        f.slot = slot;
        return f;
      }
      first = static_cast<int>(slot >> kIndexBits);  // its level: wait for it there
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int l = first; l < kMaxLevels; ++l) {
    const Level* lv = level(l, true);
    if (lv == nullptr) break;
    Found f = acquire_in(*lv, l, key, deadline);
    if (f.outcome != Found::Outcome::kFull) return f;
  }
  return Found{Found::Outcome::kFull};
}

NodeTable::Found NodeTable::acquire_in(const Level& lv, int l, const Key& key,
                                       std::chrono::steady_clock::time_point deadline) {
  const auto start = static_cast<std::uint32_t>(key.check % lv.entries);
  const std::uint32_t tag = static_cast<std::uint32_t>(l) << kIndexBits;
  const int probes = static_cast<int>(std::min<std::uint32_t>(kMaxProbe, lv.entries));
  for (int probe = 0; probe < probes; ++probe) {
    const std::uint32_t i = (start + static_cast<std::uint32_t>(probe)) % lv.entries;
    Entry& e = lv.table[i];
    std::uint64_t w = e.word.load(std::memory_order_acquire);
    if (w == 0) {
      std::uint64_t expected = 0;
      if (e.word.compare_exchange_strong(expected, key.word, std::memory_order_acq_rel)) {
        e.check = key.check;
        e.resolver.store(static_cast<std::int32_t>(::getpid()), std::memory_order_relaxed);
        e.state.store(kResolving, std::memory_order_release);
        Found f;
        f.outcome = Found::Outcome::kClaimed;
        f.slot = tag | i;
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
    f.slot = tag | i;
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
  if (read_only_) return Found{Found::Outcome::kFull};
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
  Entry* entry = read_only_ ? nullptr : entry_at(slot);
  if (entry == nullptr) return;
  Entry& e = *entry;
  store_payload(e, payload);
  if (e.state.exchange(kReady, std::memory_order_acq_rel) == kResolvingWaited) {
    futex_wake_all(&e.state);
  }
}

void NodeTable::fail(std::uint32_t slot) {
  Entry* entry = read_only_ ? nullptr : entry_at(slot);
  if (entry == nullptr) return;
  Entry& e = *entry;
  if (e.state.exchange(kFailed, std::memory_order_acq_rel) == kResolvingWaited) {
    futex_wake_all(&e.state);
  }
}

}  // namespace larder
