// Directory: the job-wide table that says, for each key, who holds the bytes (or the metadata).
//
// Every entry goes EMPTY -> LOADING (claimed by exactly one rank) -> READY (payload published)
// or FAILED (the claimer could not load; everyone reads the PFS directly). READY entries never
// change for the life of the job, so callers may remember them. docs/protocol.md has the whole
// protocol; its costs: a lookup of a READY entry is one round trip to the entry's home rank, a
// claim is the same round trip, many keys are looked up with one round trip per home rank, and a
// waiter for a LOADING entry sends one message to the loader and receives one.
//
// Implementations: LocalDirectory (one process, for tests and serial programs) and
// ShardedDirectory (one shard per rank, over MPI windows or UCX memory). All methods are
// thread-safe.
#ifndef LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/common/status.hpp"

namespace larder {

inline constexpr std::size_t kPayloadSize = 112;
using Payload = std::array<std::byte, kPayloadSize>;

template <class T>
Payload pack(const T& value) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kPayloadSize);
  Payload p{};
  std::memcpy(p.data(), &value, sizeof(T));
  return p;
}

template <class T>
T unpack(const Payload& p) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kPayloadSize);
  T value;
  std::memcpy(&value, p.data(), sizeof(T));
  return value;
}

struct Claim {
  enum class Outcome {
    kReady,    // payload is valid
    kClaimed,  // the caller now owns the entry: load, then publish() or abandon()
    kLoading,  // another rank (claimer) is loading it: wait()
    kFailed,   // the claimer gave up: read the PFS directly
    kAbsent,   // nobody has it and the caller did not ask to claim it
  };
  Outcome outcome = Outcome::kFailed;
  Payload payload{};
  int claimer = -1;          // kLoading, kReady, kFailed: the rank that claimed the entry
  std::uint64_t ticket = 0;  // with kTicket: how many readers took a ticket before this one
};

// What acquire() does besides reading the entry.
enum Acquire : unsigned {
  kLookOnly = 0,  // report kAbsent for an empty entry
  kClaimIt = 1u,  // claim an empty entry (kClaimed)
  kTicket = 2u,   // also take a reader ticket (fan-out: the caller's place among the readers)
};

struct Lookup {
  Key key;
  unsigned flags = kClaimIt;
};

class Directory {
 public:
  virtual ~Directory() = default;

  // Reads the entry of `key` in one round trip; claims it for the caller when it is empty and
  // `flags` has kClaimIt. kNoSpace when the home shard has no free slot (read the PFS directly).
  virtual Result<Claim> acquire(const Key& key, unsigned flags = kClaimIt) = 0;
  // acquire() for many keys, one round trip per home rank; out[i] answers lookups[i].
  virtual void acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) {
    for (std::size_t i = 0; i < lookups.size(); ++i) {
      out[i] = acquire(lookups[i].key, lookups[i].flags);
    }
  }
  // Waits (without polling the directory) until the entry `loading` reported is READY or FAILED,
  // up to `timeout` (then kTimeout).
  virtual Result<Claim> wait(const Key& key, const Claim& loading,
                             std::chrono::milliseconds timeout) = 0;
  // wait() for many entries at once (registrations to one claimer share a message).
  virtual void wait_many(std::span<const Key> keys, std::span<const Claim> loading,
                         std::chrono::milliseconds timeout, std::span<Result<Claim>> out) {
    for (std::size_t i = 0; i < keys.size(); ++i) out[i] = wait(keys[i], loading[i], timeout);
  }
  // The claimer publishes the payload; the entry becomes READY and its waiters are told.
  virtual Status publish(const Key& key, const Payload& payload) = 0;
  // The claimer could not load the entry; it becomes FAILED and its waiters are told.
  virtual Status abandon(const Key& key) = 0;
  // publish() (ready) or abandon() (not ready) for many claimed keys: one round trip in all.
  // `tell_home`: the key may have watchers (watch()); its home is told it is final (one message).
  struct Final {
    Key key;
    Payload payload{};
    bool ready = true;
    bool tell_home = false;
  };
  virtual void finish_many(std::span<const Final> finals, std::span<Status> out) {
    for (std::size_t i = 0; i < finals.size(); ++i) {
      out[i] = finals[i].ready ? publish(finals[i].key, finals[i].payload) : abandon(finals[i].key);
    }
  }
  // Waits until the entry of `key` is final (READY or FAILED), whoever claims it, even when
  // nobody has yet (a consumer of a file not produced yet): registered with the key's home, which
  // the claimer tells when it finishes the entry with Final::tell_home (one message each way, no
  // polling). kTimeout after `timeout`.
  virtual Result<Claim> watch(const Key& key, std::chrono::milliseconds timeout) = 0;
  // publish() and abandon() of a watched key (Final::tell_home).
  Status publish_watched(const Key& key, const Payload& payload) {
    const Final f{key, payload, true, true};
    Status out;
    finish_many(std::span(&f, 1), std::span(&out, 1));
    return out;
  }
  Status abandon_watched(const Key& key) {
    const Final f{key, Payload{}, false, true};
    Status out;
    finish_many(std::span(&f, 1), std::span(&out, 1));
    return out;
  }
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_
