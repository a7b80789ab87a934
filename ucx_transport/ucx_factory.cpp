#include "ucx_transport/ucx_factory.hpp"

#include "ucx_transport/fabric.hpp"

namespace larder {

Result<std::unique_ptr<ClosableTransport>> make_ucx_transport(MPI_Comm comm,
                                                              const LocalTiers& tiers,
                                                              const UcxOptions& options) {
  auto fabric = ucx::Fabric::create(comm, tiers, options);
  if (!fabric.ok()) return fabric.status();
  return std::unique_ptr<ClosableTransport>(std::move(*fabric));
}

}  // namespace larder
