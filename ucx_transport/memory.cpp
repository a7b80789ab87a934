#include "ucx_transport/memory.hpp"

#include <cstring>

#include "runtime/common/log.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {

Result<Registration> Registration::map(ucp_context_h context, void* base, std::size_t length) {
  Registration r;
  if (base == nullptr || length == 0) return r;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base;
  params.length = length;
  if (Status s = from_ucs(ucp_mem_map(context, &params, &r.memh_), "ucp_mem_map"); !s.ok())
    return s;
  r.context_ = context;
  return r;
}

Registration::~Registration() {
  if (memh_ == nullptr) return;
  if (Status s = from_ucs(ucp_mem_unmap(context_, memh_), "ucp_mem_unmap"); !s.ok()) {
    LARDER_LOG_WARN("{}", s.message());
  }
}

Result<std::vector<std::byte>> Registration::packed_rkey() const {
  if (memh_ == nullptr) return std::vector<std::byte>{};
  void* buffer = nullptr;
  std::size_t size = 0;
  if (Status s = from_ucs(ucp_rkey_pack(context_, memh_, &buffer, &size), "ucp_rkey_pack"); !s.ok())
    return s;
  std::vector<std::byte> out(size);
  std::memcpy(out.data(), buffer, size);
  ucp_rkey_buffer_release(buffer);
  return out;
}

}  // namespace larder::ucx
