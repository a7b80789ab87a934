// Directory: the job-wide table that says, for each key, who holds the bytes (or the metadata).
//
// Every entry goes EMPTY -> LOADING (claimed by exactly one rank) -> READY (payload published)
// or FAILED (the claimer could not load; everyone reads the PFS directly). READY entries never
// change for the life of the job (files are immutable), so callers may remember them.
//
// Implementations: LocalDirectory (one process, for tests and serial programs) and
// mpi::WindowDirectory (MPI one-sided windows, one shard per rank). All methods are thread-safe.
#ifndef LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/common/status.hpp"

namespace larder {

inline constexpr std::size_t kPayloadSize = 104;
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
    kLoading,  // another rank is loading it: wait()
    kFailed,   // the claimer gave up: read the PFS directly
  };
  Outcome outcome = Outcome::kFailed;
  Payload payload{};
};

class Directory {
 public:
  virtual ~Directory() = default;

  // Returns the entry if it is READY or FAILED; claims it for the caller if it is absent.
  // kNoSpace when the home shard has no free slot (the caller reads the PFS directly).
  virtual Result<Claim> acquire(const Key& key) = 0;
  // Waits (without spinning a core) until a LOADING entry is READY or FAILED, up to `timeout`
  // (then kTimeout).
  virtual Result<Claim> wait(const Key& key, std::chrono::milliseconds timeout) = 0;
  // The claimer publishes the payload; the entry becomes READY.
  virtual Status publish(const Key& key, const Payload& payload) = 0;
  // The claimer could not load the entry; it becomes FAILED.
  virtual Status abandon(const Key& key) = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_DIRECTORY_HPP_
