// Peer: what this rank knows of another rank's UCX side (worker address, arena addresses,
// packed remote keys) and, once first used, the endpoint to it and the unpacked keys.
// Endpoints are created on first use and cached for the job (connection caching).
#ifndef LARDER_UCX_TRANSPORT_PEER_HPP_
#define LARDER_UCX_TRANSPORT_PEER_HPP_

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/tier/arena.hpp"

namespace larder::ucx {

struct PeerInfo {
  std::vector<std::byte> address;
  std::array<std::uint64_t, kTierCount> arena_base{};
  std::array<std::uint64_t, kTierCount> arena_size{};
  std::array<std::vector<std::byte>, kTierCount> packed_rkey;
};

class Peer {
 public:
  explicit Peer(PeerInfo info) : info_(std::move(info)) {}
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  ~Peer();

  // Creates the endpoint (to `address`, normally info().address), reporting peer failures to
  // mark_failed(), and unpacks the keys. Not thread-safe: the fabric serialises set-up.
  // `closing` (the fabric's) says the job is ending: a failure then is the peer closing in order,
  // logged at debug level; before, it is a warning, once for this peer.
  // `to_self`: the rank's endpoint to its own worker, made without peer-failure handling (a rank
  // cannot lose itself), so that UCX may choose its in-process `self` transport for it: the
  // transports that handle peer failures are network ones (TCP loopback here), and the rank's own
  // directory shard is its most used target (docs/transports.md).
  Status connect(ucp_worker_h worker, const std::vector<std::byte>& address,
                 const std::atomic<bool>* closing, bool to_self);
  bool connected() const noexcept { return ep_ != nullptr; }
  ucp_ep_h endpoint() const noexcept { return ep_; }
  ucp_rkey_h rkey(Tier tier) const noexcept { return rkeys_[static_cast<int>(tier)]; }
  const PeerInfo& info() const noexcept { return info_; }

  // A segment of this peer (Transport::learn): its address, size and unpacked key. The fabric
  // serialises add_segment() against readers (its peers mutex, unique for adding).
  struct Segment {
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    ucp_rkey_h rkey = nullptr;
  };
  // Unpacks `packed` on the endpoint (connect() first). Adding a known segment again is a no-op.
  Status add_segment(std::uint32_t id, std::uint64_t base, std::uint64_t size,
                     std::span<const std::byte> packed);
  const Segment* segment(std::uint32_t id) const noexcept {
    auto it = segments_.find(id);
    return it == segments_.end() ? nullptr : &it->second;
  }

  // Set by the endpoint error handler (progress thread) or a timed-out get; read before gets.
  // True when this call marked it (the first failure).
  bool mark_failed() noexcept { return !failed_.exchange(true, std::memory_order_acq_rel); }
  bool closing() const noexcept {
    return closing_ != nullptr && closing_->load(std::memory_order_acquire);
  }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  // Releases the keys and force-closes the endpoint, progressing `worker` until it is closed.
  void close(ucp_worker_h worker) noexcept;

 private:
  PeerInfo info_;
  ucp_ep_h ep_ = nullptr;
  std::array<ucp_rkey_h, kTierCount> rkeys_{};
  std::unordered_map<std::uint32_t, Segment> segments_;
  std::atomic<bool> failed_{false};
  const std::atomic<bool>* closing_ = nullptr;
};

// The completion callback (ucp_send_nbx_callback_t) of a message whose user data is a heap
// `Message` with a `Peer* peer` member. A message that could not be delivered means the peer is
// gone (an endpoint to a dead worker fails its sends without always calling the endpoint's error
// handler): the peer is marked failed, so later messages and operations to it fail at once and
// whoever waits for its answer stops waiting. Frees the message and the request.
template <class Message>
void message_sent(void* request, ucs_status_t status, void* user_data) {
  auto* message = static_cast<Message*>(user_data);
  if (status != UCS_OK && status != UCS_ERR_CANCELED && message->peer != nullptr) {
    message->peer->mark_failed();
  }
  delete message;
  ucp_request_free(request);
}

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_PEER_HPP_
