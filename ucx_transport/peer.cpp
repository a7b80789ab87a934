#include "ucx_transport/peer.hpp"

#include "runtime/common/log.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {
namespace {

void on_endpoint_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  const bool first = peer->mark_failed();
  if (peer->closing()) {
    LARDER_LOG_DEBUG("ucx endpoint closed while the job ends: {}", ucs_status_string(status));
  } else if (first) {
    LARDER_LOG_WARN("ucx endpoint failed: {}; reads from that rank go to the file system",
                    ucs_status_string(status));
  }
}

}  // namespace

Peer::~Peer() {
  if (ep_ != nullptr) LARDER_LOG_WARN("a ucx endpoint was not closed");
}

Status Peer::connect(ucp_worker_h worker, const std::vector<std::byte>& address,
                     const std::atomic<bool>* closing, bool to_self) {
  closing_ = closing;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  if (!to_self) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &on_endpoint_error;
    params.err_handler.arg = this;
  }
  ucp_ep_h ep = nullptr;
  if (Status s = from_ucs(ucp_ep_create(worker, &params, &ep), "ucp_ep_create"); !s.ok()) return s;
  ep_ = ep;
  for (int t = 0; t < kTierCount; ++t) {
    if (info_.packed_rkey[t].empty()) continue;
    if (Status s = from_ucs(ucp_ep_rkey_unpack(ep_, info_.packed_rkey[t].data(), &rkeys_[t]),
                            "ucp_ep_rkey_unpack");
        !s.ok()) {
      return s;
    }
  }
  return {};
}

Status Peer::add_segment(std::uint32_t id, std::uint64_t base, std::uint64_t size,
                         std::span<const std::byte> packed) {
  if (segments_.contains(id)) return {};
  if (ep_ == nullptr) return {Errc::kTransport, 0, "ucx peer is not connected"};
  Segment seg{base, size, nullptr};
  if (!packed.empty()) {
    if (Status s =
            from_ucs(ucp_ep_rkey_unpack(ep_, packed.data(), &seg.rkey), "ucp_ep_rkey_unpack");
        !s.ok()) {
      return s;
    }
  }
  segments_.emplace(id, seg);
  return {};
}

void Peer::close(ucp_worker_h worker) noexcept {
  for (ucp_rkey_h& k : rkeys_) {
    if (k != nullptr) ucp_rkey_destroy(k);
    k = nullptr;
  }
  for (auto& [id, seg] : segments_) {
    if (seg.rkey != nullptr) ucp_rkey_destroy(seg.rkey);
  }
  segments_.clear();
  if (ep_ == nullptr) return;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // every get is done (the job passed a barrier)
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep_, &param);
  if (UCS_PTR_IS_PTR(request)) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker);
    ucp_request_free(request);
  }
  ep_ = nullptr;
}

}  // namespace larder::ucx
