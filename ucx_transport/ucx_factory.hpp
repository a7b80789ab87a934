// The UCX data plane as the rest of Larder sees it: a Transport that also has progress to drive
// and a collective close. No UCX header is visible from here.
#ifndef LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_
#define LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_

#include <mpi.h>

#include <memory>

#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

class ClosableTransport : public Transport {
 public:
  // One pass of progress; true when it did work.
  virtual bool progress() = 0;
  // Collective: quiesces and releases every endpoint, registration and worker.
  virtual Status close() = 0;
};

// Collective over `comm`: creates the UCX context and worker, registers the arenas and
// exchanges worker addresses and remote keys with MPI_Allgather.
Result<std::unique_ptr<ClosableTransport>> make_ucx_transport(MPI_Comm comm,
                                                              const LocalTiers& tiers);

}  // namespace larder

#endif  // LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_
