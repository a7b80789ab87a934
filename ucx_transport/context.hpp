// Context and Worker: the ucp context and this rank's one worker, each with its one owner.
// The worker is multi-threaded (application threads issue gets while the progress thread
// drives it) and supports wake-up (the progress thread sleeps on its event fd when idle).
#ifndef LARDER_UCX_TRANSPORT_CONTEXT_HPP_
#define LARDER_UCX_TRANSPORT_CONTEXT_HPP_

#include <ucp/api/ucp.h>

#include <memory>
#include <span>
#include <vector>

#include "runtime/common/status.hpp"

namespace larder::ucx {

struct ContextDeleter {
  void operator()(ucp_context* c) const noexcept { ucp_cleanup(c); }
};
using ContextPtr = std::unique_ptr<ucp_context, ContextDeleter>;

struct WorkerDeleter {
  void operator()(ucp_worker* w) const noexcept { ucp_worker_destroy(w); }
};
using WorkerPtr = std::unique_ptr<ucp_worker, WorkerDeleter>;

// A context with the RMA and wake-up features, configured from UCX_* variables.
Result<ContextPtr> create_context();
// A multi-threaded worker.
Result<WorkerPtr> create_worker(ucp_context_h context);
// The worker's address, as bytes to exchange.
Result<std::vector<std::byte>> worker_address(ucp_worker_h worker);
// Whether the context has a transport that does one-sided operations and atomics in the network
// adapter (InfiniBand/RoCE rc and dc, Cray ugni, gga), without the target's CPU. Read from the
// resources ucp_context_print_info lists (UCX has no query for it).
Result<bool> has_hardware_rma(ucp_context_h context);

// An active-message handler set on a worker (which must outlive it); its destruction unsets it,
// after which messages still arriving with its id are dropped.
class AmHandler {
 public:
  AmHandler() = default;
  static Result<AmHandler> set(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t callback,
                               void* arg);
  AmHandler(AmHandler&& other) noexcept : worker_(other.worker_), id_(other.id_) {
    other.worker_ = nullptr;
  }
  AmHandler& operator=(AmHandler&& other) noexcept;
  AmHandler(const AmHandler&) = delete;
  AmHandler& operator=(const AmHandler&) = delete;
  ~AmHandler() { unset(); }

 private:
  void unset() noexcept;
  ucp_worker_h worker_ = nullptr;
  unsigned id_ = 0;
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_CONTEXT_HPP_
