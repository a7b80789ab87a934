// RmaTransport: cross-node chunk reads with MPI_Get from windows over every rank's arenas
// (one window per tier) and from a dynamic window to which each rank attaches its segments
// (expose(); the descriptor is the segment's address). The fallback data path, and the
// reference the UCX path is tested against. Thread-safe (MPI_THREAD_MULTIPLE).
#ifndef LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
#define LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_

#include <mpi.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "mpi_transport/window.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/transport.hpp"

namespace larder::mpi {

class RmaTransport final : public Transport {
 public:
  // Collective over `comm`; the arenas must stay mapped until close().
  static Result<std::unique_ptr<RmaTransport>> create(MPI_Comm comm, const LocalTiers& tiers);

  const char* name() const noexcept override { return "mpi"; }
  Status get(const GetOp& op) override;
  Result<std::vector<std::byte>> expose(std::uint32_t segment,
                                        std::span<std::byte> memory) override;
  bool knows(int owner, std::uint32_t segment) override;
  Status learn(int owner, std::uint32_t segment, std::span<const std::byte> descriptor) override;
  Status close();  // collective

 private:
  RmaTransport() = default;
  std::array<Window, kTierCount> windows_;
  std::mutex segments_mu_;
  Window segments_;  // dynamic; attach() under segments_mu_
  // What this rank learned of other ranks' segments: (owner, segment) -> (address, size).
  std::map<std::pair<int, std::uint32_t>, std::pair<MPI_Aint, std::uint64_t>>
      known_;  // guarded by segments_mu_
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
