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
constexpr std::size_t kFinishedKept = 4096;
constexpr int kWordBits = 40;
constexpr std::uint64_t kWordMask = (std::uint64_t{1} << kWordBits) - 1;

static_assert(kPayloadWord + kPayloadSize / 8 == ShardedDirectory::kSlotWords);
static_assert(kStateWord == 2);  // FinalWords: words 2 to the end

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

}  // namespace

ShardedDirectory::ShardedDirectory(ShardOps& ops, std::uint32_t slots, Messenger& messenger,
                                   PeerLoad* load, Options options)
    : ops_(ops),
      rank_(ops.rank()),
      size_(ops.size()),
      slots_(slots),
      messenger_(messenger),
      load_(load),
      options_(options) {
  messenger.on(Channel::kWaitRegister,
               [this](int from, std::span<const std::byte> b) { on_register(from, b); });
  messenger.on(Channel::kWaitNotify,
               [this](int from, std::span<const std::byte> b) { on_notify(from, b); });
  messenger.on(Channel::kWatchRegister,
               [this](int from, std::span<const std::byte> b) { on_watch_register(from, b); });
  messenger.on(Channel::kWatchFinal,
               [this](int from, std::span<const std::byte> b) { on_watch_final(from, b); });
  messenger.on(Channel::kOverflowAsk,
               [this](int from, std::span<const std::byte> b) { on_overflow_ask(from, b); });
  messenger.on(Channel::kOverflowAnswer,
               [this](int from, std::span<const std::byte> b) { on_overflow_answer(from, b); });
  messenger.on(Channel::kOverflowFinal,
               [this](int from, std::span<const std::byte> b) { on_overflow_final(from, b); });
}

ShardedDirectory::~ShardedDirectory() = default;

int ShardedDirectory::home_of(const Key& key) const noexcept {
  return static_cast<int>(key.home % static_cast<std::uint64_t>(size_));
}

ShardedDirectory::Where ShardedDirectory::where(const Key& key, int offset) const noexcept {
  const auto start =
      static_cast<std::uint32_t>((key.word / static_cast<std::uint64_t>(size_)) % slots_);
  return Where{home_of(key), start + static_cast<std::uint32_t>(offset)};  // never wraps
}

Status ShardedDirectory::issue(Probe& p) {
  p.where = where(p.key, p.offset);
  const std::uint64_t base = disp(p.where.slot);
  if (load_ != nullptr) load_->directory_op(p.where.home);
  if ((p.flags & kClaimIt) != 0 && !p.scan) {
    p.expected = 0;
    p.desired = claim_word(p.key, rank_);
    if (Status s = ops_.compare_and_swap(p.where.home, base, &p.desired, &p.expected, &p.old);
        !s.ok()) {
      return s;
    }
  }
  // The targeted slot and the next (the first round: most keys are in their first slot, and a
  // get of the whole window would move 16 times the bytes), or the rest of the window.
  p.got = p.rounds == 0 ? std::min(kFirstGet, kWindow) : kWindow - p.offset;
  ++p.rounds;
  if (Status s = ops_.get(p.where.home, base, p.slots.data(),
                          static_cast<std::size_t>(p.got) * kSlotBytes);
      !s.ok()) {
    return s;
  }
  if ((p.flags & kTicket) != 0 && !p.scan) {
    static constexpr std::uint64_t kOne = 1;
    return ops_.fetch_add(p.where.home, base + kTicketOffset, &kOne, &p.ticket);
  }
  return {};
}

std::optional<Result<Claim>> ShardedDirectory::decide(Probe& p) {
  const bool claiming = (p.flags & kClaimIt) != 0;
  const std::uint64_t* slot = p.slots.data();
  if (p.scan) {
    p.scan = false;
    return look_on(p, 0);
  }
  const std::uint64_t word = claiming ? p.old : slot[0];
  if (word == 0) {
    if (!claiming) return Result<Claim>(Claim{Claim::Outcome::kAbsent, {}, -1, 0});
    return Result<Claim>(Claim{Claim::Outcome::kClaimed, {}, rank_, p.ticket});
  }
  if (names_key(word, p.key)) {
    const int claimer = claimer_of(word);
    // The get may have read the slot before the claim it saw was made (the operations of a
    // batch are not ordered at the target): then only the claim word is known, and it names the
    // claimer.
    if (slot[0] != word || state_of(slot[kStateWord]) == kStateLoading) {
      return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, claimer, p.ticket});
    }
    Claim c;
    std::memcpy(c.payload.data(), &slot[kPayloadWord], kPayloadSize);
    const std::uint64_t state = slot[kStateWord];
    if (checksum(slot[kCheckWord], c.payload.data()) != (state >> 8)) {
      // Read while the publisher wrote it: ask again (the caller sees a LOADING answer with no
      // claimer, and looks again after a pause). Checked before the check word, which such a
      // read may hold from before the put: taken for another key's, it sent the reader on to
      // claim the next slot, a second claim of the key.
      return Result<Claim>(Claim{Claim::Outcome::kLoading, {}, -1, p.ticket});
    }
    if (slot[kCheckWord] == p.key.check) {
      c.outcome = state_of(state) == kStateReady ? Claim::Outcome::kReady : Claim::Outcome::kFailed;
      c.claimer = claimer;
      c.ticket = p.ticket;
      return Result<Claim>(c);
    }
    // Same low bits, another key: look on.
  }
  return look_on(p, 1);
}

std::optional<Result<Claim>> ShardedDirectory::look_on(Probe& p, int from) {
  // Another key's slot. The rest of what the get saw: the key is in the first slot that is
  // empty or may be the key's (slots are never emptied, so a key is never past an empty slot);
  // the next round targets it, with its own claim and ticket. With neither, the next round only
  // reads the rest of the window (no claim, no ticket: a blind one would land on another key's
  // slot). A window with neither anywhere is full of other keys for good: the key is in its
  // home's overflow table.
  const bool claiming = (p.flags & kClaimIt) != 0;
  for (int k = from; k < p.got; ++k) {
    const std::uint64_t* s = p.slots.data() + static_cast<std::size_t>(k) * kSlotWords;
    const std::uint64_t w = s[0];
    if (w == 0) {
      if (!claiming) return Result<Claim>(Claim{Claim::Outcome::kAbsent, {}, -1, 0});
      p.offset += k;
      return std::nullopt;
    }
    if (!names_key(w, p.key)) continue;
    const bool other =
        state_of(s[kStateWord]) != kStateLoading && s[kCheckWord] != p.key.check &&
        checksum(s[kCheckWord], reinterpret_cast<const std::byte*>(s + kPayloadWord)) ==
            (s[kStateWord] >> 8);
    if (other) continue;  // a whole final slot of another key with the same low bits
    p.offset += k;
    return std::nullopt;
  }
  if (p.offset + p.got < kWindow) {  // the rest of the window, unseen yet
    p.offset += p.got;
    p.scan = true;
    return std::nullopt;
  }
  p.overflow = true;
  return std::nullopt;
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
  for (int to : lost_waiters) {
    notify_all(to, {notice_of(key, Claim{Claim::Outcome::kLoading, {}, -1, 0})});
  }
}

void ShardedDirectory::acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) {
  std::vector<Probe> probes(lookups.size());
  std::vector<std::size_t> pending;
  std::vector<std::size_t> overflow;
  for (std::size_t i = 0; i < lookups.size(); ++i) {
    probes[i].key = lookups[i].key;
    probes[i].flags = lookups[i].flags;
    if ((probes[i].flags & kClaimIt) != 0) begin_claim(probes[i].key);
    pending.push_back(i);
  }
  while (!pending.empty()) {
    std::vector<std::size_t> issued;
    for (std::size_t i : pending) {
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
      } else if (probes[i].overflow) {
        overflow.push_back(i);
      } else {
        pending.push_back(i);  // the slot of the window decide() chose
      }
    }
  }
  if (!overflow.empty()) ask_overflow(probes, overflow, out);
}

void ShardedDirectory::ask_overflow(std::vector<Probe>& probes,
                                    const std::vector<std::size_t>& which,
                                    std::span<Result<Claim>> out) {
  // One request per home for all its keys (in pieces of kMaxMessage); this rank's own overflow
  // table is asked directly.
  std::unordered_map<int, std::vector<Ask>> asks;
  std::vector<Answer> answers;
  for (std::size_t i : which) {
    Probe& p = probes[i];
    p.where = Where{home_of(p.key), kOverflow};
    if (load_ != nullptr) load_->directory_op(p.where.home);
    const Ask ask{p.key, p.flags, static_cast<std::uint32_t>(i)};
    if (p.where.home == rank_) {
      answers.push_back(apply_overflow(rank_, ask));
    } else {
      asks[p.where.home].push_back(ask);
    }
  }
  std::vector<bool> unsent(probes.size(), false);
  std::shared_ptr<Call> call = std::make_shared<Call>();
  std::vector<std::uint64_t> ids;
  constexpr std::size_t kPerMessage = (kMaxMessage - sizeof(std::uint64_t)) / sizeof(Ask);
  for (const auto& [home, list] : asks) {
    for (std::size_t at = 0; at < list.size(); at += kPerMessage) {
      const std::size_t n = std::min(kPerMessage, list.size() - at);
      std::uint64_t id = 0;
      {
        std::lock_guard lock(mu_);
        id = next_call_++;
        calls_[id] = call;
        call->expected += n;
      }
      std::vector<std::byte> body(sizeof id + n * sizeof(Ask));
      std::memcpy(body.data(), &id, sizeof id);
      std::memcpy(body.data() + sizeof id, list.data() + at, n * sizeof(Ask));
      ++overflow_requests_;
      if (Status s = messenger_.send(home, Channel::kOverflowAsk, body); !s.ok()) {
        std::lock_guard lock(mu_);
        calls_.erase(id);
        call->expected -= n;
        // A request that could not be sent claimed nothing.
        for (std::size_t k = at; k < at + n; ++k) {
          out[list[k].index] = s;
          unsent[list[k].index] = true;
        }
        continue;
      }
      ids.push_back(id);
    }
  }
  {
    std::unique_lock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    answered_.wait_until(lock, deadline, [&] { return call->answers.size() >= call->expected; });
    for (std::uint64_t id : ids) calls_.erase(id);
    answers.insert(answers.end(), call->answers.begin(), call->answers.end());
  }
  std::vector<bool> answered(probes.size(), false);
  for (const Answer& a : answers) {
    if (a.index >= probes.size()) continue;
    Probe& p = probes[a.index];
    answered[a.index] = true;
    if (a.outcome == kRefused) {
      ++refused_;
      out[a.index] = Status(Errc::kNoSpace, ENOSPC,
                            "the directory of rank " + std::to_string(p.where.home) +
                                " is full (LARDER_DIR_ENTRIES)");
    } else {
      out[a.index] = Claim{static_cast<Claim::Outcome>(a.outcome), a.payload, a.claimer, a.ticket};
    }
    if ((p.flags & kClaimIt) != 0) {
      const bool won = out[a.index].ok() && out[a.index]->outcome == Claim::Outcome::kClaimed;
      end_claim(p.key, won ? &p.where : nullptr);
    }
  }
  for (std::size_t i : which) {
    Probe& p = probes[i];
    if (answered[i]) continue;
    if (unsent[i]) {  // nothing was claimed
      if ((p.flags & kClaimIt) != 0) end_claim(p.key, nullptr);
      continue;
    }
    // No answer in time: the home may still apply a claim, which stays registered (its waiters
    // are answered at their timeout, as after a failed flush).
    out[i] = Status(Errc::kTimeout, ETIMEDOUT,
                    "rank " + std::to_string(p.where.home) + " did not answer an overflow lookup");
  }
}

ShardedDirectory::Answer ShardedDirectory::apply_overflow(int from, const Ask& ask) {
  Answer a;
  a.index = ask.index;
  std::lock_guard lock(overflow_mu_);
  auto it = overflow_.find(ask.key);
  if (it == overflow_.end()) {
    if ((ask.flags & kClaimIt) == 0) {
      a.outcome = static_cast<std::int32_t>(Claim::Outcome::kAbsent);
      return a;
    }
    if (overflow_.size() >= options_.overflow_entries) {
      a.outcome = kRefused;
      return a;
    }
    Entry e;
    e.outcome = static_cast<std::int32_t>(Claim::Outcome::kLoading);
    e.claimer = from;
    e.tickets = (ask.flags & kTicket) != 0 ? 1 : 0;
    overflow_.emplace(ask.key, e);
    a.outcome = static_cast<std::int32_t>(Claim::Outcome::kClaimed);
    a.claimer = from;
    return a;
  }
  Entry& e = it->second;
  a.outcome = e.outcome;
  a.claimer = e.claimer;
  a.payload = e.payload;
  if ((ask.flags & kTicket) != 0) a.ticket = e.tickets++;
  return a;
}

std::uint64_t ShardedDirectory::overflow_entries() const {
  std::lock_guard lock(overflow_mu_);
  return overflow_.size();
}

void ShardedDirectory::on_overflow_ask(int from, std::span<const std::byte> body) {
  std::uint64_t id = 0;
  if (body.size() < sizeof id || (body.size() - sizeof id) % sizeof(Ask) != 0) return;
  std::memcpy(&id, body.data(), sizeof id);
  const std::size_t n = (body.size() - sizeof id) / sizeof(Ask);
  std::vector<Answer> answers(n);
  for (std::size_t k = 0; k < n; ++k) {
    Ask ask;
    std::memcpy(&ask, body.data() + sizeof id + k * sizeof(Ask), sizeof ask);
    answers[k] = apply_overflow(from, ask);
    answers[k].request = id;
  }
  if (Status s = send_in_pieces(from, Channel::kOverflowAnswer, answers); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot answer rank {}'s overflow lookup: {}", from, s.message());
  }
}

void ShardedDirectory::on_overflow_answer(int /*from*/, std::span<const std::byte> body) {
  if (body.empty() || body.size() % sizeof(Answer) != 0) return;
  std::lock_guard lock(mu_);
  bool any = false;
  for (std::size_t at = 0; at < body.size(); at += sizeof(Answer)) {
    Answer a;
    std::memcpy(&a, body.data() + at, sizeof a);
    auto it = calls_.find(a.request);
    if (it == calls_.end()) continue;  // its requester gave up
    it->second->answers.push_back(a);
    any = true;
  }
  if (any) answered_.notify_all();
}

void ShardedDirectory::on_overflow_final(int from, std::span<const std::byte> body) {
  if (body.empty() || body.size() % sizeof(Notice) != 0) return;
  std::lock_guard lock(overflow_mu_);
  for (std::size_t at = 0; at < body.size(); at += sizeof(Notice)) {
    Notice n;
    std::memcpy(&n, body.data() + at, sizeof n);
    auto it = overflow_.find(n.key);
    // Only the claimer finishes an entry, once.
    if (it == overflow_.end() || it->second.claimer != from ||
        it->second.outcome != static_cast<std::int32_t>(Claim::Outcome::kLoading)) {
      continue;
    }
    it->second.outcome = n.outcome;
    it->second.payload = n.payload;
  }
}

Result<Claim> ShardedDirectory::acquire(const Key& key, unsigned flags) {
  const Lookup one{key, flags};
  Result<Claim> out = Status(Errc::kInternal, 0, "not looked up");
  acquire_many(std::span(&one, 1), std::span(&out, 1));
  return out;
}

void ShardedDirectory::await_notices(std::span<const Key> keys, std::span<const int> claimers,
                                     std::chrono::steady_clock::time_point deadline,
                                     std::span<Result<Claim>> out, Channel channel) {
  // One Waiter per key and rank (threads of this rank waiting for the same key share it);
  // the first to wait registers, with one message per claimer for all its keys.
  std::vector<std::shared_ptr<Waiter>> ws(keys.size());
  std::unordered_map<int, std::vector<Key>> registrations;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto& slot = waiting_[keys[i]];
      if (slot == nullptr) {
        slot = std::make_shared<Waiter>();
        registrations[claimers[i]].push_back(keys[i]);
      }
      ws[i] = slot;
      ++ws[i]->threads;
    }
  }
  std::unordered_map<int, Status> sent;
  for (auto& [claimer, list] : registrations) {
    if (claimer == rank_) {
      for (const Key& k : list) {  // another thread of this rank is loading them (or the home)
        const std::span<const std::byte> body{reinterpret_cast<const std::byte*>(&k), sizeof k};
        if (channel == Channel::kWatchRegister) {
          on_watch_register(rank_, body);
        } else {
          on_register(rank_, body);
        }
      }
    } else {
      sent[claimer] = send_in_pieces(claimer, channel, list);
    }
  }
  std::unique_lock lock(mu_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Waiter& w = *ws[i];
    const auto failed = sent.find(claimers[i]);
    const bool registered = failed == sent.end() || failed->second.ok();
    const bool done = registered && woken_.wait_until(lock, deadline, [&] { return w.done; });
    if (!registered) {
      out[i] = failed->second;
    } else if (!done) {
      out[i] = Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for another rank's load");
    } else {
      out[i] = w.claim;
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (--ws[i]->threads == 0) {
      if (auto it = waiting_.find(keys[i]); it != waiting_.end() && it->second == ws[i]) {
        waiting_.erase(it);
      }
    }
  }
}

void ShardedDirectory::wait_many(std::span<const Key> keys, std::span<const Claim> loading,
                                 std::chrono::milliseconds timeout, std::span<Result<Claim>> out) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<Claim> now(loading.begin(), loading.end());
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out[i] = now[i];
    if (now[i].outcome == Claim::Outcome::kLoading) pending.push_back(i);
  }
  auto pause = std::chrono::microseconds(20);
  while (!pending.empty()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      for (std::size_t i : pending) {
        out[i] = Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for another rank's load");
      }
      return;
    }
    // Those whose claimer is known: registered with it and told when final.
    std::vector<Key> wait_keys;
    std::vector<int> claimers;
    std::vector<std::size_t> of;
    for (std::size_t i : pending) {
      if (now[i].claimer < 0) continue;
      wait_keys.push_back(keys[i]);
      claimers.push_back(now[i].claimer);
      of.push_back(i);
    }
    std::vector<Result<Claim>> notices(wait_keys.size(), Status());
    if (!wait_keys.empty()) await_notices(wait_keys, claimers, deadline, notices);
    std::vector<std::size_t> again;
    for (std::size_t k = 0; k < of.size(); ++k) {
      const std::size_t i = of[k];
      if (!notices[k].ok()) {
        out[i] = notices[k].status();
        now[i].claimer = -2;  // settled (an error)
      } else if (notices[k]->outcome != Claim::Outcome::kLoading) {
        out[i] = *notices[k];
        now[i].claimer = -2;  // settled
      }
    }
    for (std::size_t i : pending) {
      if (now[i].claimer != -2) again.push_back(i);
    }
    if (again.empty()) return;
    // "Look again" (the claimer finished long ago and forgot the key), or a get that overlapped
    // the publisher's put: a short pause, then ask again, all in one round trip. Rare; the
    // pauses double, so even a key that cannot be told from another (header comment) costs a
    // few messages, not a storm.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
    std::vector<Lookup> lookups;
    lookups.reserve(again.size());
    for (std::size_t i : again) lookups.push_back(Lookup{keys[i], kLookOnly});
    std::vector<Result<Claim>> answers(lookups.size(), Status());
    acquire_many(lookups, answers);
    pending.clear();
    for (std::size_t k = 0; k < again.size(); ++k) {
      const std::size_t i = again[k];
      out[i] = answers[k];
      if (answers[k].ok() && answers[k]->outcome == Claim::Outcome::kLoading) {
        now[i] = *answers[k];
        pending.push_back(i);
      }
    }
  }
}

Result<Claim> ShardedDirectory::watch(const Key& key, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    Result<Claim> now = acquire(key, kLookOnly);
    if (!now.ok()) return now;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (now->outcome == Claim::Outcome::kReady || now->outcome == Claim::Outcome::kFailed) {
      return now;
    }
    if (left.count() <= 0) {
      return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for the entry");
    }
    if (now->outcome == Claim::Outcome::kLoading && now->claimer >= 0) {
      return wait(key, *now, left);  // claimed: its claimer tells its waiters
    }
    if (now->outcome == Claim::Outcome::kAbsent) {
      // Nobody has claimed it: the home is told when somebody finishes it.
      const int home = home_of(key);
      Result<Claim> told = Status();
      await_notices(std::span(&key, 1), std::span(&home, 1), deadline, std::span(&told, 1),
                    Channel::kWatchRegister);
      if (!told.ok() || told->outcome != Claim::Outcome::kLoading) return told;
    }
    // "Look again" (the home forgot the key, or a read overlapped a publication): a short pause.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

Result<Claim> ShardedDirectory::wait(const Key& key, const Claim& loading,
                                     std::chrono::milliseconds timeout) {
  Result<Claim> out = Status();
  wait_many(std::span(&key, 1), std::span(&loading, 1), timeout, std::span(&out, 1));
  return out;
}

template <class T>
Status ShardedDirectory::send_in_pieces(int to, Channel channel, const std::vector<T>& items) {
  constexpr std::size_t kPerMessage = kMaxMessage / sizeof(T);
  static_assert(kPerMessage >= 1);
  Status first;
  for (std::size_t at = 0; at < items.size(); at += kPerMessage) {
    const std::size_t n = std::min(kPerMessage, items.size() - at);
    Status s = messenger_.send(
        to, channel, {reinterpret_cast<const std::byte*>(items.data() + at), n * sizeof(T)});
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

void ShardedDirectory::notify_all(int to, const std::vector<Notice>& notices) {
  if (notices.empty()) return;
  if (to == rank_) {
    on_notify(rank_, {reinterpret_cast<const std::byte*>(notices.data()),
                      notices.size() * sizeof(Notice)});
    return;
  }
  if (Status s = send_in_pieces(to, Channel::kWaitNotify, notices); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot tell rank {} that entries are final: {}", to, s.message());
  }
}

ShardedDirectory::Notice ShardedDirectory::notice_of(const Key& key, const Claim& claim) {
  Notice n;
  n.key = key;
  n.outcome = static_cast<std::int32_t>(claim.outcome);
  n.claimer = claim.claimer;
  n.payload = claim.payload;
  return n;
}

namespace {

// The keys a registration carries (none when the body is malformed).
std::vector<Key> keys_in(std::span<const std::byte> body) {
  std::vector<Key> keys;
  if (body.empty() || body.size() % sizeof(Key) != 0) return keys;
  keys.resize(body.size() / sizeof(Key));
  std::memcpy(keys.data(), body.data(), body.size());
  return keys;
}

}  // namespace

void ShardedDirectory::on_register(int from, std::span<const std::byte> body) {
  std::vector<Notice> answers;
  {
    std::lock_guard lock(mu_);
    for (const Key& key : keys_in(body)) {
      if (auto it = finished_.find(key); it != finished_.end()) {
        answers.push_back(notice_of(key, it->second));
      } else if (auto l = loading_.find(key); l != loading_.end()) {
        l->second.waiters.push_back(from);  // claimed, or being claimed: told when final
      } else {
        answers.push_back(
            notice_of(key, Claim{Claim::Outcome::kLoading, {}, -1, 0}));  // "look again"
      }
    }
  }
  notify_all(from, answers);
}

void ShardedDirectory::on_watch_register(int from, std::span<const std::byte> body) {
  std::vector<Notice> answers;
  {
    std::lock_guard lock(mu_);
    for (const Key& key : keys_in(body)) {
      if (auto it = watched_final_.find(key); it != watched_final_.end()) {
        answers.push_back(notice_of(key, it->second));
      } else {
        watchers_[key].push_back(from);
      }
    }
  }
  notify_all(from, answers);
}

void ShardedDirectory::on_watch_final(int /*from*/, std::span<const std::byte> body) {
  if (body.empty() || body.size() % sizeof(Notice) != 0) return;
  std::unordered_map<int, std::vector<Notice>> out;
  {
    std::lock_guard lock(mu_);
    for (std::size_t at = 0; at < body.size(); at += sizeof(Notice)) {
      Notice n;
      std::memcpy(&n, body.data() + at, sizeof n);
      const Claim final{static_cast<Claim::Outcome>(n.outcome), n.payload, n.claimer, 0};
      if (watched_final_.insert_or_assign(n.key, final).second) {
        watched_order_.push_back(n.key);
        if (watched_order_.size() > kWatchedKept) {
          watched_final_.erase(watched_order_.front());
          watched_order_.pop_front();
        }
      }
      if (auto it = watchers_.find(n.key); it != watchers_.end()) {
        for (int to : it->second) out[to].push_back(n);
        watchers_.erase(it);
      }
    }
  }
  for (const auto& [to, list] : out) notify_all(to, list);
}

void ShardedDirectory::on_notify(int /*from*/, std::span<const std::byte> body) {
  if (body.empty() || body.size() % sizeof(Notice) != 0) return;
  std::lock_guard lock(mu_);
  bool any = false;
  for (std::size_t at = 0; at < body.size(); at += sizeof(Notice)) {
    Notice n;
    std::memcpy(&n, body.data() + at, sizeof n);
    auto it = waiting_.find(n.key);
    if (it == waiting_.end()) continue;  // the waiter gave up
    it->second->claim = Claim{static_cast<Claim::Outcome>(n.outcome), n.payload, n.claimer, 0};
    it->second->done = true;
    any = true;
  }
  if (any) woken_.notify_all();
}

bool ShardedDirectory::settle(const Key& key, const Claim& final, Loading* out) {
  std::lock_guard lock(mu_);
  auto it = loading_.find(key);
  if (it == loading_.end() || !it->second.claimed) return false;
  *out = std::move(it->second);
  if (out->claiming > 0) {
    // Another thread of this rank is still acquiring the key: it finds the entry final.
    it->second = Loading{};
    it->second.claiming = out->claiming;
  } else {
    loading_.erase(it);
  }
  finished_[key] = final;
  finished_order_.push_back(key);
  if (finished_order_.size() > kFinishedKept) {
    finished_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
  return true;
}

Status ShardedDirectory::put_final(const Key& key, const Where& where, const Claim& final,
                                   FinalWords& words) {
  if (load_ != nullptr) load_->directory_op(where.home);
  // State, check and payload in one put: a reader trusts them only when the checksum matches.
  const std::uint64_t state = final.outcome == Claim::Outcome::kReady ? kStateReady : kStateFailed;
  words[0] = state_word(state, checksum(key.check, final.payload.data()));
  words[1] = key.check;
  std::memcpy(&words[2], final.payload.data(), kPayloadSize);
  return ops_.put(where.home, disp(where.slot) + kStateOffset, words.data(), sizeof words);
}

void ShardedDirectory::finish_many(std::span<const Final> finals, std::span<Status> out) {
  std::vector<FinalWords> words(finals.size());
  std::vector<Loading> settled(finals.size());
  std::vector<Claim> answers(finals.size());
  std::vector<bool> issued(finals.size(), false);
  std::vector<bool> held(finals.size(), false);  // this rank held the claim
  std::unordered_map<int, std::vector<Notice>> overflow_finals;
  std::unordered_map<int, std::vector<std::size_t>> overflow_of;
  for (std::size_t i = 0; i < finals.size(); ++i) {
    answers[i] = Claim{finals[i].ready ? Claim::Outcome::kReady : Claim::Outcome::kFailed,
                       finals[i].ready ? finals[i].payload : Payload{}, rank_, 0};
    if (!settle(finals[i].key, answers[i], &settled[i])) {
      out[i] = Status(Errc::kInternal, EINVAL, "finishing an entry this rank did not claim");
      continue;
    }
    held[i] = true;
    if (settled[i].where.slot == kOverflow) {
      // The home's overflow table is told with a message (after the loop), not a put.
      if (load_ != nullptr) load_->directory_op(settled[i].where.home);
      overflow_finals[settled[i].where.home].push_back(notice_of(finals[i].key, answers[i]));
      overflow_of[settled[i].where.home].push_back(i);
      continue;
    }
    out[i] = put_final(finals[i].key, settled[i].where, answers[i], words[i]);
    issued[i] = out[i].ok();
  }
  // Overflow entries: one message per home (their answers, for later lookups; waiters are told
  // below by this rank, as for any entry). The messages of a pair of ranks arrive in order, so a
  // later request of this rank finds the entries final.
  for (const auto& [home, list] : overflow_finals) {
    Status s;
    if (home == rank_) {
      on_overflow_final(
          rank_, {reinterpret_cast<const std::byte*>(list.data()), list.size() * sizeof(Notice)});
    } else {
      s = send_in_pieces(home, Channel::kOverflowFinal, list);
    }
    for (std::size_t i : overflow_of[home]) out[i] = s;
  }
  // One flush completes every put, to every home.
  const Status flushed = ops_.flush_all();
  // Waiters are told even when the slot could not be written: they must not wait for nothing.
  // One message per waiting rank for all its keys.
  std::unordered_map<int, std::vector<Notice>> notices;
  for (std::size_t i = 0; i < finals.size(); ++i) {
    if (issued[i] && !flushed.ok()) out[i] = flushed;
    for (int to : settled[i].waiters) {
      notices[to].push_back(notice_of(finals[i].key, answers[i]));
    }
  }
  for (const auto& [to, list] : notices) notify_all(to, list);
  // Watched entries: their homes are told (also when the slot could not be written), one
  // message per home.
  std::unordered_map<int, std::vector<Notice>> homes;
  for (std::size_t i = 0; i < finals.size(); ++i) {
    if (finals[i].tell_home && held[i]) {
      homes[home_of(finals[i].key)].push_back(notice_of(finals[i].key, answers[i]));
    }
  }
  for (const auto& [home, list] : homes) {
    if (home == rank_) {
      on_watch_final(
          rank_, {reinterpret_cast<const std::byte*>(list.data()), list.size() * sizeof(Notice)});
    } else if (Status s = send_in_pieces(home, Channel::kWatchFinal, list); !s.ok()) {
      LARDER_LOG_LIMITED(kWarn, "cannot tell rank {} that watched entries are final: {}", home,
                         s.message());
    }
  }
}

Status ShardedDirectory::finish(const Final& f) {
  Status out;
  finish_many(std::span(&f, 1), std::span(&out, 1));
  return out;
}

Status ShardedDirectory::publish(const Key& key, const Payload& payload) {
  return finish(Final{key, payload, true});
}

Status ShardedDirectory::abandon(const Key& key) {
  return finish(Final{key, Payload{}, false});
}

}  // namespace larder
