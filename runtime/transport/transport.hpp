// Transport: how a rank copies bytes out of another node's arena (cross-node hits).
//
// Implemented by mpi::RmaTransport (MPI_Get from windows over the arenas) and ucx::UcxTransport
// (ucp_get_nbx from registered arenas). Thread-safe; blocking until the bytes have arrived or
// the transfer failed. A failure is a Status, never an abort: the caller reads the PFS instead.
#ifndef LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_
#define LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/common/status.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const noexcept = 0;
  // Copies into.size() bytes at `offset` of rank `owner`'s arena `tier` into `into`.
  virtual Status get(int owner, Tier tier, std::uint64_t offset, std::span<std::byte> into) = 0;
  // Many gets at once (from any owners): out[i] is the outcome of ops[i]. Transports that can
  // overlap them do (UCX: every get is issued, then all are waited for).
  struct GetOp {
    int owner = -1;
    Tier tier = Tier::kMem;
    std::uint64_t offset = 0;
    std::span<std::byte> into;
  };
  virtual void get_many(std::span<const GetOp> ops, std::span<Status> out) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      out[i] = get(ops[i].owner, ops[i].tier, ops[i].offset, ops[i].into);
    }
  }
  // Finalize has begun on this rank: peers closing their side from now on is the job ending in
  // order, not a failure to report.
  virtual void begin_close() noexcept {}
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_TRANSPORT_HPP_
