// RmaTransport: cross-node chunk reads with MPI_Get from windows over every rank's arenas
// (one window per tier). The fallback data path, and the reference the UCX path is tested
// against. Thread-safe (MPI_THREAD_MULTIPLE).
#ifndef LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
#define LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_

#include <mpi.h>

#include <array>
#include <memory>

#include "mpi_transport/window.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/transport.hpp"

namespace larder::mpi {

class RmaTransport final : public Transport {
 public:
  // Collective over `comm`; the arenas must stay mapped until close().
  static Result<std::unique_ptr<RmaTransport>> create(MPI_Comm comm, const LocalTiers& tiers);

  const char* name() const noexcept override { return "mpi"; }
  Status get(int owner, Tier tier, std::uint64_t offset, std::span<std::byte> into) override;
  Status close();  // collective

 private:
  RmaTransport() = default;
  std::array<Window, kTierCount> windows_;
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_RMA_TRANSPORT_HPP_
