#include "runtime/directory/sharded_directory.hpp"

#include <xxhash.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "runtime/common/log.hpp"

namespace larder {
namespace {

constexpr std::uint64_t kStateClaimed = 0;  // claimed, claimer not recorded yet
constexpr std::uint64_t kStateLoading = 1;
constexpr std::uint64_t kStateReady = 2;
constexpr std::uint64_t kStateFailed = 3;
constexpr std::uint64_t kStateOffset = 8;
constexpr std::uint64_t kCheckOffset = 16;
constexpr std::uint64_t kTicketOffset = 24;
constexpr std::uint64_t kPayloadOffset = 32;
constexpr std::size_t kFinishedKept = 4096;

std::uint64_t state_of(std::uint64_t w) noexcept {
  return w & 0xff;
}
int claimer_of(std::uint64_t w) noexcept {
  return static_cast<int>((w >> 8) & 0xffffff);
}
std::uint32_t high_of(std::uint64_t w) noexcept {
  return static_cast<std::uint32_t>(w >> 32);
}
std::uint32_t checksum(std::uint64_t check, const std::byte* payload) noexcept {
  std::byte buf[sizeof check + kPayloadSize];
  std::memcpy(buf, &check, sizeof check);
  std::memcpy(buf + sizeof check, payload, kPayloadSize);
  return static_cast<std::uint32_t>(XXH3_64bits(buf, sizeof buf));
}
std::uint64_t state_word(std::uint64_t state, int rank, std::uint32_t high) noexcept {
  return state | (static_cast<std::uint64_t>(rank & 0xffffff) << 8) |
         (static_cast<std::uint64_t>(high) << 32);
}

// A notification on the wire: the key, the outcome, the claimer and the payload.
struct Notice {
  Key key;
  std::int32_t outcome = 0;
  std::int32_t claimer = -1;
  Payload payload{};
};

}  // namespace

ShardedDirectory::ShardedDirectory(ShardOps& ops, std::uint32_t slots, Messenger& messenger,
                                   PeerLoad* load)
    : ops_(ops),
      rank_(ops.rank()),
      size_(ops.size()),
      slots_(slots),
      messenger_(messenger),
      load_(load) {
  messenger.on(Channel::kWaitRegister,
               [this](int from, std::span<const std::byte> b) { on_register(from, b); });
  messenger.on(Channel::kWaitNotify,
               [this](int from, std::span<const std::byte> b) { on_notify(from, b); });
}

ShardedDirectory::~ShardedDirectory() = default;

int ShardedDirectory::home_of(const Key& key) const noexcept {
  return static_cast<int>(key.home % static_cast<std::uint64_t>(size_));
}

ShardedDirectory::Where ShardedDirectory::where(const Key& key, int probe) const noexcept {
  const auto start =
      static_cast<std::uint32_t>((key.word / static_cast<std::uint64_t>(size_)) % slots_);
  return Where{home_of(key), (start + static_cast<std::uint32_t>(probe)) % slots_};
}

Status ShardedDirectory::issue(Probe& p) {
  p.where = where(p.key, p.probe);
  const std::uint64_t base = disp(p.where.slot);
  if (load_ != nullptr) load_->directory_op(p.where.home);
  if ((p.flags & kClaimIt) != 0) {
    p.expected = 0;
    if (Status s = ops_.compare_and_swap(p.where.home, base, &p.key.word, &p.expected, &p.old);
        !s.ok()) {
      return s;
    }
  }
  if (Status s = ops_.get(p.where.home, base, p.slot, kSlotBytes); !s.ok()) return s;
  if ((p.flags & kTicket) != 0) {
    static constexpr std::uint64_t kOne = 1;
    return ops_.fetch_add(p.where.home, base + kTicketOffset, &kOne, &p.ticket);
  }
  return {};
}

std::optional<Result<Claim>> ShardedDirectory::decide(Probe& p) {
  const bool claiming = (p.flags & kClaimIt) != 0;
  const std::uint64_t word = claiming ? p.old : p.slot[0];
  if (word == 0) {
    if (!claiming) return Result<Claim>(Claim{Claim::Outcome::kAbsent, {}, -1, 0});
    if (Status s = record_claim(p.key, p.where); !s.ok()) return Result<Claim>(s);
    return Result<Claim>(Claim{Claim::Outcome::kClaimed, {}, rank_, p.ticket});
  }
  if (word != p.key.word) return std::nullopt;  // another key's slot: probe on
  // Our word. The get may have read the slot before our compare-and-swap was applied, or while
  // the claimer was recording itself: then the state says so and the caller asks again.
  const std::uint64_t state = p.slot[1];
  const std::uint64_t st = state_of(state);
  if (p.slot[0] != p.key.word || st == kStateClaimed) {
    return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, -1, p.ticket});
  }
  if (st == kStateLoading) {
    if (high_of(state) != static_cast<std::uint32_t>(p.key.check >> 32)) return std::nullopt;
    return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, claimer_of(state), p.ticket});
  }
  if (p.slot[2] != p.key.check) return std::nullopt;  // same word, another key
  Claim c;
  std::memcpy(c.payload.data(), &p.slot[4], kPayloadSize);
  if (checksum(p.slot[2], c.payload.data()) != high_of(state)) {
    // Read while the publisher wrote it: ask again (the caller sees a LOADING answer).
    return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, -1, p.ticket});
  }
  c.outcome = st == kStateReady ? Claim::Outcome::kReady : Claim::Outcome::kFailed;
  c.claimer = claimer_of(state);
  c.ticket = p.ticket;
  return Result<Claim>(c);
}

void ShardedDirectory::acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) {
  std::vector<Probe> probes(lookups.size());
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < lookups.size(); ++i) {
    probes[i].key = lookups[i].key;
    probes[i].flags = lookups[i].flags;
    pending.push_back(i);
  }
  while (!pending.empty()) {
    std::vector<std::size_t> issued;
    for (std::size_t i : pending) {
      if (probes[i].probe >= kMaxProbe) {
        out[i] =
            Status(Errc::kNoSpace, ENOSPC,
                   "directory shard of rank " + std::to_string(probes[i].where.home) + " is full");
        continue;
      }
      if (Status s = issue(probes[i]); !s.ok()) {
        out[i] = s;
        continue;
      }
      issued.push_back(i);
    }
    pending.clear();
    if (issued.empty()) break;
    // One flush completes every operation of the batch, to every home.
    if (Status s = ops_.flush_all(); !s.ok()) {
      for (std::size_t i : issued) out[i] = s;
      break;
    }
    for (std::size_t i : issued) {
      auto decided = decide(probes[i]);
      if (decided) {
        out[i] = std::move(*decided);
      } else {
        ++probes[i].probe;
        pending.push_back(i);
      }
    }
  }
}

Result<Claim> ShardedDirectory::acquire(const Key& key, unsigned flags) {
  const Lookup one{key, flags};
  Result<Claim> out = Status(Errc::kInternal, 0, "not looked up");
  acquire_many(std::span(&one, 1), std::span(&out, 1));
  return out;
}

Status ShardedDirectory::record_claim(const Key& key, const Where& where) {
  {
    // Before the state names this rank: a waiter that reads it finds the key here.
    std::lock_guard lock(mu_);
    loading_[key].where = where;
  }
  // Loading, with the claimer and the check's high half (readers tell keys apart by it until
  // the full check is written with the payload).
  const std::uint64_t w =
      state_word(kStateLoading, rank_, static_cast<std::uint32_t>(key.check >> 32));
  if (Status s = ops_.store(where.home, disp(where.slot) + kStateOffset, &w); !s.ok()) return s;
  return ops_.flush(where.home);
}

Result<Claim> ShardedDirectory::await_notice(const Key& key, int claimer,
                                             std::chrono::steady_clock::time_point deadline) {
  std::shared_ptr<Waiter> w;
  bool first = false;
  {
    std::lock_guard lock(mu_);
    auto& slot = waiting_[key];
    if (slot == nullptr) {
      slot = std::make_shared<Waiter>();
      first = true;
    }
    w = slot;
    ++w->threads;
  }
  Status sent;
  if (first) {
    sent = messenger_.send(claimer, Channel::kWaitRegister,
                           {reinterpret_cast<const std::byte*>(&key), sizeof key});
  }
  std::unique_lock lock(mu_);
  const bool done = sent.ok() && woken_.wait_until(lock, deadline, [&] { return w->done; });
  if (--w->threads == 0) {
    if (auto it = waiting_.find(key); it != waiting_.end() && it->second == w) waiting_.erase(it);
  }
  if (!sent.ok()) return sent;
  if (!done) return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for another rank's load");
  return w->claim;
}

Result<Claim> ShardedDirectory::wait(const Key& key, const Claim& loading,
                                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Claim now = loading;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    if (now.outcome != Claim::Outcome::kLoading) return now;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for another rank's load");
    }
    if (now.claimer >= 0) {
      auto notice = await_notice(key, now.claimer, deadline);
      if (!notice.ok()) return notice;
      if (notice->outcome != Claim::Outcome::kLoading) return *notice;
      // "Look again": the claimer no longer remembers this key (finished long ago).
    } else {
      // The claimer has not recorded itself yet (its claim's round trip is finishing), or a get
      // overlapped the publisher's writes: a short pause, then ask again. Rare.
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
    auto again = acquire(key, kLookOnly);
    if (!again.ok()) return again;
    now = *again;
  }
}

void ShardedDirectory::notify(int to, const Key& key, const Claim& claim) {
  Notice n;
  n.key = key;
  n.outcome = static_cast<std::int32_t>(claim.outcome);
  n.claimer = claim.claimer;
  n.payload = claim.payload;
  if (Status s = messenger_.send(to, Channel::kWaitNotify,
                                 {reinterpret_cast<const std::byte*>(&n), sizeof n});
      !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot tell rank {} that an entry is ready: {}", to, s.message());
  }
}

void ShardedDirectory::on_register(int from, std::span<const std::byte> body) {
  if (body.size() != sizeof(Key)) return;
  Key key;
  std::memcpy(&key, body.data(), sizeof key);
  std::optional<Claim> final;
  {
    std::lock_guard lock(mu_);
    if (auto it = loading_.find(key); it != loading_.end()) {
      it->second.waiters.push_back(from);
      return;
    }
    final = Claim{Claim::Outcome::kLoading, {}, -1, 0};  // not known: "look again"
    if (auto it = finished_.find(key); it != finished_.end()) final = it->second;
  }
  notify(from, key, *final);
}

void ShardedDirectory::on_notify(int /*from*/, std::span<const std::byte> body) {
  if (body.size() != sizeof(Notice)) return;
  Notice n;
  std::memcpy(&n, body.data(), sizeof n);
  std::lock_guard lock(mu_);
  auto it = waiting_.find(n.key);
  if (it == waiting_.end()) return;  // the waiter gave up
  it->second->claim = Claim{static_cast<Claim::Outcome>(n.outcome), n.payload, n.claimer, 0};
  it->second->done = true;
  woken_.notify_all();
}

Status ShardedDirectory::finish(const Key& key, std::uint64_t state, const Payload& payload) {
  Loading l;
  const Claim final{state == kStateReady ? Claim::Outcome::kReady : Claim::Outcome::kFailed,
                    payload, rank_, 0};
  {
    std::lock_guard lock(mu_);
    auto it = loading_.find(key);
    if (it == loading_.end()) {
      return Status(Errc::kInternal, EINVAL, "finishing an entry this rank did not claim");
    }
    l = std::move(it->second);
    loading_.erase(it);
    finished_[key] = final;
    finished_order_.push_back(key);
    if (finished_order_.size() > kFinishedKept) {
      finished_.erase(finished_order_.front());
      finished_order_.pop_front();
    }
  }
  const std::uint64_t base = disp(l.where.slot);
  if (load_ != nullptr) load_->directory_op(l.where.home);
  // The check and the payload, flushed before the state that makes them valid.
  Status result = ops_.put(l.where.home, base + kCheckOffset, &key.check, sizeof key.check);
  if (result.ok()) {
    result = ops_.put(l.where.home, base + kPayloadOffset, payload.data(), kPayloadSize);
  }
  if (result.ok()) result = ops_.flush(l.where.home);
  const std::uint64_t w = state_word(state, rank_, checksum(key.check, payload.data()));
  if (result.ok()) result = ops_.store(l.where.home, base + kStateOffset, &w);
  if (result.ok()) result = ops_.flush(l.where.home);
  // Waiters are told even when the slot could not be written: they must not wait for nothing.
  for (int to : l.waiters) notify(to, key, final);
  return result;
}

Status ShardedDirectory::publish(const Key& key, const Payload& payload) {
  return finish(key, kStateReady, payload);
}

Status ShardedDirectory::abandon(const Key& key) {
  return finish(key, kStateFailed, Payload{});
}

}  // namespace larder
