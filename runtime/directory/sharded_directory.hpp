// ShardedDirectory: the job-wide Directory, one shard per rank, reached with one-sided operations
// (docs/protocol.md). The operations come from a ShardOps: MPI windows (mpi_transport) or UCX
// remote memory (ucx_transport); the messages that wake waiters from a Messenger.
//
// Each rank hosts one shard of `slots` slots of 144 bytes. A key's home rank is key.home % size;
// within the shard, linear probing from (word / size) % slots, at most kMaxProbe slots.
//
//   word 0       key word     0 = empty; set once by MPI_Compare_and_swap (the claim)
//   word 1       state word   state (bits 0-7: 0 claimed, 1 loading, 2 ready, 3 failed),
//                             claimer rank (bits 8-31), checksum of words 2 and 4-17 (32-63)
//   word 2       key check    the other half of the 128-bit key
//   word 3       tickets      readers so far (MPI_Fetch_and_op SUM: fan-out positions)
//   words 4..17  payload      112 bytes
//
// acquire() is one round trip: the claim (compare-and-swap), a get of the whole slot and the
// ticket, issued together and completed by one flush. A reader trusts a READY slot only when
// its checksum matches, so a get that overlaps the publisher's writes is retried, never used.
// The claimer records itself (state 1, its rank, the check) right after the claim; a reader that
// finds state 0 retries after a few microseconds. Waiters for a LOADING entry register with the
// claimer through the Messenger and are told when it is final: no polling.
#ifndef LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_

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
  static constexpr int kMaxProbe = 64;
  static constexpr std::size_t kSlotWords = 18;
  static constexpr std::size_t kSlotBytes = kSlotWords * 8;

  // The shards are `ops`'s, zeroed and `slots` slots each on every rank before the first call.
  // `messenger` carries the waits; `load` (may be null) counts the operations sent to each home.
  // The directory registers its message handlers; all three must outlive it.
  ShardedDirectory(ShardOps& ops, std::uint32_t slots, Messenger& messenger, PeerLoad* load);
  ~ShardedDirectory() override;

  Result<Claim> acquire(const Key& key, unsigned flags = kClaimIt) override;
  void acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) override;
  Result<Claim> wait(const Key& key, const Claim& loading,
                     std::chrono::milliseconds timeout) override;
  Status publish(const Key& key, const Payload& payload) override;
  Status abandon(const Key& key) override;

 private:
  struct Where {
    int home;
    std::uint32_t slot;
  };
  // One key's operations in flight within a batch.
  struct Probe {
    Key key;
    unsigned flags;
    int probe = 0;  // slots tried so far
    Where where{};
    std::uint64_t expected = 0;  // compare value
    std::uint64_t old = 0;       // compare-and-swap result
    std::uint64_t ticket = 0;
    std::uint64_t slot[kSlotWords] = {};
  };
  // A key that this rank claimed: where, and who waits for it.
  struct Loading {
    Where where;
    std::vector<int> waiters;
  };
  // What the waiting threads of this rank (for one key) receive.
  struct Waiter {
    bool done = false;
    Claim claim;
    int threads = 0;
  };

  int home_of(const Key& key) const noexcept;
  Where where(const Key& key, int probe) const noexcept;
  static std::uint64_t disp(std::uint32_t slot) noexcept {
    return static_cast<std::uint64_t>(slot) * kSlotBytes;
  }
  // Issues one probe's operations (no flush).
  Status issue(Probe& p);
  // Reads a completed probe: a final answer, or nullopt to probe the next slot.
  std::optional<Result<Claim>> decide(Probe& p);
  Status record_claim(const Key& key, const Where& where);
  Status finish(const Key& key, std::uint64_t state, const Payload& payload);
  void on_register(int from, std::span<const std::byte> body);
  void on_notify(int from, std::span<const std::byte> body);
  void notify(int to, const Key& key, const Claim& claim);

  ShardOps& ops_;
  const int rank_;
  const int size_;
  const std::uint32_t slots_;
  Messenger& messenger_;
  PeerLoad* load_;

  std::mutex mu_;
  std::unordered_map<Key, Loading, KeyHash> loading_;  // guarded by mu_: this rank's claims
  // Recently finished claims, for a registration that arrives after the notification went out;
  // a registration for a key this rank knows nothing of (finished long ago) is answered "look
  // again", and the waiter's next lookup finds the entry final.
  std::unordered_map<Key, Claim, KeyHash> finished_;  // guarded by mu_
  std::list<Key> finished_order_;                     // guarded by mu_
  std::condition_variable woken_;
  std::unordered_map<Key, std::shared_ptr<Waiter>, KeyHash> waiting_;  // guarded by mu_
  // Registers (once per key and rank) and waits for the claimer's notice, up to `deadline`.
  Result<Claim> await_notice(const Key& key, int claimer,
                             std::chrono::steady_clock::time_point deadline);
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_SHARDED_DIRECTORY_HPP_
