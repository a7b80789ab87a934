// Registration: one arena registered with ucp_mem_map (unmapped by the destructor), and its
// packed remote key for the other ranks.
#ifndef LARDER_UCX_TRANSPORT_MEMORY_HPP_
#define LARDER_UCX_TRANSPORT_MEMORY_HPP_

#include <ucp/api/ucp.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "runtime/common/status.hpp"

namespace larder::ucx {

class Registration {
 public:
  Registration() = default;
  // Registers [base, base + length). An empty range registers nothing.
  static Result<Registration> map(ucp_context_h context, void* base, std::size_t length);
  Registration(Registration&& o) noexcept
      : context_(std::exchange(o.context_, nullptr)), memh_(std::exchange(o.memh_, nullptr)) {}
  Registration& operator=(Registration&& o) noexcept {
    std::swap(context_, o.context_);
    std::swap(memh_, o.memh_);
    return *this;
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  ~Registration();

  bool empty() const noexcept { return memh_ == nullptr; }
  // The remote key, packed for another rank (empty for an empty registration).
  Result<std::vector<std::byte>> packed_rkey() const;

 private:
  ucp_context_h context_ = nullptr;
  ucp_mem_h memh_ = nullptr;
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_MEMORY_HPP_
