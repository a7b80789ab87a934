// Messenger: small messages between the ranks of a job, for what one-sided operations cannot do:
// telling a rank that an entry it waits for is ready (so waiters never poll the directory), and
// asking another node for the copy of a chunk it holds (fan-out).
//
// Messages are a channel number and up to a few hundred bytes. send() may be called from any
// thread and does not wait for the receiver. Handlers run on the progress thread (or on the
// thread that drives progress during finalize): they must not block, and may send.
// Implementations: mpi::MpiMessenger (point-to-point on a private communicator) and, for one
// process, none (a LocalDirectory needs no messages).
#ifndef LARDER_RUNTIME_TRANSPORT_MESSENGER_HPP_
#define LARDER_RUNTIME_TRANSPORT_MESSENGER_HPP_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "runtime/common/status.hpp"

namespace larder {

enum class Channel : int {
  kWaitRegister = 1,   // "tell me when this entry is final" (to the rank loading it)
  kWaitNotify = 2,     // the entry is final: outcome and payload (to each registered waiter)
  kHolderRequest = 3,  // "make or find your node's copy of this chunk" (to a node leader)
  kHolderReply = 4,    // where that copy sits, or that there is none
};
inline constexpr int kChannelCount = 5;
inline constexpr std::size_t kMaxMessage = 512;

class Messenger {
 public:
  using Handler = std::function<void(int from, std::span<const std::byte> body)>;
  virtual ~Messenger() = default;
  // Registers the handler of `channel` (before the first message can arrive on it).
  virtual void on(Channel channel, Handler handler) = 0;
  // Queues `body` (at most kMaxMessage bytes) for rank `to`. Thread-safe, non-blocking.
  virtual Status send(int to, Channel channel, std::span<const std::byte> body) = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_MESSENGER_HPP_
