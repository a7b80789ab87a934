// ShardedDirectory: the job-wide Directory, one shard per rank, reached with one-sided operations
// (docs/protocol.md). The operations come from a ShardOps: MPI windows (mpi_transport) or UCX
// remote memory (ucx_transport); the messages that wake waiters from a Messenger.
//
// Each rank hosts one shard of `slots` slots of 144 bytes (and kWindow - 1 more at its end, so a
// window never wraps). A key's home rank is key.home % size; within the shard, a key lives in the
// kWindow slots from (word / size) % slots (its window: linear probing, read with one get), or,
// when every slot of its window holds another key, in its home's overflow table: memory of the
// home, reached with messages and served by the home's progress thread, that grows with what the
// job puts in it up to `overflow_entries` entries per rank. The shard never moves and never
// grows: growth costs the ranks that look keys up nothing; a key in the overflow costs one
// message to its home and one back instead of a one-sided round trip (docs/protocol.md,
// "Growth: the overflow").
//
//   word 0       claim word   0 = empty; else the key word's low 40 bits and, above them, the
//                             claimer's rank + 1; set once by compare-and-swap (the claim)
//   word 1       tickets      readers so far (fetch-and-add: fan-out positions)
//   word 2       state word   state (bits 0-7: 0 loading, 2 ready, 3 failed) and a 56-bit
//                             checksum of words 3-17 (bits 8-63)
//   word 3       key check    the other half of the 128-bit key
//   words 4..17  payload      112 bytes
//
// Costs (one round trip = one flush of operations issued together):
//   acquire()    one round trip: the claim (compare-and-swap), a get of the whole slot and the
//                ticket, issued together. A claim is complete when it returns: the claim word
//                names the claimer, so nothing else is written until the entry is final.
//   publish()    one round trip: one put of words 2-17 (state, check, payload). Readers trust a
//                final slot only when its checksum matches, so a get that overlapped the put is
//                retried, never used.
//   wait()       a LOADING entry names its claimer: the waiter registers with it through the
//                Messenger (one message) and is told when it is final (one message). No polling.
//   acquire_many() one round trip for any number of keys (per probe step: a key displaced within
//   its
//                window costs one more, to the slot the first get showed; a key in the overflow
//                one message each way per home for the batch).
//   a bound     a key that finds its window full and its home's overflow at its bound is refused
//                (kNoSpace: the caller reads the PFS) after its window's round trips and one
//                message each way: a constant, never a probe storm.
//   watch()      for an entry nobody has claimed yet (a file not produced yet): the watcher
//                registers with the key's home (one message); the claimer, when it finishes the
//                entry with Final::tell_home, tells the home (one message per home for all its
//                keys), and the home tells each watcher (one message). The home keeps the last
//                kWatchedKept final answers for registrations that arrive after them.
//
// Two keys whose words share the low 40 bits and probe the same slot cannot be told apart while
// the first is loading: the second waits for the wrong claimer, which answers "look again",
// until its timeout, then reads the PFS (the odds: about 2^-40 per pair of keys in the same
// probe window). Final entries are told apart by the full 128-bit key.
#ifndef LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/directory/directory.hpp"
#include "runtime/directory/shard_ops.hpp"
#include "runtime/stats/peer_load.hpp"
#include "runtime/transport/messenger.hpp"

namespace larder {

class ShardedDirectory final : public Directory {
 public:
  static constexpr int kWindow = 16;
  static constexpr int kFirstGet = 2;  // slots a key's first round reads
  static constexpr std::size_t kSlotWords = 18;
  static constexpr std::size_t kSlotBytes = kSlotWords * 8;
  // The bytes of a shard of `slots` slots (the window's spare slots at its end included).
  static constexpr std::size_t shard_bytes(std::uint32_t slots) noexcept {
    return (static_cast<std::size_t>(slots) + kWindow - 1) * kSlotBytes;
  }

  struct Options {
    // Entries this rank's overflow table holds at most (beyond them: kNoSpace).
    std::uint64_t overflow_entries = std::uint64_t{1} << 25;
    // How long an overflow request waits for its home's answer (then kTimeout).
    std::chrono::milliseconds timeout{30000};
  };

  // The shards are `ops`'s, zeroed and shard_bytes(slots) each on every rank before the first
  // call. `messenger` carries the waits and the overflow; `load` (may be null) counts the
  // operations sent to each home. The directory registers its message handlers; all three must
  // outlive it.
  ShardedDirectory(ShardOps& ops, std::uint32_t slots, Messenger& messenger, PeerLoad* load,
                   Options options);
  ShardedDirectory(ShardOps& ops, std::uint32_t slots, Messenger& messenger, PeerLoad* load)
      : ShardedDirectory(ops, slots, messenger, load, Options{}) {}
  ShardedDirectory(const ShardedDirectory&) = delete;
  ShardedDirectory& operator=(const ShardedDirectory&) = delete;
  ~ShardedDirectory() override;

  Result<Claim> acquire(const Key& key, unsigned flags = kClaimIt) override;
  void acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) override;
  Result<Claim> wait(const Key& key, const Claim& loading,
                     std::chrono::milliseconds timeout) override;
  void wait_many(std::span<const Key> keys, std::span<const Claim> loading,
                 std::chrono::milliseconds timeout, std::span<Result<Claim>> out) override;
  Status publish(const Key& key, const Payload& payload) override;
  Status abandon(const Key& key) override;
  void finish_many(std::span<const Final> finals, std::span<Status> out) override;
  Result<Claim> watch(const Key& key, std::chrono::milliseconds timeout) override;

  // Entries this rank's overflow table holds; overflow requests this rank sent (one per home and
  // batch, however many keys); lookups refused because a window and its overflow were full.
  std::uint64_t overflow_entries() const;
  std::uint64_t overflow_requests() const noexcept { return overflow_requests_.load(); }
  std::uint64_t refused() const noexcept { return refused_.load(); }

 private:
  static constexpr std::uint32_t kOverflow = 0xffffffffu;  // Where::slot of an overflow entry
  struct Where {
    int home;
    std::uint32_t slot;
  };
  // One key's operations in flight within a batch.
  struct Probe {
    Key key;
    unsigned flags;
    int offset = 0;         // the slot of the window this round targets
    int rounds = 0;         // rounds issued
    int got = 0;            // slots this round reads (from offset)
    bool scan = false;      // this round only reads (the rest of the window)
    bool overflow = false;  // the window is full of other keys: ask the home's overflow
    Where where{};
    std::uint64_t desired = 0;   // the claim word this rank writes
    std::uint64_t expected = 0;  // compare value
    std::uint64_t old = 0;       // compare-and-swap result
    std::uint64_t ticket = 0;
    // What this round read: `got` slots from the targeted one.
    std::array<std::uint64_t, kSlotWords * kWindow> slots{};
  };
  // An overflow request's key (on the wire) and its answer.
  struct Ask {
    Key key;
    std::uint32_t flags = 0;
    std::uint32_t index = 0;  // the requester's, echoed in the answer
  };
  struct Answer {
    std::uint64_t request = 0;
    std::uint32_t index = 0;
    std::int32_t outcome = 0;  // Claim::Outcome, or kRefused
    std::int32_t claimer = -1;
    std::uint32_t unused = 0;
    std::uint64_t ticket = 0;
    Payload payload{};
  };
  static constexpr std::int32_t kRefused = -1;
  // An overflow entry at its home.
  struct Entry {
    std::int32_t outcome = 0;  // Claim::Outcome: kLoading, kReady or kFailed
    std::int32_t claimer = -1;
    std::uint64_t tickets = 0;
    Payload payload{};
  };
  // A batch's overflow requests this rank waits for.
  struct Call {
    std::size_t expected = 0;
    std::vector<Answer> answers;
  };
  // A key that this rank claimed, or is claiming (a claim of this rank is registered here
  // before its compare-and-swap goes out, so a waiter's registration always finds it).
  struct Loading {
    Where where{};
    bool claimed = false;
    int claiming = 0;  // this rank's acquires of the key in flight
    std::vector<int> waiters;
  };
  // What the waiting threads of this rank (for one key) receive.
  struct Waiter {
    bool done = false;
    Claim claim;
    int threads = 0;
  };

  int home_of(const Key& key) const noexcept;
  Where where(const Key& key, int offset) const noexcept;
  static std::uint64_t disp(std::uint32_t slot) noexcept {
    return static_cast<std::uint64_t>(slot) * kSlotBytes;
  }
  // Issues one probe's operations (no flush).
  Status issue(Probe& p);
  // Reads a completed probe: a final answer, or nullopt to look again (at the slot of the window
  // it now targets, or in the overflow).
  std::optional<Result<Claim>> decide(Probe& p);
  // decide() past the targeted slot: the slots of the get from `from` on.
  std::optional<Result<Claim>> look_on(Probe& p, int from);
  // Asks the homes' overflow tables for the probes `which` (one request per home), up to the
  // timeout; settles out[] and the claims in flight.
  void ask_overflow(std::vector<Probe>& probes, const std::vector<std::size_t>& which,
                    std::span<Result<Claim>> out);
  // At a home: applies one request to the overflow table.
  Answer apply_overflow(int from, const Ask& ask);
  void on_overflow_ask(int from, std::span<const std::byte> body);
  void on_overflow_answer(int from, std::span<const std::byte> body);
  void on_overflow_final(int from, std::span<const std::byte> body);
  // Registers (claiming) or unregisters a claim in flight; `won` records where it landed.
  void begin_claim(const Key& key);
  void end_claim(const Key& key, const Where* won);
  // The words publish() writes: state, check, payload (see the layout above).
  using FinalWords = std::array<std::uint64_t, kSlotWords - 2>;
  // Takes this rank's claim of `key` off the table of loads (remembering `final` for late
  // registrations); false if this rank holds no such claim.
  bool settle(const Key& key, const Claim& final, Loading* out);
  // Issues the put of the final words (`words` must live until the flush).
  Status put_final(const Key& key, const Where& where, const Claim& final, FinalWords& words);
  Status finish(const Final& f);
  // A notification on the wire: the key, the outcome, the claimer and the payload.
  struct Notice {
    Key key;
    std::int32_t outcome = 0;
    std::int32_t claimer = -1;
    Payload payload{};
  };
  static Notice notice_of(const Key& key, const Claim& claim);
  // Handlers of the channels: bodies are arrays of keys (registrations) and of notices.
  void on_register(int from, std::span<const std::byte> body);
  void on_notify(int from, std::span<const std::byte> body);
  // At a home: a watcher registers (keys), a claimer says watched entries are final (notices).
  void on_watch_register(int from, std::span<const std::byte> body);
  void on_watch_final(int from, std::span<const std::byte> body);
  // Sends `notices` to rank `to` (this rank: delivered at once), as few messages as fit.
  void notify_all(int to, const std::vector<Notice>& notices);
  template <class T>
  Status send_in_pieces(int to, Channel channel, const std::vector<T>& items);

  ShardOps& ops_;
  const int rank_;
  const int size_;
  const std::uint32_t slots_;
  Messenger& messenger_;
  PeerLoad* load_;
  const Options options_;

  // At this rank as a home: the overflow table (its own lock, a leaf: nothing is sent under it).
  mutable std::mutex overflow_mu_;
  std::unordered_map<Key, Entry, KeyHash> overflow_;  // guarded by overflow_mu_
  // This rank's overflow requests in flight, by id (guarded by mu_), and their wake-up.
  std::unordered_map<std::uint64_t, std::shared_ptr<Call>> calls_;
  std::uint64_t next_call_ = 1;  // guarded by mu_
  std::condition_variable answered_;
  std::atomic<std::uint64_t> overflow_requests_{0};
  std::atomic<std::uint64_t> refused_{0};

  std::mutex mu_;
  std::unordered_map<Key, Loading, KeyHash> loading_;  // guarded by mu_: this rank's claims
  // Recently finished claims, for a registration that arrives after the notification went out;
  // a registration for a key this rank knows nothing of (finished long ago) is answered "look
  // again", and the waiter's next lookup finds the entry final.
  std::unordered_map<Key, Claim, KeyHash> finished_;  // guarded by mu_
  std::list<Key> finished_order_;                     // guarded by mu_
  std::condition_variable woken_;
  std::unordered_map<Key, std::shared_ptr<Waiter>, KeyHash> waiting_;  // guarded by mu_
  // At this rank as a home: the ranks watching each key, and the watched keys known final.
  static constexpr std::size_t kWatchedKept = 1u << 16;
  std::unordered_map<Key, std::vector<int>, KeyHash> watchers_;  // guarded by mu_
  std::unordered_map<Key, Claim, KeyHash> watched_final_;        // guarded by mu_
  std::list<Key> watched_order_;                                 // guarded by mu_
  // Registers (once per key and rank; one message per target: claimers[i] on `channel`) and
  // waits for the notices, up to `deadline`.
  void await_notices(std::span<const Key> keys, std::span<const int> claimers,
                     std::chrono::steady_clock::time_point deadline, std::span<Result<Claim>> out,
                     Channel channel = Channel::kWaitRegister);
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_
