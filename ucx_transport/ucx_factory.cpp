#include "ucx_transport/ucx_factory.hpp"

#include "ucx_transport/fabric.hpp"

namespace larder {

Result<std::unique_ptr<ClosableTransport>> make_ucx_transport(MPI_Comm comm,
                                                              const LocalTiers& tiers,
                                                              const UcxOptions& options,
                                                              std::size_t shard_bytes) {
  auto fabric = ucx::Fabric::create(comm, tiers, options, shard_bytes);
  if (!fabric.ok()) return fabric.status();
  return std::unique_ptr<ClosableTransport>(std::move(*fabric));
}

}  // namespace larder
