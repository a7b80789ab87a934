// Messenger: small messages between the ranks of a job, for what one-sided operations cannot do:
// telling a rank that the entries it waits for are final (so waiters never poll the directory).
//
// Messages are a channel number and up to kMaxMessage bytes. send() may be called from any
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
  kWaitRegister = 1,    // "tell me when these entries are final" (to the rank loading them)
  kWaitNotify = 2,      // entries are final: outcome and payload (to each registered waiter)
  kWatchRegister = 3,   // "tell me when these entries are final" (to their home: nobody claimed)
  kWatchFinal = 4,      // these watched entries are final (claimer to home): the notices
  kShardRequest = 5,    // directory operations on the receiver's shard (MessageShards)
  kShardReply = 6,      // their results
  kReadRequest = 7,     // "send me these pieces of your memory" (MessageReads; replies are UCX's)
  kOverflowAsk = 8,     // lookups and claims of keys in the home's overflow table (to the home)
  kOverflowAnswer = 9,  // their answers (to the requester)
  kOverflowFinal = 10,  // overflow entries this rank claimed are final (to their home)
  kHolderCheck = 11,    // "check these chunks of your disk tier" (HolderChecks, before gets)
  kHolderVerdict = 12,  // whether each passed (to the reader)
  // "gets of your memory are coming": no body, no handler; receiving it is work, so the target's
  // progress thread polls hot while MPI serves the gets in software (RmaTransport)
  kWake = 13,
};
inline constexpr int kChannelCount = 14;
inline constexpr std::size_t kMaxMessage = 4096;

class Messenger {
 public:
  using Handler = std::function<void(int from, std::span<const std::byte> body)>;
  virtual ~Messenger() = default;
  // Registers the handler of `channel` (before the first message can arrive on it).
  virtual void on(Channel channel, Handler handler) = 0;
  // Queues `body` (at most kMaxMessage bytes) for rank `to`. Thread-safe, non-blocking.
  virtual Status send(int to, Channel channel, std::span<const std::byte> body) = 0;
  // Messages this rank has sent to other ranks (stats: transport.messages).
  virtual std::uint64_t messages_sent() const noexcept { return 0; }
  // For a thread that waits for an answer: drives the messenger's progress once (receives and
  // handles what has arrived, answering other ranks' requests too). True when it did work. A
  // messenger whose progress thread wakes on events (UCX's) needs no help: false, nothing done.
  virtual bool poll_waiting() { return false; }
  // Whether poll_waiting() does anything (a waiter that gets false from it then sleeps at once).
  virtual bool poll_helps() const noexcept { return false; }
  // Before one-sided operations on rank `to`'s memory that its transport serves in software:
  // wakes its progress thread (MPI: mpi::MpiMessenger::wake). Nothing where operations need no
  // target (RDMA) or the target wakes on its own events (UCX).
  virtual void wake(int /*to*/) {}
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_MESSENGER_HPP_
