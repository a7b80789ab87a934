#include "runtime/directory/sharded_directory.hpp"

#include <xxhash.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "runtime/common/log.hpp"

namespace larder {
namespace {

constexpr std::uint64_t kStateLoading = 0;
constexpr std::uint64_t kStateReady = 2;
constexpr std::uint64_t kStateFailed = 3;
constexpr std::uint64_t kTicketOffset = 8;
constexpr std::uint64_t kStateOffset = 16;
constexpr std::size_t kStateWord = 2;
constexpr std::size_t kCheckWord = 3;
constexpr std::size_t kPayloadWord = 4;
constexpr std::size_t kFinalWords = 16;  // state, check, payload: what publish() writes
constexpr std::size_t kFinishedKept = 4096;
constexpr int kWordBits = 40;
constexpr std::uint64_t kWordMask = (std::uint64_t{1} << kWordBits) - 1;

static_assert(kPayloadWord + kPayloadSize / 8 == ShardedDirectory::kSlotWords);
static_assert(kFinalWords == ShardedDirectory::kSlotWords - kStateWord);

std::uint64_t claim_word(const Key& key, int rank) noexcept {
  return (key.word & kWordMask) | (static_cast<std::uint64_t>(rank + 1) << kWordBits);
}
bool names_key(std::uint64_t w, const Key& key) noexcept {
  return w != 0 && (w & kWordMask) == (key.word & kWordMask);
}
int claimer_of(std::uint64_t w) noexcept {
  return static_cast<int>(w >> kWordBits) - 1;
}
std::uint64_t state_of(std::uint64_t w) noexcept {
  return w & 0xff;
}
std::uint64_t checksum(std::uint64_t check, const std::byte* payload) noexcept {
  std::byte buf[sizeof check + kPayloadSize];
  std::memcpy(buf, &check, sizeof check);
  std::memcpy(buf + sizeof check, payload, kPayloadSize);
  return XXH3_64bits(buf, sizeof buf) >> 8;  // 56 bits
}
std::uint64_t state_word(std::uint64_t state, std::uint64_t sum) noexcept {
  return state | (sum << 8);
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
    p.desired = claim_word(p.key, rank_);
    if (Status s = ops_.compare_and_swap(p.where.home, base, &p.desired, &p.expected, &p.old);
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
    return Result<Claim>(Claim{Claim::Outcome::kClaimed, {}, rank_, p.ticket});
  }
  if (!names_key(word, p.key)) return std::nullopt;  // another key's slot: probe on
  const int claimer = claimer_of(word);
  // The get may have read the slot before the claim it saw was made (the operations of a batch
  // are not ordered at the target): then only the claim word is known, and it names the claimer.
  if (p.slot[0] != word || state_of(p.slot[kStateWord]) == kStateLoading) {
    return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, claimer, p.ticket});
  }
  if (p.slot[kCheckWord] != p.key.check) return std::nullopt;  // same word, another key
  Claim c;
  std::memcpy(c.payload.data(), &p.slot[kPayloadWord], kPayloadSize);
  const std::uint64_t state = p.slot[kStateWord];
  if (checksum(p.slot[kCheckWord], c.payload.data()) != (state >> 8)) {
    // Read while the publisher wrote it: ask again (the caller sees a LOADING answer with no
    // claimer, and looks again after a pause).
    return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, -1, p.ticket});
  }
  c.outcome = state_of(state) == kStateReady ? Claim::Outcome::kReady : Claim::Outcome::kFailed;
  c.claimer = claimer;
  c.ticket = p.ticket;
  return Result<Claim>(c);
}

void ShardedDirectory::begin_claim(const Key& key) {
  std::lock_guard lock(mu_);
  ++loading_[key].claiming;
}

void ShardedDirectory::end_claim(const Key& key, const Where* won) {
  std::vector<int> lost_waiters;
  {
    std::lock_guard lock(mu_);
    auto it = loading_.find(key);
    if (it == loading_.end()) return;
    --it->second.claiming;
    if (won != nullptr) {
      it->second.claimed = true;
      it->second.where = *won;
    }
    if (it->second.claiming > 0 || it->second.claimed) return;
    // Lost or failed: nobody saw a claim word of this rank for it, unless the key was claimed
    // and finished here long ago; such a waiter is told to look again.
    lost_waiters = std::move(it->second.waiters);
    loading_.erase(it);
  }
  for (int to : lost_waiters) notify(to, key, Claim{Claim::Outcome::kLoading, {}, -1, 0});
}

void ShardedDirectory::acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) {
  std::vector<Probe> probes(lookups.size());
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < lookups.size(); ++i) {
    probes[i].key = lookups[i].key;
    probes[i].flags = lookups[i].flags;
    if ((probes[i].flags & kClaimIt) != 0) begin_claim(probes[i].key);
    pending.push_back(i);
  }
  while (!pending.empty()) {
    std::vector<std::size_t> issued;
    for (std::size_t i : pending) {
      if (probes[i].probe >= kMaxProbe) {
        out[i] =
            Status(Errc::kNoSpace, ENOSPC,
                   "directory shard of rank " + std::to_string(probes[i].where.home) + " is full");
        if ((probes[i].flags & kClaimIt) != 0) end_claim(probes[i].key, nullptr);
        continue;
      }
      if (Status s = issue(probes[i]); !s.ok()) {
        out[i] = s;
        continue;  // issued operations may still apply: the claim stays registered
      }
      issued.push_back(i);
    }
    pending.clear();
    if (issued.empty()) break;
    // One flush completes every operation of the batch, to every home.
    if (Status s = ops_.flush_all(); !s.ok()) {
      for (std::size_t i : issued) out[i] = s;
      // A compare-and-swap that failed with its flush may still have been applied: such a claim
      // stays registered (its waiters are answered at the timeout, never left hanging).
      break;
    }
    for (std::size_t i : issued) {
      auto decided = decide(probes[i]);
      if (decided) {
        out[i] = std::move(*decided);
        if ((probes[i].flags & kClaimIt) != 0) {
          const bool won = out[i].ok() && out[i]->outcome == Claim::Outcome::kClaimed;
          end_claim(probes[i].key, won ? &probes[i].where : nullptr);
        }
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
    const std::span<const std::byte> body{reinterpret_cast<const std::byte*>(&key), sizeof key};
    if (claimer == rank_) {
      on_register(rank_, body);  // another thread of this rank is loading it
    } else {
      sent = messenger_.send(claimer, Channel::kWaitRegister, body);
    }
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
    }
    // "Look again" (the claimer finished long ago and forgot the key), or a get that overlapped
    // the publisher's put: a short pause, then ask again. Rare; the pauses double, so even a key
    // that cannot be told from another (header comment) costs a few messages, not a storm.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
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
  if (to == rank_) {
    on_notify(rank_, {reinterpret_cast<const std::byte*>(&n), sizeof n});
    return;
  }
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
  Claim answer{Claim::Outcome::kLoading, {}, -1, 0};  // not known here: "look again"
  {
    std::lock_guard lock(mu_);
    if (auto it = finished_.find(key); it != finished_.end()) {
      answer = it->second;
    } else if (auto l = loading_.find(key); l != loading_.end()) {
      l->second.waiters.push_back(from);  // claimed, or being claimed: told when final
      return;
    }
  }
  notify(from, key, answer);
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
    if (it == loading_.end() || !it->second.claimed) {
      return Status(Errc::kInternal, EINVAL, "finishing an entry this rank did not claim");
    }
    l = std::move(it->second);
    if (l.claiming > 0) {
      // Another thread of this rank is still acquiring the key: it finds the entry final.
      it->second = Loading{};
      it->second.claiming = l.claiming;
    } else {
      loading_.erase(it);
    }
    finished_[key] = final;
    finished_order_.push_back(key);
    if (finished_order_.size() > kFinishedKept) {
      finished_.erase(finished_order_.front());
      finished_order_.pop_front();
    }
  }
  if (load_ != nullptr) load_->directory_op(l.where.home);
  // State, check and payload in one put: a reader trusts them only when the checksum matches.
  std::uint64_t words[kFinalWords];
  words[0] = state_word(state, checksum(key.check, payload.data()));
  words[1] = key.check;
  std::memcpy(&words[2], payload.data(), kPayloadSize);
  Status result = ops_.put(l.where.home, disp(l.where.slot) + kStateOffset, words, sizeof words);
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
