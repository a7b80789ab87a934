// WindowDirectory: the job-wide Directory in MPI one-sided windows (docs/protocol.md).
//
// Each rank hosts one shard: `slots` slots of 128 bytes in an MPI_Win_allocate window, kept in a
// passive-target epoch (MPI_Win_lock_all) for the whole job. A key's home rank is word % size;
// within the shard, linear probing from (word / size) % slots, at most kMaxProbe slots.
//
//   slot word 0  key word     0 = empty; set once by MPI_Compare_and_swap (the claim)
//   slot word 1  state word   EMPTY(0, claimed, loading) -> READY | FAILED, by MPI_Accumulate
//   slot word 2  key check    the other half of the 128-bit key, written before the state
//   words 3..15  payload      104 bytes, written with MPI_Put before the state, read with MPI_Get
//
// Publish is put(check, payload), flush, then the state word: a reader that sees READY (an atomic
// fetch) and then gets the payload cannot see it half-written. Entries never change after READY.
#ifndef LARDER_MPI_TRANSPORT_WINDOW_DIRECTORY_HPP_
#define LARDER_MPI_TRANSPORT_WINDOW_DIRECTORY_HPP_

#include <mpi.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "mpi_transport/window.hpp"
#include "runtime/directory/directory.hpp"

namespace larder::mpi {

class WindowDirectory final : public Directory {
 public:
  static constexpr int kMaxProbe = 64;
  static constexpr std::size_t kSlotBytes = 128;

  // Collective over `comm` (which must outlive the directory).
  static Result<std::unique_ptr<WindowDirectory>> create(MPI_Comm comm, std::uint32_t slots);
  ~WindowDirectory() override;

  Result<Claim> acquire(const Key& key) override;
  Result<Claim> wait(const Key& key, std::chrono::milliseconds timeout) override;
  Status publish(const Key& key, const Payload& payload) override;
  Status abandon(const Key& key) override;

  Status close();  // collective

 private:
  WindowDirectory(MPI_Comm comm, Window window, std::uint32_t slots);

  struct Where {
    int home;
    std::uint32_t slot;
  };
  int home_of(const Key& key) const noexcept;
  MPI_Aint slot_disp(std::uint32_t slot) const noexcept {
    return static_cast<MPI_Aint>(slot) * kSlotBytes;
  }
  // Reads the state of a slot whose key word matches; fills `claim` when final.
  Result<bool> read_final(const Where& where, const Key& key, Claim* claim);
  Status finish(const Key& key, std::uint64_t state, const Payload& payload);

  MPI_Comm comm_;
  int rank_;
  int size_;
  Window window_;
  const std::uint32_t slots_;
  // Where this rank claimed each key it is loading (publish/abandon need the slot).
  std::mutex claims_mu_;
  std::unordered_map<Key, Where, KeyHash> claims_;  // guarded by claims_mu_
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_WINDOW_DIRECTORY_HPP_
