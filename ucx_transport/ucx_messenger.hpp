// UcxMessenger: the Messenger over UCX active messages on Larder's own worker.
//
// One active-message id carries every channel (the channel is the body's first word; the header
// carries the sender's rank). Messages are small (at most kMaxMessage bytes), so UCX sends them
// eagerly and the receiving callback has the bytes at once. A send copies the message and
// returns at once.
//
// Handlers never run inside UCX: the receiving callback runs inside ucp_worker_progress, on
// whichever thread progresses the worker (the progress thread, or a thread waiting for its own
// request), holding the worker's lock. A handler that sent a reply or took a Larder lock there
// would invert the lock order of a thread that holds that lock and is issuing a UCX operation
// (a deadlock seen in 1 of 8 four-rank jobs). So the callback only queues a copy and wakes the
// progress thread through an eventfd; the progress thread runs the handlers after
// ucp_worker_progress has returned (the second ProgressSource of the fabric).
#ifndef LARDER_UCX_TRANSPORT_UCX_MESSENGER_HPP_
#define LARDER_UCX_TRANSPORT_UCX_MESSENGER_HPP_

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/common/unique_fd.hpp"
#include "runtime/transport/messenger.hpp"
#include "ucx_transport/context.hpp"

namespace larder::ucx {

class Fabric;

class UcxMessenger final : public Messenger {
 public:
  // Registers the active-message handlers on the fabric's worker.
  static Result<std::unique_ptr<UcxMessenger>> create(Fabric& fabric);
  UcxMessenger(const UcxMessenger&) = delete;
  UcxMessenger& operator=(const UcxMessenger&) = delete;
  ~UcxMessenger() override = default;

  void on(Channel channel, Handler handler) override;
  Status send(int to, Channel channel, std::span<const std::byte> body) override;
  std::uint64_t messages_sent() const noexcept override {
    return sent_.load(std::memory_order_relaxed);
  }

  // For the progress thread: runs the handlers of the messages received so far (true if any).
  bool dispatch();
  // Readable when messages wait for dispatch(); arm() clears it and returns false when some
  // already wait (the ProgressSource protocol).
  int event_fd() const noexcept { return wake_fd_.get(); }
  bool arm();

 private:
  struct Incoming {
    std::int32_t from = -1;
    std::int32_t channel = 0;
    std::vector<std::byte> body;
  };

  explicit UcxMessenger(Fabric& fabric) : fabric_(fabric) {}
  static ucs_status_t receive(void* arg, const void* header, std::size_t header_length, void* data,
                              std::size_t length, const ucp_am_recv_param_t* param);
  // Queues a message for dispatch() and wakes the progress thread.
  void enqueue(Incoming in);

  Fabric& fabric_;
  std::array<Handler, kChannelCount> handlers_;  // set before the session starts, then read-only
  UniqueFd wake_fd_;             // eventfd: written when the queue becomes non-empty
  std::mutex queue_mu_;          // a leaf: held for no call into UCX or a handler
  std::vector<Incoming> queue_;  // guarded by queue_mu_
  std::atomic<std::uint64_t> sent_{0};
  AmHandler handler_;  // last: unset first (messages arriving then are dropped)
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_UCX_MESSENGER_HPP_
