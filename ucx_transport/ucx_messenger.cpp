#include "ucx_transport/ucx_messenger.hpp"

#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "ucx_transport/fabric.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {
namespace {

// A message in flight: header and body live here until UCX is done with them.
struct Outgoing {
  std::int32_t from = -1;
  std::vector<std::byte> body;
  Peer* peer = nullptr;  // outlives the request: endpoints close after the messenger
};

// The active-message id of every Larder message (the channel travels in the body).
constexpr unsigned kAmId = 1;

}  // namespace

Result<std::unique_ptr<UcxMessenger>> UcxMessenger::create(Fabric& fabric) {
  std::unique_ptr<UcxMessenger> m(new UcxMessenger(fabric));
  m->wake_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!m->wake_fd_.valid()) return from_errno(errno, "eventfd for ucx messages");
  auto handler = AmHandler::set(fabric.worker(), kAmId, &UcxMessenger::receive, m.get());
  if (!handler.ok()) return handler.status();
  m->handler_ = std::move(*handler);
  return m;
}

void UcxMessenger::on(Channel channel, Handler handler) {
  handlers_[static_cast<std::size_t>(channel)] = std::move(handler);
}

ucs_status_t UcxMessenger::receive(void* arg, const void* header, std::size_t header_length,
                                   void* data, std::size_t length,
                                   const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxMessenger*>(arg);
  if (header_length != sizeof(std::int32_t) ||
      (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 || length < sizeof(std::int32_t)) {
    LARDER_LOG_LIMITED(kWarn, "dropped a malformed message ({} bytes)", length);
    return UCS_OK;
  }
  Incoming in;
  std::memcpy(&in.from, header, sizeof in.from);
  std::memcpy(&in.channel, data, sizeof in.channel);
  if (in.channel <= 0 || in.channel >= kChannelCount) return UCS_OK;
  const auto* bytes = static_cast<const std::byte*>(data) + sizeof in.channel;
  in.body.assign(bytes, bytes + (length - sizeof in.channel));
  self->enqueue(std::move(in));
  return UCS_OK;
}

void UcxMessenger::enqueue(Incoming in) {
  bool was_empty = false;
  {
    std::lock_guard lock(queue_mu_);
    was_empty = queue_.empty();
    queue_.push_back(std::move(in));
  }
  if (was_empty) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = sys::write(wake_fd_.get(), &one, sizeof one);
  }
}

bool UcxMessenger::dispatch() {
  std::vector<Incoming> batch;
  {
    std::lock_guard lock(queue_mu_);
    batch.swap(queue_);
  }
  for (const Incoming& in : batch) {
    const Handler& h = handlers_[static_cast<std::size_t>(in.channel)];
    if (!h) continue;
    try {
      h(in.from, std::span<const std::byte>(in.body));
    } catch (...) {
      LARDER_LOG_LIMITED(kError, "a message handler failed (channel {})", in.channel);
    }
  }
  return !batch.empty();
}

bool UcxMessenger::arm() {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = sys::read(wake_fd_.get(), &count, sizeof count);
  std::lock_guard lock(queue_mu_);
  return queue_.empty();
}

Status UcxMessenger::send(int to, Channel channel, std::span<const std::byte> body) {
  if (body.size() > kMaxMessage) {
    return {Errc::kInvalidArgument, EMSGSIZE, "message larger than kMaxMessage"};
  }
  if (to == fabric_.rank()) {
    // To this rank: queued here, run by the progress thread like any message, whatever
    // transport UCX chose for the rank's endpoint to itself.
    Incoming in;
    in.from = to;
    in.channel = static_cast<std::int32_t>(channel);
    in.body.assign(body.begin(), body.end());
    enqueue(std::move(in));
    return {};
  }
  auto peer = fabric_.connected_peer(to);
  if (!peer.ok()) return peer.status();
  auto out = std::make_unique<Outgoing>();
  out->from = fabric_.rank();
  out->peer = *peer;
  const auto tag = static_cast<std::int32_t>(channel);
  out->body.resize(sizeof tag + body.size());
  std::memcpy(out->body.data(), &tag, sizeof tag);
  if (!body.empty()) std::memcpy(out->body.data() + sizeof tag, body.data(), body.size());
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &message_sent<Outgoing>;
  param.user_data = out.get();
  param.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t req = nullptr;
  {
    std::shared_lock lock(fabric_.peers_mutex());
    if ((*peer)->failed()) return {Errc::kTransport, 0, "ucx peer has failed"};
    req = ucp_am_send_nbx((*peer)->endpoint(), kAmId, &out->from, sizeof out->from,
                          out->body.data(), out->body.size(), &param);
  }
  if (UCS_PTR_IS_ERR(req)) {
    (*peer)->mark_failed();
    return from_ucs(UCS_PTR_STATUS(req), "ucp_am_send_nbx");
  }
  if (req != nullptr) (void)out.release();  // message_sent frees it and the request
  sent_.fetch_add(1, std::memory_order_relaxed);
  return {};
}

}  // namespace larder::ucx
