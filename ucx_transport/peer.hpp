// Peer: what this rank knows of another rank's UCX side (worker address, arena addresses,
// packed remote keys) and, once first used, the endpoint to it and the unpacked keys.
// Endpoints are created on first use and cached for the job (connection caching).
#ifndef LARDER_UCX_TRANSPORT_PEER_HPP_
#define LARDER_UCX_TRANSPORT_PEER_HPP_

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <cstdint>
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
  Status connect(ucp_worker_h worker, const std::vector<std::byte>& address);
  bool connected() const noexcept { return ep_ != nullptr; }
  ucp_ep_h endpoint() const noexcept { return ep_; }
  ucp_rkey_h rkey(Tier tier) const noexcept { return rkeys_[static_cast<int>(tier)]; }
  const PeerInfo& info() const noexcept { return info_; }

  // Set by the endpoint error handler (progress thread) or a timed-out get; read before gets.
  void mark_failed() noexcept { failed_.store(true, std::memory_order_release); }
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

  // Releases the keys and force-closes the endpoint, progressing `worker` until it is closed.
  void close(ucp_worker_h worker) noexcept;

 private:
  PeerInfo info_;
  ucp_ep_h ep_ = nullptr;
  std::array<ucp_rkey_h, kTierCount> rkeys_{};
  std::atomic<bool> failed_{false};
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_PEER_HPP_
