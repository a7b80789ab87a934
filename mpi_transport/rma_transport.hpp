// RmaTransport: cross-node chunk reads with MPI_Get from windows over every rank's arenas
// (one window per tier) and from a dynamic window to which each rank attaches its segments
// (expose(); the descriptor is the segment's address). The fallback data path, and the
// reference the UCX path is tested against. Thread-safe (MPI_THREAD_MULTIPLE).
//
// Gets from the arenas are request-based (MPI_Rget) and waited for by testing, with short pauses
// once nothing completes: a batch is one round trip, and a waiting reader leaves the cores to the
// ranks whose MPI must answer the gets (get_many). A get whose hash is wanted (GetOp::hashed) is
// issued in pieces and hashed piece by piece as they arrive. Gets from segments are MPI_Get,
// flushed per owner once the batch is issued (their hash is left to the caller).
//
// A get of a chunk on its holder's disk tier is preceded by the holder's check of that chunk
// (HolderChecks, over the job's Messenger): MPI serves the get without the holder's code, and
// pages it had the kernel load from the device would otherwise be in the holder's memory
// unchecked.
#ifndef LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
#define LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "mpi_transport/window.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/holder_checks.hpp"
#include "runtime/transport/transport.hpp"

namespace larder::mpi {

class RmaTransport final : public Transport {
 public:
  // Collective over `comm`; the arenas must stay mapped until close(). With `messenger`, gets of
  // disk-tier chunks ask their holder to check them first (answers awaited up to `timeout`);
  // without, they are read unchecked on the holder (tests of the data path alone).
  static Result<std::unique_ptr<RmaTransport>> create(
      MPI_Comm comm, const LocalTiers& tiers, Messenger* messenger = nullptr,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  const char* name() const noexcept override { return "mpi"; }
  Status get(const GetOp& op) override;
  void get_many(std::span<const GetOp> ops, std::span<Status> out) override;
  Result<std::vector<std::byte>> expose(std::uint32_t segment,
                                        std::span<std::byte> memory) override;
  bool knows(int owner, std::uint32_t segment) override;
  Status learn(int owner, std::uint32_t segment, std::span<const std::byte> descriptor) override;
  // The holder's check of a disk-tier chunk a reader asks about (HolderChecks).
  void set_serve_check(const ServeCheck& check) override;
  Status close();  // collective
  // Bytes hashed as they arrived, for gets that wanted their hash (GetOp::hashed; tests).
  std::uint64_t bytes_hashed() const noexcept {
    return bytes_hashed_.load(std::memory_order_relaxed);
  }

 private:
  RmaTransport() = default;
  // MPI_Rget of op's bytes in pieces of at most `piece` bytes (and 1 GiB), the requests appended
  // to `requests` in order; from the dynamic window (segments), MPI_Get, and op.owner added to
  // `flush_segments_of`.
  Status issue(const GetOp& op, std::size_t piece, std::vector<MPI_Request>& requests,
               std::vector<int>& flush_segments_of);

  // How long a wait tests its requests without pause, then yielding the core between tests, and
  // the pause after that.
  static constexpr auto kSpin = std::chrono::microseconds(20);
  static constexpr auto kYield = std::chrono::microseconds(2000);
  static constexpr auto kPause = std::chrono::microseconds(20);
  // Wakes the owners of gets (their MPI serves them in software) and is polled while gets wait.
  Messenger* messenger_ = nullptr;
  std::atomic<std::uint64_t> bytes_hashed_{0};
  std::array<Window, kTierCount> windows_;
  std::unique_ptr<HolderChecks> holder_checks_;  // with a messenger
  std::mutex segments_mu_;
  Window segments_;  // dynamic; attach() under segments_mu_
  // What this rank learned of other ranks' segments: (owner, segment) -> (address, size).
  std::map<std::pair<int, std::uint32_t>, std::pair<MPI_Aint, std::uint64_t>>
      known_;  // guarded by segments_mu_
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
