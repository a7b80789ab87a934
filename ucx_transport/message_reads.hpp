// MessageReads: remote chunk reads as messages, where UCX does gets in software
// (LARDER_REMOTE_READS; docs/protocol.md, "Remote reads as messages").
//
// Without a hardware one-sided transport (TCP here, and on Slingshot clusters, where UCX has no
// native transport), UCX emulates a get: the holder's worker answers it in 8 KiB pieces, each
// copied into a bounce buffer, sent with its own system call and copied again at the reader
// (0.4-1.2 GB/s over TCP loopback here). A reply that is an active message instead is sent from
// the holder's memory in 64 KiB pieces (eager zero-copy) or, above UCX's rendezvous threshold,
// received straight into the reader's buffer: ucx_perftest's active messages reach 2.0 GB/s at 64
// KiB and 4.5 GB/s at 1 MiB on the same loopback.
//
// A reader sends one request message per holder for all of a batch's pieces (the Messenger,
// channel kReadRequest); the holder's progress thread answers each piece with one active message
// (header: request id and error) whose data is the piece, straight from its arena or segment.
// The reply's callback copies an eager reply into the reader's buffer, or starts the rendezvous
// receive into it.
//
// Failures: a holder the fabric reports failed fails the pieces it owes within kSlice; a holder
// that has not answered within the timeout is given up (Fabric::give_up: its endpoint is force-
// closed, which also ends any transfer still arriving from it). A reply that arrives after its
// reader stopped waiting is dropped. A piece whose destination is not memory this rank serves
// (a reader's own buffer) is received into a buffer of its own and copied once complete, so that
// no late transfer can write into memory the caller got back; a destination in this rank's
// arenas or segments is received into directly (its range is never reused: an abandoned range
// can only receive the same chunk's bytes). Those buffers are reused (BouncePool) once no
// transfer can reach them.
//
// Hashes (Transport::GetOp::hashed): each piece is hashed by the thread that received it, after
// it is marked done, in order (HashFeed), while the reader copies it out on the other core.
#ifndef LARDER_UCX_TRANSPORT_MESSAGE_READS_HPP_
#define LARDER_UCX_TRANSPORT_MESSAGE_READS_HPP_

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>

#include "runtime/common/status.hpp"
#include "runtime/tier/arena.hpp"
#include "runtime/transport/transport.hpp"
#include "ucx_transport/context.hpp"

namespace larder::ucx {

class Fabric;
class UcxMessenger;

class MessageReads {
 public:
  // Registers the reply handler on the fabric's worker and the request handler on `messenger`
  // (before the first message can arrive).
  static Result<std::unique_ptr<MessageReads>> create(Fabric& fabric, UcxMessenger& messenger);
  MessageReads(const MessageReads&) = delete;
  MessageReads& operator=(const MessageReads&) = delete;
  ~MessageReads();  // replies still arriving are dropped by UCX

  // The memory this rank serves to readers: its arenas, and its segments as they are exposed.
  void serve(Tier tier, std::span<std::byte> memory);
  void serve_segment(std::uint32_t id, std::span<std::byte> memory);
  // Run before each piece of a chunk is served (Transport::set_serve_check): a piece whose
  // chunk fails it is answered with EBADMSG instead of its bytes.
  void set_serve_check(Transport::ServeCheck check);

  // As Transport::get_many: every request is sent, then all replies are waited for.
  void get_many(std::span<const Transport::GetOp> ops, std::span<Status> out);

  // Pieces this rank has answered (tests).
  std::uint64_t pieces_served() const noexcept {
    return pieces_served_.load(std::memory_order_relaxed);
  }
  // Bytes this rank hashed as they arrived, for reads that wanted their hash (tests).
  std::uint64_t bytes_hashed() const noexcept {
    return bytes_hashed_.load(std::memory_order_relaxed);
  }

  struct Pending;  // one piece a reader waits for (message_reads.cpp)
  class BouncePool;

 private:
  MessageReads(Fabric& fabric, UcxMessenger& messenger);
  // Holder side, on the progress thread: answers each piece of a request message.
  void on_request(int from, std::span<const std::byte> body);
  std::span<const std::byte> served_bytes(Tier tier, std::uint32_t segment, std::uint64_t offset,
                                          std::uint64_t length);
  bool serves(std::span<const std::byte> range);
  // Reader side, inside ucp_worker_progress: a reply for one piece.
  static ucs_status_t on_reply(void* arg, const void* header, std::size_t header_length, void* data,
                               std::size_t length, const ucp_am_recv_param_t* param);
  // Removes the piece `id` waits for from the table (null: nobody waits for it any more).
  std::shared_ptr<Pending> take(std::uint64_t id);

  Fabric& fabric_;
  UcxMessenger& messenger_;
  std::array<std::span<std::byte>, kTierCount> tiers_{};  // set before the session starts
  std::mutex mu_;
  std::unordered_map<std::uint32_t, std::span<std::byte>> segments_;     // guarded by mu_
  std::unordered_map<std::uint64_t, std::shared_ptr<Pending>> pending_;  // guarded by mu_
  std::uint64_t next_id_ = 1;                                            // guarded by mu_
  std::shared_mutex check_mu_;   // shared: a piece being served; unique: setting the check
  Transport::ServeCheck check_;  // guarded by check_mu_
  std::atomic<std::uint64_t> pieces_served_{0};
  std::atomic<std::uint64_t> bytes_hashed_{0};
  std::shared_ptr<BouncePool> bounces_;  // shared with pieces that outlive this object
  AmHandler handler_;                    // last: unset first (replies arriving then are dropped)
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_MESSAGE_READS_HPP_
